// Shadow traffic's comparison (docs/rollouts.md, "Shadow traffic"): each
// mirrored request's answer from the shadow target set beside the real
// answer it mirrors: errors, latency, output length and, for requests
// whose answer is deterministic (temperature 0 or a seed), whether the
// text is the same. Pure.
#pragma once

#include <cstdint>
#include <optional>
#include <string>
#include <string_view>
#include <vector>

namespace arbiter::rollout {

// One answer as the comparison sees it.
struct AnswerSummary {
  bool ok = false;                  // 200 and a whole answer
  double latency_ms = 0;            // from sending to the end of the answer
  std::optional<int64_t> output_tokens;  // the usage's completion_tokens, when given
  std::string text;                 // the first choice's text (a stream's deltas joined)
};

// The summary of an answer's body: a whole JSON answer or an SSE stream
// (chat or completions), `status` as received (0: none).
AnswerSummary summarize_answer(std::string_view body, bool stream, int status, double latency_ms);

// What the pairs of one alias's shadow show so far.
struct ShadowReport {
  uint64_t pairs = 0;
  uint64_t primary_errors = 0;
  uint64_t shadow_errors = 0;
  std::optional<double> primary_p50_ms, primary_p99_ms, shadow_p50_ms, shadow_p99_ms;  // recent pairs
  std::optional<double> primary_mean_tokens;  // over pairs where both reported usage; none without
  std::optional<double> shadow_mean_tokens;
  uint64_t deterministic_pairs = 0;  // both ok and the request deterministic
  uint64_t exact_matches = 0;        // of them, the same text
};

class ShadowTally {
 public:
  static constexpr std::size_t kKeptLatencies = 4096;  // per side, the newest

  void add(const AnswerSummary& primary, const AnswerSummary& shadow, bool deterministic);
  ShadowReport report() const;

 private:
  ShadowReport totals_;
  double primary_tokens_ = 0, shadow_tokens_ = 0;
  uint64_t token_pairs_ = 0;
  std::vector<double> primary_ms_, shadow_ms_;  // rings of kKeptLatencies
  std::size_t next_ = 0;
};

}  // namespace arbiter::rollout
