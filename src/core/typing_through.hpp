// Typing through (issue 12): a newer keystroke whose prompt is the in-flight
// request's prompt plus exactly the start of what that request has generated
// so far keeps the running generation: the newer request inherits it and is
// served the rest, instead of aborting it and prefilling again.
//
// The rule is deliberately the simplest honest one: the typed text must be a
// prefix of the text already generated (never of what the generation might
// still produce), and every parameter that shapes the generation must agree.
// Pure: no I/O, no clock.
#pragma once

#include <cstddef>
#include <cstdint>
#include <optional>
#include <string>
#include <string_view>

#include <boost/json/object.hpp>

namespace arbiter::typing {

// What must agree between the two requests, apart from the prompt.
struct Shape {
  std::string_view model;
  int64_t max_tokens = 0;  // the request's budget (after the class's cap)
  uint32_t n = 1;          // choices: typing through serves exactly one
  bool stream = false;
  // Every other body field that shapes the generation (temperature, top_p,
  // seed, stop, suffix, logprobs, echo, ...), in one canonical text built
  // the same way for both; compared byte for byte.
  std::string_view sampling;
};

// The request being generated.
struct InFlight {
  std::string_view prompt;
  std::string_view generated;  // text generated so far (all choices' text: n is 1)
  Shape shape;
};

// The newer request that supersedes it.
struct Successor {
  std::string_view prompt;
  Shape shape;
};

// The successor inherits the generation: the first `skip` bytes of it are
// what the user typed (the successor's prompt holds them); everything after
// is the successor's answer.
struct Inheritance {
  std::size_t skip = 0;
};

// Why a successor may not inherit (for tests and counters).
enum class Refusal : uint8_t {
  kNotExtension,  // its prompt does not extend the in-flight prompt by something typed
  kNotGenerated,  // the typed text is not the start of what has been generated
  kShape,         // model, sampling, n, stream mode or budget differ
};

// The successor's parameters allow inheriting the old generation: same
// model, sampling and stream mode, one choice each, and a budget that holds
// whatever the old generation may still produce (at least the old budget).
bool compatible(const Shape& old, const Shape& successor);

// Shape::sampling of a request body: every field but the prompt, model,
// budget (max_tokens, max_completion_tokens), stream, n and user, as
// "key=value" lines sorted by key, values serialised as JSON. Two bodies
// that differ only in key order give the same text.
std::string sampling_text(const boost::json::object& body);

// The rule. Returns the inheritance, or why not.
struct Verdict {
  std::optional<Inheritance> inherit;
  Refusal refusal = Refusal::kNotExtension;  // meaningful when !inherit
};
Verdict typing_through(const InFlight& old, const Successor& successor);

}  // namespace arbiter::typing
