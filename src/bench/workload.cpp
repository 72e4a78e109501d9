#include "bench/workload.hpp"

#include <algorithm>
#include <cmath>

#include "core/mix.hpp"

namespace arbiter::bench {

uint32_t draw_length(const LengthDist& dist, std::mt19937_64& rng, uint32_t floor) {
  double v = dist.value;
  switch (dist.kind) {
    case LengthDist::Kind::kFixed:
      break;
    case LengthDist::Kind::kUniform:
      v = std::uniform_int_distribution<uint32_t>(dist.min, dist.max)(rng);
      break;
    case LengthDist::Kind::kLognormal: {
      // mu chosen so that the mean of the distribution is dist.value.
      const double mu = std::log(std::max(dist.value, 1.0)) - dist.sigma * dist.sigma / 2;
      v = std::lognormal_distribution<double>(mu, dist.sigma)(rng);
      v = std::clamp(v, static_cast<double>(dist.min), static_cast<double>(dist.max));
      break;
    }
  }
  return std::max(floor, static_cast<uint32_t>(std::lround(v)));
}

namespace {

// Cumulative Zipf weights of the scenario's adapters (empty: none).
std::vector<double> adapter_cdf(const LoraSpec& lora) {
  std::vector<double> cdf;
  double sum = 0;
  for (uint32_t a = 1; a <= lora.adapters; ++a) cdf.push_back(sum += std::pow(a, -lora.skew));
  for (double& c : cdf) c /= sum;
  return cdf;
}

double unit(uint64_t h) { return static_cast<double>(h >> 11) * 0x1.0p-53; }

// The adapter of a request whose client is `key` (the same key, the same
// adapter): drawn from the key's hash, so it perturbs no other draw.
uint16_t draw_adapter(const std::vector<double>& cdf, double share, uint64_t key) {
  if (cdf.empty() || unit(splitmix64(key ^ 0x10a7'ada9'7e25ULL)) >= share) return 0;
  const double u = unit(splitmix64(key ^ 0x5e1e'c7ad'a97eULL));
  const auto it = std::lower_bound(cdf.begin(), cdf.end(), u);
  return static_cast<uint16_t>(std::min<std::ptrdiff_t>(it - cdf.begin(), std::ssize(cdf) - 1) + 1);
}

}  // namespace

// Emits the specs of one trigger (a request, a keystroke burst, a chat
// session, the initial backlog) into the pending queue; triggers come in
// time order, and every spec of a trigger arrives at or after it.
class Workload::Source {
 public:
  Source(const Scenario& s, uint16_t klass, uint64_t seed)
      : scenario_(s),
        klass_(klass),
        spec_(s.classes[klass]),
        t_(spec_.traffic),
        rng_(seed),
        along_rng_(splitmix64(seed + 2)),
        arrivals_(t_, s.duration_s, splitmix64(seed + 1)),
        tenants_(spec_.tenant_mix.begin(), spec_.tenant_mix.end()) {
    next_ = t_.kind == TrafficKind::kBacklog && t_.jobs > 0 ? 0 : arrivals_.next();
  }

  double next_trigger() const { return next_ <= scenario_.duration_s ? next_ : kNever; }

  template <class Emit>
  void expand(Emit&& emit) {
    const double t = next_;
    if (t_.kind == TrafficKind::kBacklog && !backlog_done_) {
      backlog_done_ = true;
      for (uint32_t j = 0; j < t_.jobs; ++j) emit(single(0));
      next_ = arrivals_.next();
      return;
    }
    next_ = arrivals_.next();
    switch (t_.kind) {
      case TrafficKind::kRequests:
      case TrafficKind::kBacklog:
        emit(single(t));
        break;
      case TrafficKind::kTyping:
        burst(t, emit);
        break;
      case TrafficKind::kChat:
        session(t, emit);
        break;
    }
  }

