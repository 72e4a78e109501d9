#include "core/cache/near_index.hpp"

#include <algorithm>

namespace arbiter::cache {

std::optional<NearIndex::Candidate> NearIndex::find(uint64_t near_scope, const NearText& text,
                                                    double threshold) const {
  std::optional<Candidate> best;
  std::lock_guard lock(mutex_);
  for (std::size_t i = 0; i < text.sketch_size; ++i) {
    const auto it = buckets_.find(bucket(near_scope, text.sketch[i]));
    if (it == buckets_.end()) continue;
    for (const EntryPtr& e : it->second) {
      if (e->scope != near_scope) continue;
      const double s = near_similarity(e->text, text);
      if (s >= threshold && (!best || s > best->similarity)) best = Candidate{e->key, s};
    }
  }
  return best;
}

void NearIndex::add(uint64_t near_scope, const CacheKey& key, NearText text) {
  auto entry = std::make_shared<Entry>(Entry{near_scope, key, std::move(text)});
  const std::size_t size = entry->bytes();
  if (size > max_bytes_) return;
  std::lock_guard lock(mutex_);
  for (std::size_t i = 0; i < entry->text.sketch_size; ++i) {
    std::vector<EntryPtr>& b = buckets_[bucket(near_scope, entry->text.sketch[i])];
    if (std::find(b.begin(), b.end(), entry) != b.end()) continue;  // a sketch hash twice
    if (b.size() == kBucket) b.erase(b.begin());
    b.push_back(entry);
  }
  order_.push_back(std::move(entry));
  bytes_ += size;
  while (bytes_ > max_bytes_) drop_oldest();
}

void NearIndex::drop_oldest() {
  const EntryPtr e = std::move(order_.front());
  order_.pop_front();
  bytes_ -= e->bytes();
  for (std::size_t i = 0; i < e->text.sketch_size; ++i) {
    const auto it = buckets_.find(bucket(e->scope, e->text.sketch[i]));
    if (it == buckets_.end()) continue;
    std::erase(it->second, e);
    if (it->second.empty()) buckets_.erase(it);
  }
}

void NearIndex::clear() {
  std::lock_guard lock(mutex_);
  buckets_.clear();
  order_.clear();
  bytes_ = 0;
}

std::size_t NearIndex::bytes() const {
  std::lock_guard lock(mutex_);
  return bytes_;
}

std::size_t NearIndex::entries() const {
  std::lock_guard lock(mutex_);
  return order_.size();
}

}  // namespace arbiter::cache
