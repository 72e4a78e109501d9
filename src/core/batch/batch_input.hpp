// A Batch API input file (JSONL, one request a line), read and checked:
// every line a JSON object {custom_id, method, url, body} as OpenAI's Batch
// API takes them, custom_ids unique, no streaming. Errors name their line
// (1-based), so a user can fix the file, not guess.
#pragma once

#include <cstddef>
#include <string>
#include <string_view>
#include <vector>

namespace arbiter::batch {

struct InputLine {
  std::string custom_id;
  std::string url;   // the route, e.g. /v1/chat/completions
  std::string body;  // the request's JSON, as written in the line
};

struct LineError {
  std::size_t line = 0;  // 1-based
  std::string message;
};

struct Input {
  std::vector<InputLine> lines;
  std::vector<LineError> errors;  // the first kMaxErrors of them
};

inline constexpr std::size_t kMaxErrors = 20;

// The routes a batch line may name.
bool batch_route(std::string_view url);

// Reads `text`: blank lines are skipped; more than `max_lines` requests is
// an error of its own.
Input read_input(std::string_view text, std::size_t max_lines);

// The errors as one message: "line 3: ...; line 9: ..." (and how many more).
std::string describe(const std::vector<LineError>& errors, std::size_t shown = 5);

}  // namespace arbiter::batch
