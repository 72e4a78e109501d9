// Gateway-made error answers, for every place that refuses or cuts a
// request: the router, the admin routes, the pipeline and the relay.
#pragma once

#include <string>
#include <utility>
#include <vector>

#include "core/error.hpp"
#include "http/response_sink.hpp"

namespace arbiter {

// Writes a gateway-made error as the whole response (with Retry-After when
// retryable), with `headers` (x-request-id, ...). False when the client was gone.
Task<bool> send_error(ResponseSink& sink, const ApiError& error,
                      const std::vector<std::pair<std::string, std::string>>& headers);

// Ends a stream that cannot go on (e.g. a preempted request that could not
// be requeued, an upstream that broke off) with a final error event.
Task<void> end_stream_with_error(ResponseSink& sink, const ApiError& error);

}  // namespace arbiter
