// The HTTP request live mode sends for a RequestSpec: an OpenAI streaming
// request (chat, or a completion for typing traffic, as an IDE sends) with
// the spec's prompt, lengths, class, tenant and supersede key.
#pragma once

#include <string>

#include "bench/request_spec.hpp"
#include "bench/scenario.hpp"

namespace arbiter::bench {

struct LiveRequestOptions {
  std::string host = "127.0.0.1";  // Host header
  std::string model = "arbiter-bench";
  // Send min_tokens = max_tokens = the spec's output length, so the answer is
  // exactly as long as in virtual mode (vLLM and arbiter-sim honour
  // min_tokens). Off: max_tokens is the spec's and the target decides.
  bool exact_lengths = true;
  // Arbiter's headers (x-arbiter-class, x-arbiter-supersede-key); off for a
  // target that is an engine itself.
  bool gateway_headers = true;
  uint64_t text_salt = 0;  // prompt_text.hpp: live mode draws one per run
};

// Tenant `name`'s API key by convention: the gateway config that
// `arbiter-bench gateway-config` writes gives each tenant this key.
std::string tenant_api_key(const std::string& tenant);

// The request path: /v1/completions for typing traffic, else /v1/chat/completions.
const char* request_path(const Scenario& scenario, const RequestSpec& spec);

// The length fields of a request.
struct Budget {
  uint32_t max_tokens = 1;
  uint32_t min_tokens = 0;  // 0: not sent
};

// A completion's prompt and budget. A spec's own: its prompt text
// (prompt_text.hpp) and its lengths; a keystroke typing along another
// (bench/type_along.hpp) takes that one's prompt plus what was typed, and
// that one's budget.
struct Keystroke {
  std::string prompt;
  Budget budget;
};
Keystroke own_keystroke(const RequestSpec& spec, const LiveRequestOptions& options);

// The JSON body; `keystroke` (typing traffic only) replaces the spec's own.
std::string request_body(const Scenario& scenario, const RequestSpec& spec,
                         const LiveRequestOptions& options, const Keystroke* keystroke = nullptr);

// The whole HTTP/1.1 request (header and body), ready to write.
std::string raw_request(const Scenario& scenario, const RequestSpec& spec,
                        const LiveRequestOptions& options, const Keystroke* keystroke = nullptr);

}  // namespace arbiter::bench
