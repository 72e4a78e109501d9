// Parses an OpenAI request body once: validates the fields the gateway relies
// on and extracts RequestInfo in one pass over the text, building no JSON
// document. The document is built from the same text only when a request is
// rewritten (caps, engine priority, resume), so a request forwarded as sent
// never pays for it.
#pragma once

#include <expected>
#include <optional>
#include <string>
#include <string_view>

#include <boost/json/object.hpp>

#include "core/error.hpp"
#include "core/request.hpp"
#include "core/request_fields.hpp"

namespace arbiter {

class ParsedRequest {
 public:
  RequestInfo info;
  // The body to send: the client's bytes, or with a max_tokens cap written
  // in place (apply_max_tokens_cap edits the number's text). Read-only to
  // everyone else.
  std::string text;
  // Where `text`'s top-level keys start, while `text` is the client's bytes
  // (the result cache's key); cleared (not complete) by any rewrite.
  const TopKeys& top_keys() const { return top_keys_; }

  // The body as a JSON object, parsed from `text` on first use (the
  // rewriting paths: engine priority, resume). Changes made here are not
  // in `text`: document_changed() says the document must be serialised.
  // Lazily built: a memo, hence mutable behind the const overload.
  boost::json::object& body();
  const boost::json::object& body() const;
  bool document_changed() const { return document_changed_; }
  // Frees the document when `text` holds all it does (nothing was changed
  // in the document alone); body() builds it again when asked. For a request
  // that needed it once and may then wait long in a queue, which would
  // otherwise hold its body twice.
  void drop_document();
  // Frees the text and the document for good; `info` stays. For a request
  // nothing will send again (DispatchHandler: a stream whose answer began and
  // that cannot be resumed), so that an open stream does not hold its
  // prompt. body() must not be called after it.
  void release_body();

 private:
  friend std::expected<ParsedRequest, ApiError> parse_request(Route route, std::string body,
                                                              std::size_t max_json_depth);
  friend bool apply_max_tokens_cap(ParsedRequest& request, int64_t cap);
  friend std::expected<ParsedRequest, ApiError> parse_responses(std::string body, std::size_t max_json_depth);

// Sends the request to another model (the model breaker's degraded variant
// or fallback): `model` in the body and in `info`. The body then goes out
// serialised from its document.
void rewrite_model(ParsedRequest& request, std::string_view model);
  friend void rewrite_model(ParsedRequest& request, std::string_view model);

  mutable std::optional<boost::json::object> body_;
  TopKeys top_keys_;
  bool document_changed_ = false;  // set by a change to body() that `text` lacks
  std::size_t max_json_depth_ = kDefaultMaxJsonDepth;  // as parse_request read `text`
  // The budget fields as scanned, for a cap written into `text`.
  JsonScalar max_tokens_;
  JsonScalar max_completion_tokens_;
};

// `max_json_depth`: deeper nesting is refused (400 invalid_json).
std::expected<ParsedRequest, ApiError> parse_request(Route route, std::string body,
                                                     std::size_t max_json_depth = kDefaultMaxJsonDepth);

// Characters per token used for estimates (the usual rule of thumb for
// English text with BPE tokenizers).
inline constexpr int64_t kCharsPerToken = 4;
int64_t estimate_tokens(std::size_t chars);

// Makes the request ask for at most `cap` tokens: rewrites max_tokens (or
// max_completion_tokens, whichever the client used) when it is above the cap
// or absent. Returns true when the body changed. The number is edited in
// `text` (or the field added after the opening brace), so the request still
// goes out without a JSON document; a null budget or a document already
// changed takes the document's way.
bool apply_max_tokens_cap(ParsedRequest& request, int64_t cap);

// Sends the request to another model (the model breaker's degraded variant
// or fallback): `model` in the body and in `info`. The body then goes out
// serialised from its document.
void rewrite_model(ParsedRequest& request, std::string_view model);

}  // namespace arbiter
