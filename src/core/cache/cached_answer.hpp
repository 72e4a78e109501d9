// One answer as the result cache keeps it (docs/cache.md): the text, the
// reasoning text where the engine separates it, why it finished and the
// token counts; not the shape it came in. A hit is written in the shape its
// own request asks for, a whole JSON answer or an SSE stream, with ids of
// its own, whichever shape filled the entry.
//
// Only an answer that reads as one finished choice of plain text is kept:
// tool calls, log probabilities, several choices, an error event or a
// stream without its end are refused (nullopt), so a replay never drops
// something the fresh answer had.
#pragma once

#include <cstdint>
#include <optional>
#include <string>
#include <string_view>

#include "core/request.hpp"
#include "core/resume.hpp"

namespace arbiter::cache {

struct CachedAnswer {
  Route route = Route::kChatCompletions;
  // The message's content, or the completion's text; an embedding's whole
  // answer (its JSON, written again as it is: it has no id of its own).
  std::string content;
  std::string reasoning;  // reasoning_content (vLLM's, SGLang's reasoning parsers); empty: none
  std::string finish_reason;
  std::optional<Usage> usage;
  // The two texts as JSON escapes them (no quotes), made once where the
  // answer is kept (read_answer): a hit then copies them, unescaped. Empty:
  // escaped when written.
  std::string content_json;
  std::string reasoning_json;

  // What it holds in memory, for the store's byte bound.
  std::size_t bytes() const {
    return sizeof(CachedAnswer) + content.size() + reasoning.size() + finish_reason.size() + content_json.size() +
           reasoning_json.size();
  }
};

// What the store keeps: the answer read, or, until its first hit, the
// bytes as the client got them (reading them is a JSON parse a miss need
// not pay; an answer that turns out not to be one a cache replays is
// dropped at that hit).
struct StoredAnswer {
  Route route = Route::kChatCompletions;
  std::optional<CachedAnswer> answer;
  bool stream = false;  // raw is an SSE stream
  std::string raw;
  std::optional<Usage> usage;  // the engine's, for a raw stream whose usage chunk the client did not get

  std::size_t bytes() const { return sizeof(StoredAnswer) + raw.size() + (answer ? answer->bytes() : 0); }
};

// The stored answer, read from its bytes when it was not yet (its texts
// escaped for writing); nullopt when they are not an answer a cache
// replays.
std::optional<CachedAnswer> read_answer(const StoredAnswer& stored);

// From a whole answer's JSON (chat.completion or text_completion).
std::optional<CachedAnswer> answer_from_whole(Route route, std::string_view json);
// From the bytes of an SSE stream as the client got them, [DONE] included.
std::optional<CachedAnswer> answer_from_stream(Route route, std::string_view sse);

// The answer as a fresh one would be: `id` (chatcmpl-..., cmpl-...),
// `created` (Unix seconds) and the model the client asked for are its own.
std::string render_whole(const CachedAnswer& a, std::string_view id, int64_t created, std::string_view model);
// The answer as an SSE body: a role chunk (chat), the reasoning in one
// chunk, the content in one but its last word, which comes with the finish
// reason (as vLLM and SGLang end a stream), the usage chunk when
// `include_usage` and the answer has usage (the others then carry
// `"usage":null`, as OpenAI's do), then [DONE].
std::string render_stream(const CachedAnswer& a, std::string_view id, int64_t created, std::string_view model,
                          bool include_usage);

}  // namespace arbiter::cache
