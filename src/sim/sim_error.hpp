// An error the simulated engine answers with, in vLLM's OpenAI error shape:
// {"error":{"message":...,"type":...,"param":...,"code":<status>}}.
#pragma once

#include <optional>
#include <string>

namespace arbiter::sim {

struct SimError {
  int status = 400;                  // HTTP status, repeated as error.code
  std::string message;               // for humans
  std::optional<std::string> param;  // the offending request field, if any
};

// vLLM's error.type for a status, e.g. "BadRequestError" for 400.
std::string_view error_type(int status);

std::string error_body(const SimError& error);

}  // namespace arbiter::sim