 private:
  RequestSpec base(double arrival, uint16_t tenant) {
    RequestSpec r;
    r.arrival = arrival;
    r.klass = klass_;
    r.tenant = tenant;
    r.max_tokens = t_.max_tokens;
    r.output_tokens = std::min(draw_length(t_.output, rng_), t_.max_tokens);
    if (t_.deadline_s) r.deadline = arrival + *t_.deadline_s;
    if (t_.patience.share > 0 && std::uniform_real_distribution<>(0, 1)(rng_) < t_.patience.share) {
      r.abort_at = arrival + t_.patience.after_s;
    }
    return r;
  }

  uint16_t tenant() { return static_cast<uint16_t>(tenants_(rng_)); }

  // A shared system prompt for `prefix_share` of the requests.
  SharedSegment system_prompt() {
    if (t_.prefix_count == 0 || std::uniform_real_distribution<>(0, 1)(rng_) >= t_.prefix_share) {
      return {};
    }
    const uint64_t which = std::uniform_int_distribution<uint32_t>(0, t_.prefix_count - 1)(rng_);
    return {.key = splitmix64((uint64_t{klass_} << 40) ^ (which + 1)), .tokens = t_.prefix_tokens};
  }

  RequestSpec single(double t) {
    RequestSpec r = base(t, tenant());
    r.prefix = system_prompt();
    r.unique_tokens = draw_length(t_.prompt, rng_);
    return r;
  }

  // One developer's keystroke burst: each request replaces the previous one.
  template <class Emit>
  void burst(double t, Emit& emit) {
    const uint32_t dev = std::uniform_int_distribution<uint32_t>(0, t_.developers - 1)(rng_);
    // A developer belongs to one tenant and edits one file (fixed per developer).
    std::mt19937_64 dev_rng(splitmix64(scenario_.seed ^ (uint64_t{klass_} << 32) ^ dev));
    const auto dev_tenant = static_cast<uint16_t>(tenants_(dev_rng));
    const uint32_t file_tokens = draw_length(t_.file_tokens, dev_rng, 0);
    // Their pace, drawn after the file so older scenarios keep their files.
    const double pace = t_.rhythm_spread > 0 ? std::lognormal_distribution<double>(0, t_.rhythm_spread)(dev_rng) : 1;
    const uint64_t key = splitmix64((uint64_t{klass_} << 48) ^ (uint64_t{dev} + 1));
    const uint32_t n = draw_length(t_.keystrokes, rng_);
    const double debounce_s = t_.client_debounce_ms / 1000.0;
    RequestSpec previous;
    for (uint32_t i = 0; i < n; ++i) {
      // Drawn in the same order whether or not it is sent: a scenario
      // without client debounce or rhythm spread keeps its requests.
      RequestSpec r = base(t + debounce_s, dev_tenant);
      r.prefix = {.key = key, .tokens = file_tokens};
      r.unique_tokens = draw_length(t_.prompt, rng_);
      r.supersede_key = key;
      r.text = splitmix64(key ^ (++texts_ << 8));
      if (t_.type_along > 0) r.own_key = splitmix64(r.text) | 1;
      // Typing along (its own random stream, so the share changes nothing
      // else): the previous prompt plus the first token of its suggestion,
      // and the rest of that suggestion is what the model generates now.
      if (i > 0 && t_.type_along > 0 && previous.output_tokens >= 2 &&
          std::uniform_real_distribution<>(0, 1)(along_rng_) < t_.type_along) {
        r.unique_tokens = previous.unique_tokens + 1;
        r.output_tokens = previous.output_tokens - 1;
        r.extends = previous.text;
        r.typed_tokens = 1;
        r.own_key = previous.own_key;
      }
      previous = r;
      const double gap = pace * draw_length(t_.keystroke_gap_ms, rng_) / 1000.0;
      // A plugin that debounces sends nothing for a keystroke another one
      // follows within its debounce; the last of a burst goes out after it.
      if (debounce_s <= 0 || i + 1 == n || gap > debounce_s) emit(r);
      t += gap;
    }
  }

