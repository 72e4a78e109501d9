// Results of one policy's run, shared by virtual and live mode: the runner
// hands in one RequestRecord per request and every inter-token gap; the
// collector keeps per class and per tenant samples and turns them into a
// PolicySummary (what results.json and the reports show).
#pragma once

#include <array>
#include <limits>
#include <cstdint>
#include <string>
#include <string_view>
#include <vector>

#include "bench/request_spec.hpp"
#include "bench/scenario.hpp"
#include "bench/stats.hpp"

namespace arbiter::bench {

// How a request ended; exactly one per generated request.
enum class Outcome : uint8_t {
  kCompleted,   // every token delivered (on time or not)
  kRejected,    // refused at admission: 429, queue full
  kDropped,     // given up by the system: 503 queue deadline, or refused by the engine
  kSuperseded,  // replaced by a newer request with its supersede key
  kCancelled,   // the client gave up (patience)
  kUnfinished,  // still queued or running when the run was cut (drain_s)
};
inline constexpr std::size_t kOutcomes = 6;
std::string_view outcome_name(Outcome outcome);

// What staged degradation (docs/overload.md) did to a request.
enum class Degraded : uint8_t {
  kNone,
  kCapped,   // served with max_tokens lowered below what it would have generated: a cut answer
  kVariant,  // served by the model's degraded variant (perhaps capped too)
  kShed,     // refused by graded shedding (its outcome is kRejected)
};

struct RequestRecord {
  uint16_t klass = 0;
  uint16_t tenant = 0;
  Outcome outcome = Outcome::kCompleted;
  double arrival = 0;          // seconds
  double first_token = -1;     // seconds; -1: none delivered
  double finished = -1;        // seconds, completed only
  uint32_t output_tokens = 0;  // tokens delivered to the client
  double deadline = kNever;    // absolute completion deadline
  Degraded degraded = Degraded::kNone;
};

// Engine-side totals of a run, filled by the runner.
struct EngineTotals {
  double duration_s = 0;  // from 0 to the last event (utilisation's denominator)
  double busy_s = 0;      // sum of step times over all engines
  uint32_t engines = 0;
  double token_rate = 0;               // tokens one engine computes per second at full steps
  uint64_t work_tokens = 0;            // prefill computed + tokens decoded, all engines
  uint64_t wasted_cancel_tokens = 0;   // computed for requests later superseded or cancelled
  uint64_t wasted_cancel_prefill = 0;  // of those, prefill tokens
  uint64_t wasted_preempt_tokens = 0;  // prefill lost to gateway preemption (recomputed on resume)
  // Of the two above: prompt blocks a later request reused from an engine's
  // prefix cache, so computed for someone after all (issue 12: honest waste).
  uint64_t reused_cancel_tokens = 0;
  uint64_t reused_preempt_tokens = 0;
  uint64_t engine_preemptions = 0;     // the engines' own KV preemptions
  uint64_t gateway_preemptions = 0;    // scheduler preemptions acted on
  uint64_t dispatches = 0;             // scheduler dispatches acted on (resumed runs included)
  uint64_t borrowed_dispatches = 0;    // of them, onto another pool's engine (borrowing)
  uint64_t typed_through = 0;          // running generations a newer keystroke inherited
  // Dispatches whose prompt shared a prefix block with an earlier dispatch,
  // and of them those sent to the engine the deepest such block went to
  // (prefix affinity, across gateway replicas).
  uint64_t prefix_seen = 0;
  uint64_t prefix_followed = 0;
  // LoRA: runs of adapter requests submitted to engines, and adapters the
  // engines loaded into a GPU slot (a run that found its adapter loaded
  // loaded nothing: the hit rate is 1 - loads / runs).
  uint64_t adapter_runs = 0;
  uint64_t lora_loads = 0;
  // Load balance: the busiest engine's mean running requests (sampled over
  // the run) over the engines' mean; 1 is even.
  double load_spread = 1;
};

// One point of the time series (every Scenario duration / kSeriesSamples).
inline constexpr std::size_t kSeriesSamples = 200;
struct Sample {
  double t = 0;
  double queued = 0;       // waiting in the gateway (direct: in the engines' queues; live:
                           // sent, no token yet)
  double running = 0;      // sequences in flight on the engines (live: streaming)
  double utilisation = 0;  // engine busy time / wall time over the interval, 0..1 (live: NaN)
  // Staged degradation: the highest pool load coefficient and stage (0-3) over
  // the replicas at the sample; NaN for the other policies.
  double load = std::numeric_limits<double>::quiet_NaN();
  double stage = std::numeric_limits<double>::quiet_NaN();
};

struct GroupSummary {
  std::string name;
  uint64_t generated = 0;
  std::array<uint64_t, kOutcomes> outcomes{};
  Percentiles ttft_ms, itl_ms, tpot_ms, e2e_ms;  // completed requests (itl: every gap)
  uint64_t with_deadline = 0;                    // requests that had a deadline
  uint64_t met_deadline = 0;                     // of those, completed by it
  uint64_t good = 0;               // completed whole, every SLO of its class and its deadline met
  // Staged degradation, counted apart so that what it buys shows as such:
  // answers cut by its cap and answers of the degraded variant (never
  // `good`: not the model's whole answer), of them those that would
  // otherwise be good, and requests it shed (among the rejected).
  uint64_t capped = 0;
  uint64_t variant = 0;
  uint64_t good_degraded = 0;
  uint64_t shed = 0;
  // good / the scenario's arrival window (a phase: its length). The same
  // denominator for every policy: dividing by each run's own length made a
  // policy that dropped work (and so finished sooner) look better.
  double goodput_rps = 0;
  double good_share = 0;           // good / (generated - superseded)
  std::vector<float> ttft_cdf_ms;  // TTFT at quantiles 0, 0.005, ..., 1 (201 points)
  // P99 TTFT with every failed request (429, 503, time-out, unfinished)
  // counted as slower than every served one (DECISIONS.md D3): +inf when
  // more than 1% of the answered requests failed, NaN when none was answered.
  double ttft_p99_failed_ms = 0;
};

// DECISIONS.md D2: a tenant whose requests in a scheduler class are over
// kFloodFactor times its weight's share among the class's busy tenants
// (those with requests there) is flooding it.
inline constexpr double kFloodFactor = 3;

// A flooding tenant in one scheduler class, judged on its own (D2).
struct FlooderSummary {
  std::string klass;  // the scheduler class
  std::string tenant;
  double weight_share = 0;       // its weight over the busy tenants' weights
  double demand_share = 0;       // its requests over the class's
  uint64_t answered = 0;         // its requests, superseded ones excluded
  uint64_t completed = 0;        // of them, served to the end
  uint64_t others_answered = 0;  // the class's other tenants' answered requests
  uint64_t class_completed = 0;  // every tenant's completed requests in the class
};

// One phase of the run (Scenario::phases): the requests that arrived in it.
// goodput_rps counts per second of the phase.
struct PhaseSummary {
  std::string name;
  double from_s = 0, to_s = 0;
  GroupSummary all;
  std::vector<GroupSummary> classes;  // scenario order
};

struct PolicySummary {
  std::string policy;
  std::vector<GroupSummary> classes;  // scenario order
  std::vector<GroupSummary> tenants;  // scenario order
  std::vector<PhaseSummary> phases;   // scenario order
  GroupSummary all;
  // The yardstick's view (D2): class rows and the whole run without the
  // flooding tenants' requests (outcomes, TTFT and goodput only), and each
  // flooder on its own. Without a flooder, copies of classes and all.
  std::vector<GroupSummary> fair_classes;  // scenario order
  GroupSummary fair_all;
  std::vector<FlooderSummary> flooders;
  EngineTotals engine;
  // false in live mode: engine-side figures (utilisation, waste, the engine
  // totals) are not observable over HTTP; they are NaN and reported unknown.
  bool engine_known = true;
  double utilisation = 0;  // busy / (engines * duration)
  // Honest utilisation: work tokens / (engines * duration * token_rate). A
  // step of a few sequences counts as busy above; here it counts for the
  // tokens it computed, so the headroom shows.
  double token_load = 0;
  double waste_share = 0;  // (wasted_cancel_tokens - reused_cancel_tokens) / work_tokens
  double jain = 1;         // over tenants with traffic, of good_share
  double jain_goodput = 1; // over tenants with traffic, of goodput / tenant weight
  double wall_s = 0;       // CPU wall time of the run
  // Staged degradation: stage changes over every replica and pool, and the
  // seconds spent in each stage (summed over them).
  uint64_t degrade_transitions = 0;
  std::array<double, 4> stage_seconds{};
  std::vector<Sample> series;
};

class Collector {
 public:
  explicit Collector(const Scenario& scenario);
  void record(const RequestRecord& r);  // once per request
  void token_gap(uint16_t klass, uint16_t tenant, double seconds) {
    classes_[klass].itl.add(seconds);
    tenants_[tenant].itl.add(seconds);
  }
  uint64_t recorded() const { return recorded_; }
  // Consumes the samples.
  PolicySummary summarize(std::string policy, const EngineTotals& engine);

 private:
  struct Group {
    uint64_t generated = 0;
    std::array<uint64_t, kOutcomes> outcomes{};
    std::vector<float> ttft, tpot, e2e;  // ms, completed requests
    LogHistogram itl;
    uint64_t with_deadline = 0, met_deadline = 0, good = 0;
    uint64_t capped = 0, variant = 0, good_degraded = 0, shed = 0;
  };
  // One class row's requests of one tenant: what the D2 view needs.
  struct Cell {
    uint64_t generated = 0, good = 0;
    std::array<uint64_t, kOutcomes> outcomes{};
    std::vector<float> ttft;  // ms, completed requests
  };
  void add(Group& g, const RequestRecord& r, bool good, bool on_time);
  static void merge_into(Group& all, const Group& g);
  static void merge_into(Group& all, const Cell& c);
  GroupSummary finish(std::string name, Group& g, double duration_s);
  void summarize_flooding(PolicySummary& out);

  const Scenario& scenario_;
  std::vector<Group> classes_;
  std::vector<Group> tenants_;
  std::vector<std::vector<Group>> phases_;  // [phase][class]
  std::vector<Cell> cells_;                 // [class * tenants + tenant]
  uint64_t recorded_ = 0;
};

}  // namespace arbiter::bench
