// An engine's error answer as the client gets it (issue 40): every non-2xx
// answer from an engine reaches the client as an OpenAI error object,
// {"error":{"message":...,"type":...,"param":...,"code":...}}, with the
// engine's status kept, so the OpenAI SDKs raise the error class of the
// status with the engine's message (openai-node reads body.error and shows
// "404 status code (no body)" for anything else).
//
// - Already one (a JSON object whose `error` is an object holding a string
//   `message`: OpenAI, newer vLLM, llama.cpp): sent unchanged, byte for byte.
// - vLLM's and SGLang's older flat shape, {"object":"error","message":...,
//   "type":...,"param":...,"code":...} (any JSON object with a string
//   `message`): its fields lifted into `error`, the engine's type, param and
//   code kept when they are strings (param, type, code) or numbers (code).
// - Other JSON objects with a string `error` (TGI) or `detail` (FastAPI's
//   own 404/405/422 bodies): that string is the message.
// - Anything else (empty, text/plain, HTML, other JSON): the body's text is
//   the message; an empty body says so.
// A message is at most kUpstreamErrorMessageBytes of the engine's text
// (whitespace around it trimmed, cut at a character boundary, "..." added
// when cut), valid UTF-8 (a byte that is not: U+FFFD), JSON-escaped. The
// type by status, as the gateway's own errors (core/error.cpp): 401
// authentication_error, 403 permission_error, 429 rate_limit_error, other
// 4xx invalid_request_error, 5xx (and any other status) server_error; the
// code "upstream_error", as the gateway's 502.
#pragma once

#include <cstddef>
#include <optional>
#include <string>
#include <string_view>

namespace arbiter {

inline constexpr std::size_t kUpstreamErrorMessageBytes = 1024;

// The OpenAI error type of an engine's error status.
std::string_view upstream_error_type(unsigned status);

// `body` (JSON) is an OpenAI error object already: an object whose `error`
// member is an object holding a string `message`.
bool is_openai_error(std::string_view body);

// `text` as a message: trimmed, valid UTF-8, at most `max_bytes` bytes of
// it (then "..." added).
std::string bounded_message(std::string_view text,
                            std::size_t max_bytes = kUpstreamErrorMessageBytes);

// The body the client gets for an engine's non-2xx answer with `body`:
// nullopt when `body` is an OpenAI error object already (it goes as it is),
// else the OpenAI error object made from it.
std::optional<std::string> openai_error_body(unsigned status, std::string_view body);

}  // namespace arbiter
