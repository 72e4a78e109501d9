// Checkpoint and resume of a preempted request (docs/scheduler.md,
// "Preemption with resume"). The scheduler aborts a running request upstream
// to free its slot; what the engine generated so far is kept, and when the
// request runs again a continuation picks up from there. Several upstream
// runs must reach the client as one stream or one response. This file holds
// the pure parts: whether a request can be resumed, the body of each run, the
// per-event bookkeeping and rewriting, and the whole response assembled for a
// client that did not stream.
#pragma once

#include <cstdint>
#include <optional>
#include <string>
#include <string_view>

#include <boost/json/object.hpp>

#include "core/request.hpp"
#include "core/request_parser.hpp"

namespace arbiter {

enum class ResumeMethod {
  kNone,           // cannot be resumed: the scheduler never preempts it
  kPromptAppend,   // /v1/completions: the prompt plus the text so far
  kContinueFinal,  // chat: the partial assistant message, vLLM's continue_final_message
};

// How `request` could be resumed. Chat needs backends that declare
// continue_final_message support. n > 1, best_of, tools or functions,
// logprobs, echo, suffix, or a completions prompt that is not a single
// string cannot be stitched together: kNone.
ResumeMethod resume_method(const ParsedRequest& request, bool chat_continuation_supported);

// The engine's token counts of one answer (OpenAI's `usage`).
struct Usage {
  int64_t prompt_tokens = 0;
  int64_t completion_tokens = 0;
  // Of prompt_tokens, those the engine served from its prefix cache
  // (usage.prompt_tokens_details.cached_tokens); 0 when it does not say.
  int64_t cached_tokens = 0;
};

// What the client has been given so far, over every run of one request.
struct Checkpoint {
  std::string text;              // generated text so far
  int64_t tokens = 0;            // generated tokens so far: one per event that carried text
  int64_t tokens_before_run = 0; // `tokens` when the current run started
  uint32_t runs = 0;             // upstream runs started
  std::string id;                // from the first event: the one id the client sees
  int64_t created = 0;           // from the first event
  std::string model;             // from the first event
  std::string finish_reason;     // from the last event that had one
  std::optional<Usage> usage;    // the last usage seen, counted over all runs
  bool role_sent = false;        // a chat role preamble has reached the client

  // Call before each upstream run.
  void begin_run() {
    tokens_before_run = tokens;
    ++runs;
  }
  bool resumed() const { return runs > 1; }
};

// The body of the next run (call after begin_run()). The first run sends the
// original; a resumed one continues from the checkpoint with max_tokens (and
// vLLM's min_tokens) reduced by the tokens already generated. With
// `aggregate` (the client did not ask for a stream) the upstream is asked to
// stream with usage, so the output survives an abort.
boost::json::object run_body(const ParsedRequest& original, ResumeMethod method,
                             const Checkpoint& checkpoint, bool aggregate);

// What happens to one upstream SSE event on its way to a streaming client.
enum class EventFate {
  kForward,    // send as it came (byte-exact): every event of the first run
  kRewritten,  // send `rewritten` instead: resumed runs (one id, usage over all runs)
  kDrop,       // a resumed chat run's repeated role preamble
};
struct EventResult {
  EventFate fate = EventFate::kForward;
  std::string rewritten;
};

// Takes one whole SSE event ("data: {...}\n\n") of the current run into the
// checkpoint (text, tokens, finish reason, usage) and says what the client
// gets. Events that are not JSON chunks ([DONE], comments) are forwarded.
EventResult track_event(std::string_view event, Route route, Checkpoint& checkpoint);

// The whole response for a client that did not stream: a chat.completion or
// text_completion object built from the checkpoint of the finished runs.
std::string aggregate_response(Route route, const Checkpoint& checkpoint);

}  // namespace arbiter
