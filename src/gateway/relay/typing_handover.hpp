// Typing through, live (core/typing_through.hpp, docs/scheduler.md): a
// running completion (streamed to its client, or streamed from the engine
// and sent whole) offers its generation to the request that supersedes it.
// The dispatcher checks the rule when the newer request arrives (try_claim,
// under its mutex) and wakes the old request's relay
// from its wait for upstream bytes (wake_running); that relay sees the claim
// at once (or at its next event boundary, on a TLS upstream) and hands its
// upstream connection, mid-response, to the heir's coroutine (hand), which
// relays the rest to its own client. The old request's relay ends its
// client's stream as superseded.
//
// The two requests may run on different I/O threads (one io_context each):
// a plain TCP upstream socket is re-homed on the heir's thread (its file
// descriptor released by the old thread, adopted by the new one); a TLS one
// cannot be, so the rule is refused then.
#pragma once

#include <cstdint>
#include <functional>
#include <memory>
#include <mutex>
#include <optional>
#include <string>
#include <utility>

#include "core/resume.hpp"
#include "core/sse.hpp"
#include "core/typing_through.hpp"
#include "http/asio.hpp"
#include "http/response_sink.hpp"
#include "http/upstream_pool.hpp"
#include "http/upstream_response.hpp"

namespace arbiter {

// A plain TCP socket's descriptor, released by one thread's io_context
// for another's to adopt; closed if nobody does.
struct ReleasedSocket {
  int fd = -1;
  bool ipv6 = false;
  ReleasedSocket() = default;
  ReleasedSocket(int f, bool v6) : fd(f), ipv6(v6) {}
  ReleasedSocket(ReleasedSocket&& o) noexcept : fd(std::exchange(o.fd, -1)), ipv6(o.ipv6) {}
  ReleasedSocket& operator=(ReleasedSocket&& o) noexcept;
  ~ReleasedSocket();
  // A socket of `executor`'s io_context holding it (non-blocking, as
  // UpstreamPool's are); the descriptor is then its.
  tcp::socket adopt(const net::any_io_executor& executor);
};

// What moves from the old request's relay to its heir's.
struct HandedStream {
  PooledConnection conn;           // the upstream mid-response; null when `released` holds it
  ReleasedSocket released;         // the same, from another thread
  beast::flat_buffer buffer;       // `fd`'s read buffer (with `conn`, its own)
  UpstreamResponseParser parser;   // its state; body pieces already relayed
  SseFramer framer;                // an event begun and not yet ended
  // The heir's text so far (what was generated after the typed bytes) and
  // the stream's id, created and model, for the heir's own offer.
  Checkpoint checkpoint;
  // What the heir's client gets first: one event with the text generated
  // after the typed bytes (if any), then the events of the read that the
  // old client did not get.
  std::string preamble;
  bool last = false;  // the upstream response has ended: the preamble holds its end
  bool drained = true;  // the socket was probably empty (read_more's hint)
};

// Why a newer request did not take over (the metric's outcome).
enum class TypingOutcome : uint8_t {
  kHandedOver,    // the heir got the running generation
  kNotExtension,  // its prompt does not extend the running one's
  kNotGenerated,  // what it typed is not the start of the text generated so far
  kShape,         // model, sampling, stream mode or budget differ
  kNotEligible,   // the running request offers nothing (not a streaming completion, done, or being preempted)
  kTlsThread,     // the upstream is TLS and the two requests run on different threads
  kLost,          // claimed, but the old run ended before it handed over
};
std::string_view typing_outcome_name(TypingOutcome outcome);

class TypingOffer {
 public:
  // `sampling`: typing::sampling_text of the body; `stream`: its client's
  // mode; `context`: the I/O thread's io_context the request runs on.
  TypingOffer(std::string prompt, std::string model, int64_t max_tokens, std::string sampling, bool stream,
              net::execution_context* context, net::any_io_executor executor)
      : prompt_(std::move(prompt)),
        model_(std::move(model)),
        sampling_(std::move(sampling)),
        max_tokens_(max_tokens),
        stream_(stream),
        context_(context),
        executor_(std::move(executor)) {}

  // --- the running request's relay (its own thread) ---
  // Its client now has `text` more of the generation; `tls`: its upstream is.
  void publish(std::string_view text, bool tls);
  // A heir claimed the generation: the bytes it typed (skip), and where it runs.
  std::optional<std::size_t> claimed() const;
  bool heir_on(const net::execution_context* context) const;
  const net::any_io_executor& heir_executor() const { return heir_executor_; }
  // Gives the stream to the heir and wakes it.
  void hand(HandedStream stream);
  // The upstream socket its relay waits on for the next bytes of the
  // stream (plain TCP), or nullptr once it stops waiting: a claim cuts
  // that wait short (wake_running) instead of waiting for the engine's
  // next token.
  void set_waiting(tcp::socket* socket) { waiting_ = socket; }
  // The run ended (or is no longer offered): no claim from now on; a
  // claimed heir that got nothing is woken with nothing.
  void close();

  // --- the dispatcher, on the newer request's arrival (any thread) ---
  // Checks the rule against the text generated so far; on success the offer
  // is claimed by `heir` and kHandedOver returned.
  TypingOutcome try_claim(const TypingOffer& heir);
  // Takes back a claim the scheduler could not honour (before it was settled).
  void unclaim();
  // Once the claim holds: cancels the running relay's wait for upstream
  // bytes (posted to its thread), so it hands the stream over at once.
  static void wake_running(const std::shared_ptr<TypingOffer>& offer);

  // --- the heir (its own thread) ---
  // Waits for the stream; nothing when the old run ended first or the heir's
  // client left.
  Task<std::optional<HandedStream>> receive(ResponseSink& sink);

 private:
  typing::Shape shape() const;

  const std::string prompt_;
  const std::string model_;
  const std::string sampling_;
  const int64_t max_tokens_;
  const bool stream_;
  net::execution_context* const context_;
  const net::any_io_executor executor_;

  mutable std::mutex mu_;
  std::string generated_;  // what the client has been sent
  bool tls_ = false;
  bool closed_ = false;
  std::optional<std::size_t> skip_;                   // claimed
  net::execution_context* heir_context_ = nullptr;    // claimed: where the heir runs
  net::any_io_executor heir_executor_;
  std::optional<HandedStream> handed_;
  bool settled_ = false;                              // handed or closed after the claim
  std::function<void()> wake_;                        // receive() waiting
  tcp::socket* waiting_ = nullptr;  // set_waiting; the running relay's thread only (executor_)
};

// Closes an offer when the request's run ends, whatever way it ends.
struct TypingOfferClose {
  TypingOffer* offer;
  ~TypingOfferClose() {
    if (offer) offer->close();
  }
};

// One completions SSE event carrying `text` for the stream `checkpoint`
// describes (id, created, model).
std::string completion_text_event(const Checkpoint& checkpoint, std::string_view text);

}  // namespace arbiter