  // A chat session: each turn's prompt is the whole conversation so far.
  template <class Emit>
  void session(double t, Emit& emit) {
    const uint16_t who = tenant();
    const SharedSegment system = system_prompt();
    const uint64_t key = splitmix64((uint64_t{klass_} << 44) ^ ++sessions_);
    const uint32_t turns = draw_length(t_.turns, rng_);
    const uint32_t room = t_.max_context > system.tokens ? t_.max_context - system.tokens : 1;
    uint32_t history = 0;
    for (uint32_t i = 0; i < turns && t <= scenario_.duration_s; ++i) {
      RequestSpec r = base(t, who);
      r.prefix = system;
      history += draw_length(t_.prompt, rng_);
      r.history = {.key = key, .tokens = std::min(history, room)};
      emit(r);
      history += r.output_tokens;
      t += draw_length(t_.think_s, rng_, 0) + std::uniform_real_distribution<>(0, 1)(rng_);
    }
  }

  const Scenario& scenario_;
  uint16_t klass_;
  const ClassSpec& spec_;
  const TrafficSpec& t_;
  std::mt19937_64 rng_;
  std::mt19937_64 along_rng_;  // typing along: drawn apart from rng_
  uint64_t texts_ = 0;         // prompt texts named so far (RequestSpec::text)
  ArrivalProcess arrivals_;
  std::discrete_distribution<uint32_t> tenants_;
  double next_;
  bool backlog_done_ = false;
  uint64_t sessions_ = 0;
};

namespace {

// Shortens the prompt (own tokens first, then history, then prefix) so that
// prompt + max_tokens fits the engine's context, as a client would.
void fit_context(RequestSpec& r, uint32_t max_model_len) {
  r.max_tokens = std::min(r.max_tokens, max_model_len / 2);
  r.output_tokens = std::min(r.output_tokens, r.max_tokens);
  uint32_t excess = r.prompt_tokens() + r.max_tokens > max_model_len
                        ? r.prompt_tokens() + r.max_tokens - max_model_len
                        : 0;
  for (uint32_t* part : {&r.unique_tokens, &r.history.tokens, &r.prefix.tokens}) {
    const uint32_t cut = std::min(excess, *part);
    *part -= cut;
    excess -= cut;
  }
  if (r.prompt_tokens() == 0) r.unique_tokens = 1;
}

}  // namespace

Workload::Workload(const Scenario& scenario, uint64_t seed)
    : scenario_(&scenario), adapter_cdf_(adapter_cdf(scenario.lora)) {
  for (std::size_t c = 0; c < scenario.classes.size(); ++c) {
    sources_.push_back(
        std::make_unique<Source>(scenario, static_cast<uint16_t>(c), splitmix64(seed * 1000003 + c)));
  }
}

Workload::~Workload() = default;Workload::Workload(Workload&&) noexcept = default;

std::optional<RequestSpec> Workload::next() {
  if (scenario_->max_requests > 0 && next_id_ >= scenario_->max_requests) return std::nullopt;
  for (;;) {
    Source* first = nullptr;
    for (auto& s : sources_) {
      if (s->next_trigger() != kNever && (!first || s->next_trigger() < first->next_trigger())) {
        first = s.get();
      }
    }
    const double due = first ? first->next_trigger() : kNever;
    if (!pending_.empty() && pending_.top().spec.arrival <= due) break;
    if (!first) return std::nullopt;
    first->expand([&](RequestSpec r) {
      if (r.arrival > scenario_->duration_s) return;
      fit_context(r, scenario_->engine.config.max_model_len);
      const uint64_t client = r.supersede_key != 0 ? r.supersede_key
                              : r.history.key != 0 ? r.history.key
                                                   : splitmix64(scenario_->seed ^ (next_seq_ << 8));
      r.adapter = draw_adapter(adapter_cdf_, scenario_->lora.share, client);
      pending_.push({r, next_seq_++});
    });
  }
  RequestSpec out = pending_.top().spec;
  pending_.pop();
  out.id = next_id_++;
  return out;
}

}  // namespace arbiter::bench
