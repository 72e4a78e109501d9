#include "core/cache/semantic_index.hpp"

#include <hnswlib/hnswlib.h>

#include <cmath>

namespace arbiter::cache {

namespace {

constexpr std::size_t kLinks = 16;            // hnswlib's M: links a node keeps per level
constexpr std::size_t kConstructionEf = 100;  // candidates weighed when a node is linked
constexpr std::size_t kSearchEf = 64;         // candidates weighed by a search
constexpr std::size_t kNearest = 16;          // of which the best of the scope is taken
constexpr std::size_t kMinEntries = 16;

}  // namespace

struct SemanticIndex::Graph {
  Graph(std::size_t dimensions, std::size_t entries)
      : space(dimensions), graph(&space, entries, kLinks, kConstructionEf), dimensions(dimensions) {
    graph.setEf(kSearchEf);
  }
  hnswlib::InnerProductSpace space;
  hnswlib::HierarchicalNSW<float> graph;
  std::size_t dimensions;
};

bool normalize(std::span<float> v) {
  double norm = 0;
  for (const float x : v) norm += static_cast<double>(x) * x;
  if (!(norm > 0) || !std::isfinite(norm)) return false;
  const auto scale = static_cast<float>(1 / std::sqrt(norm));
  for (float& x : v) x *= scale;
  return true;
}

std::size_t SemanticIndex::entry_bytes(std::size_t dimensions) {
  // hnswlib's level-0 record (2 M links, the vector, the label), its lock
  // and label map entry and an upper level's share, and what the slot names.
  return dimensions * sizeof(float) + 2 * kLinks * sizeof(uint32_t) + 8 + 40 + 64 + 64 + sizeof(Named);
}

SemanticIndex::SemanticIndex(std::size_t max_bytes) : max_bytes_(max_bytes) {}

SemanticIndex::~SemanticIndex() = default;

void SemanticIndex::start(std::size_t dimensions) {
  const std::size_t entries = std::max(kMinEntries, max_bytes_ / entry_bytes(dimensions));
  graph_ = std::make_unique<Graph>(dimensions, entries);
  named_.assign(entries, Named{});
  next_ = 0;
  used_ = 0;
}

std::optional<SemanticIndex::Candidate> SemanticIndex::find(uint64_t near_scope, std::span<const float> embedding,
                                                            double threshold) const {
  std::vector<float> unit(embedding.begin(), embedding.end());
  if (unit.empty() || !normalize(unit)) return std::nullopt;
  std::lock_guard lock(mutex_);
  if (!graph_ || used_ == 0 || unit.size() != graph_->dimensions) return std::nullopt;
  auto nearest = graph_->graph.searchKnn(unit.data(), std::min(kNearest, used_));
  std::optional<Candidate> best;
  while (!nearest.empty()) {  // farthest first
    const auto [distance, label] = nearest.top();
    nearest.pop();
    const double similarity = 1.0 - static_cast<double>(distance);
    const Named& named = named_[label];
    if (named.scope == near_scope && similarity >= threshold && (!best || similarity >= best->similarity)) {
      best = Candidate{named.key, std::min(similarity, 1.0)};
    }
  }
  return best;
}

void SemanticIndex::add(uint64_t near_scope, const CacheKey& key, std::span<const float> embedding) {
  std::vector<float> unit(embedding.begin(), embedding.end());
  if (unit.empty() || !normalize(unit)) return;
  std::lock_guard lock(mutex_);
  if (!graph_ || graph_->dimensions != unit.size()) start(unit.size());
  // The slot's label is kept: adding it again moves the node (hnswlib
  // relinks it), so the oldest prompt's place is taken, not a new one.
  const std::size_t slot = next_;
  graph_->graph.addPoint(unit.data(), slot);
  named_[slot] = Named{near_scope, key};
  next_ = (next_ + 1) % named_.size();
  used_ = std::min(used_ + 1, named_.size());
}

void SemanticIndex::clear() {
  std::lock_guard lock(mutex_);
  graph_.reset();
  named_.clear();
  next_ = 0;
  used_ = 0;
}

std::size_t SemanticIndex::entries() const {
  std::lock_guard lock(mutex_);
  return used_;
}

std::size_t SemanticIndex::capacity() const {
  std::lock_guard lock(mutex_);
  return named_.size();
}

std::size_t SemanticIndex::bytes() const {
  std::lock_guard lock(mutex_);
  return graph_ ? used_ * entry_bytes(graph_->dimensions) : 0;
}

}  // namespace arbiter::cache
