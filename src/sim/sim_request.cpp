#include "sim/sim_request.hpp"

#include <algorithm>
#include <limits>
#include <optional>
#include <span>
#include <string>
#include <vector>

#include <boost/json.hpp>

#include "core/request_parser.hpp"
#include "engine/generated_text.hpp"
#include "engine/generation.hpp"
#include "engine/prompt.hpp"
#include "sim/mix.hpp"

namespace arbiter::sim {

namespace json = boost::json;

namespace {

SimError bad(std::string message, std::string param = {}) {
  SimError e{400, std::move(message), {}};
  if (!param.empty()) e.param = std::move(param);
  return e;
}

void append_content(std::string& out, const json::value& content) {
  if (const auto* s = content.if_string()) {
    out.append(s->data(), s->size());
    return;
  }
  if (const auto* parts = content.if_array()) {
    for (const auto& part : *parts) {
      const auto* obj = part.if_object();
      if (!obj) continue;
      if (const auto* text = obj->if_contains("text"); text && text->is_string()) {
        out.append(text->get_string().data(), text->get_string().size());
      }
    }
  }
}

// One token id as 4 bytes, so the 4-characters-per-token rule counts it once.
void append_token_id(std::string& out, std::uint64_t id) {
  for (int i = 0; i < 4; ++i) out.push_back(static_cast<char>((id >> (8 * i)) & 0xff));
}

struct PromptText {
  std::string text;           // what the engine "tokenises"
  std::size_t base_size = 0;  // bytes before a continued final message
  bool continued = false;     // continue_final_message was set
};

std::expected<PromptText, SimError> chat_prompt(const json::object& body) {
  PromptText p;
  if (const auto* c = body.if_contains("continue_final_message"); c && !c->is_null()) {
    if (!c->is_bool()) return std::unexpected(bad("'continue_final_message' must be a boolean", "continue_final_message"));
    p.continued = c->get_bool();
  }
  const auto& messages = body.at("messages").get_array();  // checked by parse_request
  for (std::size_t i = 0; i < messages.size(); ++i) {
    const auto& msg = messages[i].get_object();
    const bool last = i + 1 == messages.size();
    if (last && p.continued) {
      const auto* role = msg.if_contains("role");
      if (!role || !role->is_string() || role->get_string() != "assistant") {
        return std::unexpected(bad("continue_final_message requires the last message to be the assistant's",
                                   "messages"));
      }
      p.base_size = p.text.size();
    }
    if (const auto* content = msg.if_contains("content")) append_content(p.text, *content);
  }
  if (!p.continued) p.base_size = p.text.size();
  return p;
}

// A Responses request's prompt: its instructions, then its input (a string,
// or items: messages whose content is a string or text parts).
PromptText responses_prompt(const json::object& body) {
  PromptText p;
  if (const auto* i = body.if_contains("instructions"); i && i->is_string()) append_content(p.text, *i);
  const json::value& input = body.at("input");  // checked by parse_request
  if (const auto* items = input.if_array()) {
    for (const auto& item : *items) {
      const auto* obj = item.if_object();
      if (const auto* content = obj ? obj->if_contains("content") : nullptr) append_content(p.text, *content);
    }
  } else {
    append_content(p.text, input);
  }
  p.base_size = p.text.size();
  return p;
}

// One prompt of a completions request: a string, or a list of token ids.
std::expected<PromptText, SimError> one_completion_prompt(const json::value& prompt) {
  PromptText p;
  if (const auto* s = prompt.if_string()) {
    p.text.assign(s->data(), s->size());
  } else if (const auto* ids = prompt.if_array()) {
    for (const auto& id : *ids) {
      if (!id.is_int64() && !id.is_uint64()) return std::unexpected(bad("token ids must be integers", "prompt"));
      append_token_id(p.text, id.is_int64() ? static_cast<std::uint64_t>(id.get_int64()) : id.get_uint64());
    }
  } else {
    return std::unexpected(
        bad("'prompt' must be a string, a list of token ids, or a list of strings or of lists of token ids", "prompt"));
  }
  p.base_size = p.text.size();
  return p;
}

// The prompts of a completions request: one, or a batch (a list of strings
// or of lists of token ids), served as vLLM serves a batch: each prompt its
// own engine requests.
std::expected<std::vector<PromptText>, SimError> completion_prompts(const json::object& body) {
  const json::value& prompt = body.at("prompt");  // checked by parse_request
  const auto* list = prompt.if_array();
  const bool batch = list && !list->empty() && !list->front().is_number();
  const std::span<const json::value> items = batch ? std::span(list->data(), list->size()) : std::span(&prompt, 1);
  std::vector<PromptText> out;
  for (const json::value& each : items) {
    if (each.is_string() != items.front().is_string()) {
      return std::unexpected(bad("a batch of prompts must be all strings or all lists of token ids", "prompt"));
    }
    auto one = one_completion_prompt(each);
    if (!one) return std::unexpected(one.error());
    out.push_back(std::move(*one));
  }
  return out;
}

std::expected<std::int64_t, SimError> read_int(const json::object& body, const char* key, std::int64_t dflt,
                                              std::int64_t min) {
  const auto* v = body.if_contains(key);
  if (!v || v->is_null()) return dflt;
  if (!v->is_int64() || v->get_int64() < min) {
    return std::unexpected(bad(std::string("'") + key + "' must be an integer >= " + std::to_string(min), key));
  }
  return v->get_int64();
}

// What the answers of every prompt of a request share.
struct AnswerRule {
  std::uint32_t n = 1;
  std::optional<std::int64_t> max_tokens;  // absent: what is left of the context
  std::uint64_t min_tokens = 0;
  std::int64_t seed = 0;
  bool ignore_eos = false;
  std::string_view prompt_param;  // what a too-long prompt's error names
};

// Checks `prompt` against the model's context and KV cache, as vLLM checks
// each prompt of a batch, then adds it and its n answers to `r` (the choice
// index of answer i is prompt x n + i).
std::optional<SimError> add_prompt(const PromptText& prompt, const AnswerRule& rule, const RequestLimits& limits,
                                   SimRequest& r) {
  const engine::EngineConfig& config = *limits.config;
  engine::PromptBlocks blocks = engine::prompt_blocks(prompt.text, config.block_size, engine::hash_bytes(limits.model));
  const std::uint64_t tokens = blocks.num_tokens;
  const std::string_view base(prompt.text.data(), prompt.base_size);
  const std::string_view continued = std::string_view(prompt.text).substr(prompt.base_size);
  r.text_offset = continued.empty() ? 0 : engine::count_tokens(continued);  // chat's one prompt only
  const std::uint64_t first_seed = engine::text_seed(limits.seed, limits.model, base, rule.seed);

  const std::uint64_t max_len = config.max_model_len;
  if (tokens >= max_len) {
    return bad("This model's maximum context length is " + std::to_string(max_len) +
                   " tokens. However, your request has " + std::to_string(tokens) + " input tokens.",
               std::string(rule.prompt_param));
  }
  const std::uint64_t max_tokens = rule.max_tokens ? static_cast<std::uint64_t>(*rule.max_tokens) : max_len - tokens;
  if (tokens + max_tokens > max_len) {
    return bad("This model's maximum context length is " + std::to_string(max_len) +
                   " tokens. However, you requested " + std::to_string(tokens + max_tokens) + " tokens (" +
                   std::to_string(tokens) + " in the messages, " + std::to_string(max_tokens) + " in the completion).",
               "max_tokens");
  }
  if (rule.min_tokens > max_tokens) {
    return bad("min_tokens must be less than or equal to max_tokens=" + std::to_string(max_tokens), "min_tokens");
  }
  // The last token's KV is never stored; beyond the whole cache it can never run.
  const std::uint64_t kv_tokens = engine::kv_cache_tokens(config);
  if (tokens + max_tokens - 1 > kv_tokens) {
    return bad("prompt plus max_tokens exceeds the KV cache of " + std::to_string(kv_tokens) + " tokens", "max_tokens");
  }

  const auto prompt_index = static_cast<std::uint32_t>(r.prompts.size());
  r.prompts.push_back({.tokens = blocks.num_tokens, .block_hashes = std::move(blocks.block_hashes)});
  const auto cap = static_cast<std::uint32_t>(max_tokens);
  for (std::uint32_t i = 0; i < rule.n; ++i) {
    SimAnswer& a = r.answers.emplace_back();
    a.prompt = prompt_index;
    a.text_seed = i == 0 ? first_seed : mix(first_seed + i);
    if (rule.ignore_eos || limits.output_mean_tokens == 0) {
      a.output_tokens = cap;
    } else {
      const std::uint32_t natural = engine::generation_length(
          {.max_tokens = std::numeric_limits<std::uint32_t>::max(), .natural_mean = limits.output_mean_tokens,
           .seed = a.text_seed});
      const std::uint32_t remaining = natural > r.text_offset ? natural - r.text_offset : 1;
      const std::uint32_t lower = std::clamp<std::uint32_t>(static_cast<std::uint32_t>(rule.min_tokens), 1, cap);
      a.output_tokens = std::clamp(remaining, lower, cap);
    }
    a.finish_length = a.output_tokens == cap;
  }
  return std::nullopt;
}

}  // namespace

std::expected<SimRequest, SimError> parse_sim_request(Route route, std::string_view body,
                                                      const RequestLimits& limits) {
  auto parsed = parse_request(route, std::string(body));
  if (!parsed) return std::unexpected(SimError{parsed.error().status(), parsed.error().message, parsed.error().param});
  const RequestInfo& info = parsed->info;
  const json::object& obj = parsed->body();
  std::uint32_t adapter = 0;
  if (info.model != limits.model) {
    const std::vector<std::string> none;
    const std::vector<std::string>& names = limits.adapters ? *limits.adapters : none;
    const auto it = std::find(names.begin(), names.end(), info.model);
    if (it == names.end()) {
      return std::unexpected(SimError{404, "The model `" + info.model + "` does not exist.", "model"});
    }
    adapter = static_cast<std::uint32_t>(it - names.begin()) + 1;
  }
  const engine::EngineConfig& config = *limits.config;

  SimRequest r;
  r.adapter = adapter;
  r.route = route;
  r.stream = info.stream;
  r.include_usage = info.stream && info.include_usage;

  auto n = read_int(obj, "n", 1, 1);
  if (!n) return std::unexpected(n.error());
  if (*n > kMaxAnswers) {
    return std::unexpected(bad("arbiter-sim serves at most " + std::to_string(kMaxAnswers) + " answers (n)", "n"));
  }
  auto priority = read_int(obj, "priority", 0, std::numeric_limits<int>::min());
  if (!priority) return std::unexpected(priority.error());
  if (*priority != 0 && config.policy != engine::SchedulingPolicy::kPriority) {
    return std::unexpected(bad("priority must be 0 when the scheduling policy is fcfs "
                               "(start with --scheduling-policy priority)", "priority"));
  }
  r.priority = static_cast<int>(std::clamp<std::int64_t>(*priority, INT32_MIN, INT32_MAX));
  auto min_tokens = read_int(obj, "min_tokens", 0, 0);
  if (!min_tokens) return std::unexpected(min_tokens.error());
  auto seed = read_int(obj, "seed", 0, std::numeric_limits<std::int64_t>::min());
  if (!seed) return std::unexpected(seed.error());
  bool ignore_eos = false;
  if (const auto* v = obj.if_contains("ignore_eos"); v && !v->is_null()) {
    if (!v->is_bool()) return std::unexpected(bad("'ignore_eos' must be a boolean", "ignore_eos"));
    ignore_eos = v->get_bool();
  }

  std::vector<PromptText> prompts;
  if (route == Route::kResponses) {
    prompts.push_back(responses_prompt(obj));
  } else if (route == Route::kChatCompletions) {
    auto prompt = chat_prompt(obj);
    if (!prompt) return std::unexpected(prompt.error());
    prompts.push_back(std::move(*prompt));
  } else {
    auto batch = completion_prompts(obj);
    if (!batch) return std::unexpected(batch.error());
    prompts = std::move(*batch);
  }
  if (prompts.size() * static_cast<std::size_t>(*n) > static_cast<std::size_t>(kMaxAnswers)) {
    return std::unexpected(bad("arbiter-sim serves at most " + std::to_string(kMaxAnswers) +
                               " answers a request (prompts x n)", "prompt"));
  }
  const AnswerRule rule{.n = static_cast<std::uint32_t>(*n),
                        .max_tokens = info.max_tokens,
                        .min_tokens = static_cast<std::uint64_t>(*min_tokens),
                        .seed = *seed,
                        .ignore_eos = ignore_eos,
                        .prompt_param = route == Route::kChatCompletions ? "messages"
                                        : route == Route::kResponses       ? "input"
                                                                           : "prompt"};
  for (const PromptText& prompt : prompts) {
    if (auto error = add_prompt(prompt, rule, limits, r)) return std::unexpected(std::move(*error));
  }
  return r;
}

}  // namespace arbiter::sim
