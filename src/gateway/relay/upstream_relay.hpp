// Sends one request to a backend and relays the answer to a ResponseSink
// (the client, usually):
// SSE streams as they arrive, every complete event of one read in one chunk
// (byte-exact, never held back for a later read), other answers whole and
// unchanged, except that an error answer (non-2xx) that is not an OpenAI
// error object becomes one (core/upstream_error.hpp). Closes the upstream connection the
// moment the client goes away, so the engine aborts the work.
//
// A resumable request (RelayRequest::resume) may take several runs: the
// scheduler preempts it, the relay stops without ending the client's stream,
// and the next run continues from the checkpoint kept in RelayResume. For a
// client that did not ask for a stream, the upstream streams anyway and the
// relay answers one whole response at the end.
#pragma once

#include <functional>
#include <optional>
#include <string>
#include <utility>
#include <vector>

#include "core/config.hpp"
#include "core/error.hpp"
#include "core/resume.hpp"
#include "http/deadline.hpp"
#include "http/http_head.hpp"
#include "http/response_sink.hpp"
#include "gateway/error_response.hpp"
#include "gateway/stream_gaps.hpp"
#include "http/upstream_pool.hpp"
#include "gateway/relay/typing_handover.hpp"

namespace arbiter {

// Lets the scheduler stop a running exchange (a newer request superseded
// it, it was preempted, or the drain deadline came): fire() closes the
// upstream socket the relay registered.
struct Interrupt {
  bool requested = false;
  bool preemption = false;     // stop and keep the client's stream open for the next run
  std::optional<ApiError> error;  // not a preemption: what the client is told (none: superseded)
  std::function<void()> hook;  // set by the relay while it holds a socket
  void fire(bool preempt, std::optional<ApiError> why = std::nullopt) {
    requested = true;
    preemption = preempt;
    error = std::move(why);
    if (auto h = std::move(hook)) h();
  }
};

// What survives from one run of a resumable request to the next.
struct RelayResume {
  Route route = Route::kChatCompletions;
  bool aggregate = false;             // the client did not stream: one whole response at the end
  bool client_stream_started = false; // the stream's header went out in an earlier run
  Checkpoint checkpoint;
};

struct RelayRequest {
  UpstreamPool& pool;
  const UpstreamRequest& upstream_request;
  ResponseSink& sink;  // where the answer goes (the client's connection, usually)
  // Times the upstream operations: one operation at a time, so the client
  // connection's deadline serves (the server's sweeper enforces it).
  Deadline& deadline;
  const TimeoutsConfig& timeouts;
  const LimitsConfig& limits;
  // Added to the client's response (x-arbiter-*, x-request-id).
  const std::vector<std::pair<std::string, std::string>>& response_headers;
  Interrupt& interrupt;
  RelayResume* resume = nullptr;  // set for a resumable request
  // Called once per run at the first SSE event from the engine: its prompt
  // is prefilled (the scheduler's prefill backlog). Empty: not needed.
  std::function<void()> on_first_event = {};
  // Called when this run has written the client's stream head (the answer
  // began): once per client request, since a later run of a resumable one
  // does not send it again. Empty: not needed.
  std::function<void()> on_stream_started = {};
  // The caller may still run the request elsewhere (a retry or a failover
  // is left): an upstream 429 or 5xx answer is kept (RelayOutcome::held)
  // instead of sent, and a resumable stream that breaks stays open
  // (RelayOutcome::stream_open). The caller sends or ends them if it does
  // not run the request again.
  bool hold_failures = false;
  // Typing through: a streaming completion offers its generation to the
  // request that supersedes it (typing_handover.hpp). Its text is published
  // at each event boundary, and a claim seen there hands the stream over:
  // this client's stream then ends as superseded.
  TypingOffer* typing = nullptr;
  // Adaptive capacity: the backend's inter-event gaps are counted into it
  // (stream_gaps.hpp). Null: not counted.
  StreamGaps* gaps = nullptr;
  // With `gaps`: the time from sending the request to its first events that
  // its class leaves the engine (ttft_slo x ttft_headroom); longer counts as
  // a slow first token. Zero: first tokens not counted (no ttft_slo, or a
  // background class).
  std::chrono::steady_clock::duration first_token_bound{};
  // The gateway asked the engine for the stream's usage, the client did not
  // (core/stream_usage.hpp): the usage chunk is read, not forwarded.
  bool hide_usage_chunk = false;
};

// An upstream error answer kept back (RelayRequest::hold_failures).
struct HeldResponse {
  unsigned status = 0;
  std::string content_type;
  std::string body;
  std::vector<std::pair<std::string, std::string>> headers;  // the backend's, passed on
};

struct RelayOutcome {
  int status = 0;               // what the client got; 499 when it went away
  bool stream = false;          // answered as an SSE stream
  std::optional<ApiError> error;// the gateway-made error, if one was sent
  std::string upstream_error;   // failure kind for metrics: connect, timeout, reset, ...
  bool retried = false;         // resent after a pooled connection was found closed
  bool interrupted = false;     // stopped by Interrupt (superseded, or the drain deadline)
  bool preempted = false;       // stopped by a preemption: requeue and run again
  double upstream_ms = -1;      // request sent -> response header received
  unsigned upstream_status = 0; // the backend's HTTP status; 0: no answer
  // The backend's Retry-After (or retry-after-ms) on a 429 or 503.
  std::optional<std::chrono::milliseconds> upstream_retry_after;
  std::optional<HeldResponse> held;  // hold_failures: its 429/5xx answer, not sent yet
  bool stream_open = false;          // hold_failures: a resumable stream broke, the client's is still open
  std::optional<Usage> usage;   // the engine's token counts, when the answer (or a stream's usage chunk) carried them
  int64_t generated = -1;       // streams: tokens counted from events (resumable: all runs; plain: data events)

