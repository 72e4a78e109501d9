// Usage for streams whose client did not ask for it (backend stream_usage):
// the gateway asks the engine (stream_options.include_usage) so that the
// stream's tokens are the engine's count, for quotas, charges, metrics and
// the usage ledger, and keeps the usage chunk that adds from the client,
// which did not ask for a chunk with no choices (code reading
// chunk.choices[0] breaks on it; core/usage.hpp's is_usage_chunk tells it).
#pragma once

#include <string>
#include <string_view>

#include <boost/json/object.hpp>

namespace arbiter {

// "stream_options":{"include_usage":true} as the first member of a JSON
// object: kStreamUsageAsk goes into `body` (a JSON object's text) at
// stream_usage_ask_at(body), sent as the body's bytes before it, the ask,
// then the rest (UpstreamRequest::body_insert: no copy of a long prompt).
// A client's own stream_options comes later in the object and so wins with
// engines that keep a key's last value (vLLM, SGLang: Python's json); the
// gateway asks only when the client did not.
inline constexpr std::string_view kStreamUsageAsk = R"("stream_options":{"include_usage":true},)";
std::size_t stream_usage_ask_at(std::string_view body);
// The same on a document: added when it has no stream_options.
void ask_stream_usage(boost::json::object& body);

}  // namespace arbiter
