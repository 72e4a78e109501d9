// Live mode's typing along (TrafficSpec::type_along, RequestSpec::extends):
// a keystroke that types the start of the suggestion being generated for
// the keystroke before it goes out with that one's prompt plus the first
// `typed_tokens` of that suggestion's text, and with that one's budget (an
// editor sends the same parameters on every keystroke, and the gateway's
// typing-through rule asks for them: docs/scheduler.md, "Typing through").
//
// The typed text: what the earlier keystroke's client has received, once it
// holds the typed tokens (the user types what the editor shows); before
// that, the text the engine will generate, predicted by arbiter-sim's rule
// (engine/generated_text.hpp) from the served model name and the engines'
// seed. The prediction assumes that the earlier keystroke, if it typed along
// too, took over the generation it extends (its answer then continues that
// one's text); when the received text shows it ran anew instead, its own
// prompt's answer is the one continued. A keystroke typing along one that
// was never sent (a debouncing client held it back) goes out with its own
// prompt: there is nothing it could extend.
//
// The last kRemembered keystrokes of each supersede key are kept (a
// developer may start a new burst while the last one is still going: a
// keystroke's predecessor in its burst need not be its key's latest), each
// with its prompt: a few KB per developer.
// Pure: no I/O, no clock.
#pragma once

#include <cstdint>
#include <deque>
#include <optional>
#include <string>
#include <string_view>
#include <unordered_map>
#include <utility>

#include "bench/live_request.hpp"
#include "bench/request_spec.hpp"

namespace arbiter::bench {

// Whose text the engines generate: arbiter-sim's served model name and seed.
struct EngineText {
  std::string model;  // live mode: empty takes the model the requests name
  uint64_t seed = 0;
};

// How a keystroke went out.
enum class Typed : uint8_t {
  kNo,          // types along nothing (its own prompt)
  kReceived,    // typed what the earlier keystroke's client had received
  kPredicted,   // typed the predicted text: its client had not received it yet
  kNotSent,     // types along a keystroke not sent (or no longer remembered): its own prompt
};

struct Outgoing {
  Keystroke keystroke;
  Typed typed = Typed::kNo;
};

class TypeAlong {
 public:
  static constexpr std::size_t kRemembered = 4;

  explicit TypeAlong(EngineText engine) : engine_(std::move(engine)) {}

  // The id (RequestSpec::id) of the keystroke `spec` types along, if it
  // went out and is remembered.
  std::optional<uint64_t> extended(const RequestSpec& spec) const;

  // What `spec` goes out with: `own` (its prompt and budget) unless it types
  // along a remembered keystroke of its key. `received`: the text the
  // client of that keystroke (extended()) has received so far, if it is
  // still running (once it ended, what ended() was told counts).
  Outgoing next(const RequestSpec& spec, Keystroke own, std::string_view received);

  // The client of keystroke `spec` is done, having received `received`.
  void ended(const RequestSpec& spec, std::string_view received);

 private:
  // Where a keystroke's answer comes from: token `offset` on of the answer
  // seeded by `seed`.
  struct Source {
    uint64_t seed = 0;
    uint32_t offset = 0;
  };
  struct Sent {
    uint64_t text = 0;  // RequestSpec::text
    uint64_t id = 0;    // RequestSpec::id
    Keystroke keystroke;
    Source source;  // if it took over what it typed along, that generation's
    std::optional<std::string> received;  // once its client is done
  };

  const Sent* find(uint64_t key, uint64_t text) const;
  std::string words(Source from, uint32_t tokens) const;

  EngineText engine_;
  std::unordered_map<uint64_t, std::deque<Sent>> recent_;  // by supersede key, newest last
};

}  // namespace arbiter::bench