  // What the request is billed, by the one rule the usage ledger, the
  // quotas and the scheduler's fairness share (DispatchHandler::settle,
  // QuotaObserver): the engine's usage; else, for a stream (cut short by
  // its client too), the prompt's estimate and the tokens counted from its
  // events; else, for a whole answer that was sent (`answer_sent`) without
  // usage, the estimates the request was admitted with (prompt and
  // max_tokens); nullopt when the engine produced nothing for the client.
  struct Billed {
    enum class From : uint8_t { kEngine, kEvents, kEstimate };
    Usage usage;
    From from;
    int64_t total() const { return usage.prompt_tokens + usage.completion_tokens; }
  };
  std::optional<Billed> billed(int64_t prompt_estimate, int64_t output_estimate, bool answer_sent) const {
    if (usage) return Billed{*usage, Billed::From::kEngine};
    if (generated >= 0) return Billed{Usage{.prompt_tokens = prompt_estimate, .completion_tokens = generated}, Billed::From::kEvents};
    if (answer_sent) {
      return Billed{Usage{.prompt_tokens = prompt_estimate, .completion_tokens = output_estimate}, Billed::From::kEstimate};
    }
    return std::nullopt;
  }
};

// "engine", "events", "estimate": the access log's `tokens_from`.
std::string_view billed_from_name(RelayOutcome::Billed::From from);

// One run of a request upstream; how it ended goes to `outcome` (reset
// first), which must outlive the run. An out-parameter, not a result: a
// coroutine's result and each awaiting frame's copy of it would stay
// allocated for as long as a stream is open.
Task<void> relay(const RelayRequest& r, RelayOutcome& outcome);
// The heir's side of typing through: relays the rest of a stream another
// request's relay handed over (its preamble first), as relay() would
// (nothing is sent upstream; `r.upstream_request` is not read).
Task<void> relay_handed_over(const RelayRequest& r, HandedStream stream, RelayOutcome& outcome);

// A Retry-After (delta seconds) or retry-after-ms value, or none when it is
// neither (an HTTP date is not honoured: engines send seconds).
std::optional<std::chrono::milliseconds> parse_retry_after(std::string_view seconds, std::string_view millis);


}  // namespace arbiter
