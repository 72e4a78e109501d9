// /v1/embeddings of the simulated engine: a vector per input, the same for
// the same text on every run, unit length, `dimensions` long (16 by
// default); usage counts the input's words as its tokens. Texts that share
// most of their words get near vectors, as a real embedding model's
// paraphrases do: each word (lower-cased letters and digits) adds +-1 in a
// dimension its hash picks (a hashed bag of words); a text without words
// gets a vector its hash seeds. The engine model takes no part: an
// embedding is answered at once (real engines spend a prefill on it;
// docs/simulator.md).
#include <cctype>
#include <cmath>

#include <boost/json.hpp>
#include <fmt/format.h>

#include "sim/mix.hpp"
#include "sim/sim_endpoint.hpp"

namespace arbiter::sim {
namespace {

namespace json = boost::json;

constexpr std::int64_t kDefaultDimensions = 16;
constexpr std::int64_t kMaxDimensions = 4096;

std::uint64_t text_hash(std::string_view text) {
  std::uint64_t h = 0x9e3779b97f4a7c15ULL;
  for (const char c : text) h = mix(h ^ static_cast<unsigned char>(c));
  return h;
}

std::int64_t words(std::string_view text) {
  std::int64_t n = 0;
  bool in_word = false;
  for (const char c : text) {
    const bool space = c == ' ' || c == '\n' || c == '\t';
    if (!space && !in_word) ++n;
    in_word = !space;
  }
  return n;
}

// The inputs as texts (token-id arrays as their numbers), or an error.
std::expected<std::vector<std::string>, SimError> inputs(const json::value* input) {
  const SimError bad{400, "'input' must be a string, an array of strings or of token ids", "input"};
  if (!input) return std::unexpected(SimError{400, "'input' is required", "input"});
  if (input->is_string()) return std::vector<std::string>{std::string(input->get_string())};
  if (!input->is_array() || input->get_array().empty()) return std::unexpected(bad);
  std::vector<std::string> out;
  const json::array& items = input->get_array();
  if (items[0].is_int64()) return std::vector<std::string>{json::serialize(items)};  // one prompt of token ids
  for (const json::value& item : items) {
    if (item.is_string()) {
      out.emplace_back(item.get_string());
    } else if (item.is_array()) {
      out.push_back(json::serialize(item));
    } else {
      return std::unexpected(bad);
    }
  }
  return out;
}

// The hashed bag of `text`'s words, `dimensions` long; all zero without words.
std::vector<double> bag_of_words(std::string_view text, std::size_t dimensions) {
  std::vector<double> v(dimensions);
  std::string word;
  const auto add = [&] {
    if (word.empty()) return;
    const std::uint64_t h = text_hash(word);
    v[h % dimensions] += (h >> 63) ? 1.0 : -1.0;
    word.clear();
  };
  for (const char c : text) {
    if (std::isalnum(static_cast<unsigned char>(c))) {
      word += static_cast<char>(std::tolower(static_cast<unsigned char>(c)));
    } else {
      add();
    }
  }
  add();
  return v;
}

}  // namespace

Task<void> SimEndpoint::embeddings(HttpRequest& req, ClientConnection& conn) {
  requests_.fetch_add(1, std::memory_order_relaxed);
  metrics_.count_request();
  if (starting()) {
    SimError err{503, "the engine is starting (slow_start fault)", {}};
    co_await send_error(conn, err);
    co_return;
  }
  boost::system::error_code ec;
  const json::value body = json::parse(req.body(), ec);
  if (ec || !body.is_object()) {
    SimError err{400, "request body is not a JSON object", {}};
    co_await send_error(conn, err);
    co_return;
  }
  const json::object& o = body.get_object();
  std::int64_t dimensions = kDefaultDimensions;
  if (const json::value* d = o.if_contains("dimensions"); d && !d->is_null()) {
    if (!d->is_int64() || d->get_int64() < 1 || d->get_int64() > kMaxDimensions) {
      SimError err{400, fmt::format("'dimensions' must be an integer in [1, {}]", kMaxDimensions), "dimensions"};
      co_await send_error(conn, err);
      co_return;
    }
    dimensions = d->get_int64();
  }
  auto texts = inputs(o.if_contains("input"));
  if (!texts) {
    co_await send_error(conn, texts.error());
    co_return;
  }
  json::array data;
  std::int64_t tokens = 0;
  for (std::size_t i = 0; i < texts->size(); ++i) {
    const std::string& text = (*texts)[i];
    tokens += std::max<std::int64_t>(1, words(text));
    std::vector<double> v = bag_of_words(text, static_cast<std::size_t>(dimensions));
    double norm = 0;
    for (const double x : v) norm += x * x;
    if (norm == 0) {  // no words: a vector the text's hash seeds
      std::uint64_t state = text_hash(text);
      for (double& x : v) {
        state = mix(state);
        x = static_cast<double>(state >> 11) / static_cast<double>(1ULL << 53) * 2 - 1;
        norm += x * x;
      }
    }
    json::array embedding;
    for (const double x : v) embedding.push_back(x / std::sqrt(norm));
    data.push_back(json::object{{"object", "embedding"}, {"index", i}, {"embedding", std::move(embedding)}});
  }
  json::object answer{{"object", "list"},
                      {"data", std::move(data)},
                      {"model", model_},
                      {"usage", json::object{{"prompt_tokens", tokens}, {"total_tokens", tokens}}}};
  co_await send_body(conn, http::status::ok, json::serialize(answer), "application/json");
}

}  // namespace arbiter::sim
