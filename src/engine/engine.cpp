#include "engine/engine.hpp"

#include <algorithm>
#include <cassert>

namespace arbiter::engine {

Engine::Engine(const EngineConfig& config) : config_(config), pool_(config.num_blocks) {
  assert(config_error(config_).empty());
  stats_.block_size = config_.block_size;
}

std::uint32_t Engine::blocks_for(std::uint32_t tokens) const {
  return (tokens + config_.block_size - 1) / config_.block_size;
}

std::expected<void, SubmitError> Engine::submit(SubmitRequest request, double now) {
  if (request.prompt_tokens == 0 || request.output_tokens == 0) {
    return std::unexpected(SubmitError::kInvalid);
  }
  const std::uint64_t total = std::uint64_t{request.prompt_tokens} + request.output_tokens;
  // The last output token's KV is never computed, hence total - 1.
  if (total > config_.max_model_len ||
      blocks_for(static_cast<std::uint32_t>(total - 1)) > config_.num_blocks) {
    return std::unexpected(SubmitError::kTooLong);
  }
  if (live_.contains(request.id)) return std::unexpected(SubmitError::kDuplicateId);

  std::uint32_t slot;
  if (free_slots_.empty()) {
    slot = static_cast<std::uint32_t>(slots_.size());
    slots_.emplace_back();
  } else {
    slot = free_slots_.back();
    free_slots_.pop_back();
  }
  Request& r = slots_[slot];
  r.id = request.id;
  r.prompt_tokens = request.prompt_tokens;
  r.output_target = request.output_tokens;
  r.output_done = 0;
  r.num_computed = 0;
  r.prefill_end = 0;
  r.scheduled = 0;
  r.started = false;
  r.priority = request.priority;
  r.arrival_order = next_order_++;
  r.adapter = request.adapter;
  r.block_hashes = std::move(request.block_hashes);
  // Only full prompt blocks can be shared.
  const std::size_t full_blocks = request.prompt_tokens / config_.block_size;
  if (r.block_hashes.size() > full_blocks) r.block_hashes.resize(full_blocks);
  if (r.adapter != 0) {
    for (std::uint64_t& h : r.block_hashes) h ^= r.adapter * 0x9E3779B97F4A7C15ULL;
  }
  r.blocks.clear();
  r.attempt_hits = 0;
  r.past_prefill = 0;
  r.past_decode = 0;
  r.timing = RequestTiming{.arrival = now};
  live_.emplace(r.id, slot);
  enqueue(slot, /*front=*/false);
  return {};
}

bool Engine::abort(RequestId id, AbortCause cause) {
  const auto it = live_.find(id);
  if (it == live_.end()) return false;
  const std::uint32_t slot = it->second;
  Request& r = slots_[slot];
  if (r.state == State::kWaiting) {
    waiting_.erase(r.wait_key);
  } else {
    running_.erase(std::find(running_.begin(), running_.end(), slot));
    leave_running(r);
    // The prompt blocks this attempt computed (not those it found cached)
    // stay in the cache: a later request that reuses one makes it not wasted.
    const std::size_t computed =
        std::min<std::size_t>({r.num_computed / config_.block_size, r.block_hashes.size(), r.blocks.size()});
    for (std::size_t b = r.attempt_hits / config_.block_size; b < computed; ++b) {
      pool_.tag_aborted(r.blocks[b], static_cast<std::uint8_t>(cause));
    }
    pool_.release(r.blocks);
    r.blocks.clear();
  }
  ++stats_.requests_aborted_total;
  stats_.wasted_prefill_tokens_total += r.past_prefill + r.attempt_prefill();
  stats_.wasted_decode_tokens_total += r.past_decode + r.attempt_decode();
  release_slot(slot);
  return true;
}

void Engine::set_num_blocks(std::uint32_t num_blocks) {
  reserve_target_ = config_.num_blocks - std::min(num_blocks, config_.num_blocks);
}

EngineStats Engine::stats() const {
  EngineStats s = stats_;
  s.num_requests_running = static_cast<std::uint32_t>(running_.size());
  s.num_requests_waiting = static_cast<std::uint32_t>(waiting_.size());
  s.kv_cache_usage_perc = pool_.usage();
  s.num_blocks = config_.num_blocks - reserve_target_;
  return s;
}

void Engine::lora_adapters(std::vector<std::uint32_t>& running, std::vector<std::uint32_t>& waiting) const {
  running.clear();
  waiting.clear();
  for (const auto& [id, slot] : live_) {
    const Request& r = slots_[slot];
    if (r.adapter == 0) continue;
    auto& list = r.state == State::kRunning ? running : waiting;
    if (std::find(list.begin(), list.end(), r.adapter) == list.end()) list.push_back(r.adapter);
  }
  std::sort(running.begin(), running.end());
  std::sort(waiting.begin(), waiting.end());
}

std::uint64_t Engine::in_flight_work_tokens() const {
  std::uint64_t total = 0;
  for (const auto& [id, slot] : live_) {
    const Request& r = slots_[slot];
    total += r.past_prefill + r.attempt_prefill() + r.past_decode + r.attempt_decode();  // as abort()
  }
  return total;
}

const StepResult& Engine::step(double now) {
  result_.start = now;
  result_.duration = 0;
  result_.scheduled_seqs = 0;
  result_.work = {};
  result_.events.clear();
  scheduled_.clear();

  std::uint32_t budget = config_.max_num_batched_tokens;
  apply_reservation(budget);
  bool preempted = false;
  schedule_running(budget, preempted);
  // As vLLM: no new admissions in a step that had to preempt.
  std::uint32_t lora_loads = 0;
  if (!preempted) admit_waiting(budget, now, lora_loads);

  StepWork& work = result_.work;
  for (const std::uint32_t slot : scheduled_) {
    const Request& r = slots_[slot];
    if (r.state != State::kRunning || r.scheduled == 0) continue;  // preempted later on
    const std::uint32_t prefill = r.scheduled_prefill();
    work.prefill_tokens += prefill;
    if (prefill < r.scheduled) ++work.decode_seqs;
    work.context_tokens += r.num_computed + r.scheduled;
    ++result_.scheduled_seqs;
  }
  if (result_.scheduled_seqs == 0) return result_;
  result_.duration = config_.cost.step_seconds(work) + lora_loads * config_.lora_load_s;
  stats_.lora_loads_total += lora_loads;
  const double end_time = result_.end();

  for (const std::uint32_t slot : scheduled_) {
    Request& r = slots_[slot];
    if (r.state != State::kRunning || r.scheduled == 0) continue;
    const std::uint32_t end = r.num_computed + r.scheduled;
    stats_.prefill_tokens_computed_total += r.scheduled_prefill();
    if (config_.enable_prefix_caching) publish_blocks(r, r.num_computed, end);
    r.num_computed = end;
    r.scheduled = 0;
    if (r.num_computed < r.num_tokens()) continue;  // prefill chunk, no token yet

    ++r.output_done;
    ++stats_.generation_tokens_total;
    const bool first = r.output_done == 1;
    if (first) {
      r.timing.first_token = end_time;
      stats_.prompt_tokens_total += r.prompt_tokens;
    }
    const bool last = r.output_done == r.output_target;
    if (last) r.timing.finished = end_time;
    result_.events.push_back(RequestEvent{.id = r.id,
                                          .token = true,
                                          .first_token = first,
                                          .finished = last,
                                          .tokens_generated = r.output_done,
                                          .timing = r.timing});
    if (last) finish(slot);
  }
  std::erase_if(running_,
                [this](std::uint32_t slot) { return slots_[slot].state != State::kRunning; });

  stats_.busy_seconds_total += result_.duration;
  ++stats_.steps_total;
  return result_;
}

bool Engine::grow(Request& r, std::uint32_t tokens) {
  const auto have = static_cast<std::uint32_t>(r.blocks.size());
  if (tokens <= have * config_.block_size) return true;  // the common decode step
  return pool_.allocate(blocks_for(tokens) - have, r.blocks);
}

void Engine::enqueue(std::uint32_t slot, bool front) {
  Request& r = slots_[slot];
  const bool by_priority = config_.policy == SchedulingPolicy::kPriority;
  const std::int64_t order = (front && !by_priority) ? --front_order_ : r.arrival_order;
  r.wait_key = WaitKey{.priority = by_priority ? r.priority : 0, .order = order, .slot = slot};
  waiting_.insert(r.wait_key);
  r.state = State::kWaiting;
}

std::size_t Engine::victim_index() const {
  if (config_.policy == SchedulingPolicy::kFcfs) return running_.size() - 1;
  // Lowest priority, then latest arrival (vLLM: max by (priority, arrival_time)).
  std::size_t victim = 0;
  for (std::size_t i = 1; i < running_.size(); ++i) {
    const Request& a = slots_[running_[i]];
    const Request& b = slots_[running_[victim]];
    if (std::pair(a.priority, a.arrival_order) > std::pair(b.priority, b.arrival_order)) {
      victim = i;
    }
  }
  return victim;
}

void Engine::preempt(std::size_t running_index, std::uint32_t& budget) {
  const std::uint32_t slot = running_[running_index];
  Request& r = slots_[slot];
  running_.erase(running_.begin() + static_cast<std::ptrdiff_t>(running_index));
  leave_running(r);
  budget += r.scheduled;  // it may already have been scheduled this step
  r.scheduled = 0;
  r.past_prefill += r.attempt_prefill();
  r.past_decode += r.attempt_decode();
  pool_.release(r.blocks);
  r.blocks.clear();
  r.num_computed = 0;
  r.attempt_hits = 0;
  enqueue(slot, /*front=*/true);
  ++stats_.num_preemptions_total;
  result_.events.push_back(RequestEvent{
      .id = r.id, .preempted = true, .tokens_generated = r.output_done, .timing = r.timing});
}

void Engine::apply_reservation(std::uint32_t& budget) {
  while (pool_.reserve(reserve_target_) < reserve_target_ && !running_.empty()) {
    preempt(victim_index(), budget);
  }
}

void Engine::schedule_running(std::uint32_t& budget, bool& preempted) {
  std::size_t i = 0;
  while (i < running_.size() && budget > 0) {
    const std::uint32_t slot = running_[i];
    Request& r = slots_[slot];
    const std::uint32_t n = std::min(r.num_tokens() - r.num_computed, budget);
    bool kept = true;
    while (!grow(r, r.num_computed + n)) {
      const std::size_t victim = victim_index();
      preempted = true;
      if (victim == i) {
        preempt(victim, budget);
        kept = false;
        break;
      }
      if (victim < i) --i;
      preempt(victim, budget);
    }
    if (!kept) continue;  // running_[i] is now the next request
    r.scheduled = n;
    budget -= n;
    scheduled_.push_back(slot);
    ++i;
  }
}

bool Engine::take_lora(std::uint32_t adapter, std::uint32_t& loads) {
  LoraSlot* free = nullptr;
  for (LoraSlot& s : loras_) {
    if (s.adapter == adapter) {
      s.last_used = ++lora_clock_;
      return true;
    }
    if (s.running == 0 && (free == nullptr || s.last_used < free->last_used)) free = &s;
  }
  if (loras_.size() < config_.max_loras) {
    free = &loras_.emplace_back();
  } else if (free == nullptr) {
    return false;
  }
  *free = LoraSlot{.adapter = adapter, .running = 0, .last_used = ++lora_clock_};
  ++loads;
  return true;
}

void Engine::leave_running(const Request& r) {
  if (r.adapter == 0) return;
  for (LoraSlot& s : loras_) {
    if (s.adapter == r.adapter) {
      --s.running;
      return;
    }
  }
}

void Engine::admit_waiting(std::uint32_t& budget, double now, std::uint32_t& lora_loads) {
  const std::uint32_t bs = config_.block_size;
  auto next = waiting_.begin();
  while (next != waiting_.end() && running_.size() < config_.max_num_seqs && budget > 0) {
    const auto at = next++;
    const std::uint32_t slot = at->slot;
    Request& r = slots_[slot];
    // As vLLM: a request whose adapter finds no GPU slot is passed over
    // for this step; the requests behind it may still start.
    if (r.adapter != 0 && !take_lora(r.adapter, lora_loads)) continue;
    const std::uint32_t tokens = r.num_tokens();
    if (config_.enable_prefix_caching) {
      // At least one token must be computed to sample from, as in vLLM.
      const std::size_t max_hits = std::min<std::size_t>(r.block_hashes.size(), (tokens - 1) / bs);
      // The index is far larger than cache: the lookups' slots are loaded
      // kLookahead blocks ahead, so their memory misses overlap.
      constexpr std::size_t kLookahead = 16;
      for (std::size_t b = 0; b < std::min(max_hits, kLookahead); ++b) pool_.prefetch_cached(r.block_hashes[b]);
      for (std::size_t b = 0; b < max_hits; ++b) {
        if (b + kLookahead < max_hits) pool_.prefetch_cached(r.block_hashes[b + kLookahead]);
        const auto block = pool_.cached_block(r.block_hashes[b]);
        if (!block) break;
        pool_.acquire(*block);
        r.blocks.push_back(*block);
        switch (static_cast<AbortCause>(pool_.claim(*block))) {
          case AbortCause::kCancel: stats_.reused_after_cancel_tokens_total += bs; break;
          case AbortCause::kPreempt: stats_.reused_after_preempt_tokens_total += bs; break;
        }
      }
    }
    const std::uint32_t hits = static_cast<std::uint32_t>(r.blocks.size()) * bs;
    const std::uint32_t n = std::min(tokens - hits, budget);
    if (!grow(r, hits + n)) {
      pool_.release(r.blocks);
      r.blocks.clear();
      break;  // head-of-line: later requests wait too, as in vLLM
    }
    r.num_computed = hits;
    r.attempt_hits = hits;
    if (config_.enable_prefix_caching) {
      stats_.prefix_cache_queries_total += tokens;
      stats_.prefix_cache_hits_total += hits;
    }
    waiting_.erase(at);
    r.state = State::kRunning;
    running_.push_back(slot);
    if (r.adapter != 0) {
      for (LoraSlot& s : loras_) s.running += s.adapter == r.adapter ? 1 : 0;
    }
    r.prefill_end = tokens;
    if (!r.started) {
      r.started = true;
      r.timing.first_scheduled = now;
    }
    r.scheduled = n;
    budget -= n;
    scheduled_.push_back(slot);
  }
}

void Engine::publish_blocks(Request& r, std::uint32_t from, std::uint32_t to) {
  if (from >= r.block_hashes.size() * config_.block_size) return;  // past the hashed prompt
  const std::size_t last = std::min<std::size_t>(to / config_.block_size, r.block_hashes.size());
  for (std::size_t b = from / config_.block_size; b < last; ++b) {
    pool_.publish(r.blocks[b], r.block_hashes[b]);
  }
}

void Engine::finish(std::uint32_t slot) {
  Request& r = slots_[slot];
  leave_running(r);
  pool_.release(r.blocks);
  r.blocks.clear();
  ++stats_.requests_finished_total;
  release_slot(slot);
}

void Engine::release_slot(std::uint32_t slot) {
  Request& r = slots_[slot];
  live_.erase(r.id);
  r.state = State::kFree;
  free_slots_.push_back(slot);
}

}  // namespace arbiter::engine
