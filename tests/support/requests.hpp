// Request bodies and headers the integration tests send to the gateway.
#pragma once

#include <optional>
#include <string>
#include <string_view>

#include "support/fake_upstream.hpp"  // Headers
#include "support/gateway_config.hpp"
#include "support/http_client.hpp"

namespace arbiter::test {

// {"model":...,"messages":[...]} with optional stream and max_tokens.
std::string chat_body(bool stream = false, std::optional<int> max_tokens = std::nullopt,
                      std::string_view model = kModel);
// {"model":...,"prompt":...} for /v1/completions.
std::string completion_body(std::optional<int> max_tokens = std::nullopt, bool stream = false,
                            std::string_view model = kModel);

// Authorization for `key` plus the JSON content type.
Headers api_headers(const std::string& key = kAlphaKey);

HttpRequest chat_request(std::string body, const std::string& key = kAlphaKey);
HttpRequest completion_request(std::string body, const std::string& key = kAlphaKey);

}  // namespace arbiter::test
