#include "core/rollout/shadow_compare.hpp"

#include <algorithm>

#include <boost/json.hpp>

namespace arbiter::rollout {

namespace {

namespace json = boost::json;

// The first choice's text in an answer object or a stream event: a chat
// message's or delta's content, or a completion's text.
void append_choice_text(const json::object& o, std::string& text) {
  const json::value* choices = o.if_contains("choices");
  if (choices == nullptr || !choices->is_array() || choices->as_array().empty()) return;
  const json::value& first = choices->as_array()[0];
  if (!first.is_object()) return;
  const json::object& c = first.as_object();
  for (const char* part : {"message", "delta"}) {
    const json::value* m = c.if_contains(part);
    if (m == nullptr || !m->is_object()) continue;
    const json::value* content = m->as_object().if_contains("content");
    if (content != nullptr && content->is_string()) text += content->as_string();
  }
  const json::value* t = c.if_contains("text");
  if (t != nullptr && t->is_string()) text += t->as_string();
}

std::optional<int64_t> completion_tokens(const json::object& o) {
  const json::value* usage = o.if_contains("usage");
  if (usage == nullptr || !usage->is_object()) return std::nullopt;
  const json::value* n = usage->as_object().if_contains("completion_tokens");
  if (n == nullptr || !n->is_number()) return std::nullopt;
  boost::system::error_code ec;
  const auto v = n->to_number<int64_t>(ec);
  return ec ? std::nullopt : std::optional<int64_t>(v);
}

std::optional<double> percentile(std::vector<double> v, double q) {
  if (v.empty()) return std::nullopt;
  const auto rank = static_cast<std::size_t>(q * static_cast<double>(v.size() - 1) + 0.5);
  std::nth_element(v.begin(), v.begin() + static_cast<std::ptrdiff_t>(rank), v.end());
  return v[rank];
}

}  // namespace

AnswerSummary summarize_answer(std::string_view body, bool stream, int status, double latency_ms) {
  AnswerSummary s;
  s.latency_ms = latency_ms;
  if (status != 200) return s;
  boost::system::error_code ec;
  if (!stream) {
    const json::value v = json::parse(body, ec);
    if (ec || !v.is_object()) return s;
    append_choice_text(v.as_object(), s.text);
    s.output_tokens = completion_tokens(v.as_object());
    s.ok = true;
    return s;
  }
  // SSE: "data: {...}" lines; whole only when it ends with [DONE].
  std::size_t at = 0;
  while (at < body.size()) {
    const std::size_t end = std::min(body.find('\n', at), body.size());
    std::string_view line = body.substr(at, end - at);
    at = end + 1;
    if (!line.starts_with("data:")) continue;
    line.remove_prefix(5);
    while (!line.empty() && line.front() == ' ') line.remove_prefix(1);
    if (line.starts_with("[DONE]")) {
      s.ok = true;
      continue;
    }
    const json::value v = json::parse(line, ec);
    if (ec || !v.is_object()) continue;
    if (v.as_object().contains("error")) return AnswerSummary{.ok = false, .latency_ms = latency_ms, .output_tokens = {}, .text = {}};
    append_choice_text(v.as_object(), s.text);
    if (auto n = completion_tokens(v.as_object())) s.output_tokens = n;
  }
  return s;
}

void ShadowTally::add(const AnswerSummary& primary, const AnswerSummary& shadow, bool deterministic) {
  ++totals_.pairs;
  totals_.primary_errors += primary.ok ? 0 : 1;
  totals_.shadow_errors += shadow.ok ? 0 : 1;
  if (primary_ms_.size() < kKeptLatencies) {
    primary_ms_.push_back(primary.latency_ms);
    shadow_ms_.push_back(shadow.latency_ms);
  } else {
    primary_ms_[next_] = primary.latency_ms;
    shadow_ms_[next_] = shadow.latency_ms;
    next_ = (next_ + 1) % kKeptLatencies;
  }
  if (primary.output_tokens && shadow.output_tokens) {
    primary_tokens_ += static_cast<double>(*primary.output_tokens);
    shadow_tokens_ += static_cast<double>(*shadow.output_tokens);
    ++token_pairs_;
  }
  if (deterministic && primary.ok && shadow.ok) {
    ++totals_.deterministic_pairs;
    totals_.exact_matches += primary.text == shadow.text ? 1 : 0;
  }
}

ShadowReport ShadowTally::report() const {
  ShadowReport r = totals_;
  r.primary_p50_ms = percentile(primary_ms_, 0.5);
  r.primary_p99_ms = percentile(primary_ms_, 0.99);
  r.shadow_p50_ms = percentile(shadow_ms_, 0.5);
  r.shadow_p99_ms = percentile(shadow_ms_, 0.99);
  if (token_pairs_ > 0) {
    r.primary_mean_tokens = primary_tokens_ / static_cast<double>(token_pairs_);
    r.shadow_mean_tokens = shadow_tokens_ / static_cast<double>(token_pairs_);
  }
  return r;
}

}  // namespace arbiter::rollout
