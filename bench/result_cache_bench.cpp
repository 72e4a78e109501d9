// The result cache's per-request work (issue 44, docs/cache.md), by piece,
// for a 1 KiB and a 64 KiB chat body: the key, the near-duplicate text, the
// lookups, the kept answer's conversion and the store's put. The figure
// the issue bounds (a miss: <= 2 us at 1 KiB, <= 20 us at 64 KiB) is
// measured end to end by bench/request_cost.sh against the cache off; these
// say where it goes.
#include <benchmark/benchmark.h>

#include <string>

#include "core/cache/cache_key.hpp"
#include "core/cache/cached_answer.hpp"
#include "core/cache/near_duplicate.hpp"
#include "core/cache/near_index.hpp"
#include "core/cache/result_store.hpp"
#include "core/request_parser.hpp"

namespace arbiter::cache {
namespace {

std::string chat_body(std::size_t bytes) {
  std::string content;
  while (content.size() < bytes) content += "The quick brown fox jumps over the lazy dog. ";
  content.resize(bytes);
  return R"({"model":"m1","messages":[{"role":"user","content":")" + content +
         R"("}],"max_tokens":16,"temperature":0})";
}

const std::string kAnswer =
    R"({"id":"chatcmpl-1","object":"chat.completion","created":1,"model":"m1","choices":[{"index":0,)"
    R"("message":{"role":"assistant","content":")" + std::string(900, 'a') +
    R"("},"logprobs":null,"finish_reason":"stop"}],"usage":{"prompt_tokens":5,"completion_tokens":3,"total_tokens":8}})";

void BM_Key(benchmark::State& state) {
  const ParsedRequest p = *parse_request(Route::kChatCompletions, chat_body(state.range(0)));
  for (auto _ : state) {
    benchmark::DoNotOptimize(cache_key_parts({Route::kChatCompletions, "m1", "tenant:a", std::nullopt}, p.text, p.top_keys()));
  }
}
BENCHMARK(BM_Key)->Arg(1024)->Arg(64 * 1024);

void BM_NearText(benchmark::State& state) {
  const ParsedRequest p = *parse_request(Route::kChatCompletions, chat_body(state.range(0)));
  const KeyParts k = cache_key_parts({Route::kChatCompletions, "m1", "tenant:a", std::nullopt}, p.text, p.top_keys());
  for (auto _ : state) benchmark::DoNotOptimize(near_text(k.prompt));
}
BENCHMARK(BM_NearText)->Arg(1024)->Arg(4096);

void BM_AnswerFromWhole(benchmark::State& state) {
  for (auto _ : state) benchmark::DoNotOptimize(answer_from_whole(Route::kChatCompletions, kAnswer));
}
BENCHMARK(BM_AnswerFromWhole);

void BM_RenderWhole(benchmark::State& state) {
  const CachedAnswer a = *answer_from_whole(Route::kChatCompletions, kAnswer);
  for (auto _ : state) benchmark::DoNotOptimize(render_whole(a, "chatcmpl-2", 1, "m1"));
}
BENCHMARK(BM_RenderWhole);

void BM_StorePutFind(benchmark::State& state) {
  ResultStore store(64 << 20);
  const auto answer = std::make_shared<const StoredAnswer>(StoredAnswer{.raw = kAnswer});
  uint64_t i = 0;
  const auto now = ResultStore::Clock::now();
  for (auto _ : state) {
    const CacheKey k{++i, i};
    store.put(k, "tenant:a", "m1", answer, now, std::chrono::seconds(600));
    benchmark::DoNotOptimize(store.find(k, "tenant:a", "m1", now));
  }
}
BENCHMARK(BM_StorePutFind);

void BM_NearIndexAddFind(benchmark::State& state) {
  NearIndex index(32 << 20);
  const ParsedRequest p = *parse_request(Route::kChatCompletions, chat_body(1024));
  const KeyParts k = cache_key_parts({Route::kChatCompletions, "m1", "tenant:a", std::nullopt}, p.text, p.top_keys());
  const NearText text = near_text(k.prompt);
  uint64_t i = 0;
  for (auto _ : state) {
    benchmark::DoNotOptimize(index.find(++i, text, 0.9));
    index.add(i, {i, i}, text);
  }
}
BENCHMARK(BM_NearIndexAddFind);

// A miss end to end as the cache stage and observer do it: the key, the
// near-duplicate text and both lookups, the answer's bytes copied as they
// go out, kept unread, and the prompt indexed. Distinct prompts (a counter
// in the body), so every lookup misses and the store and index churn at
// their bounds. Arg 1: near-duplicates on.
void BM_Miss(benchmark::State& state) {
  const std::size_t bytes = static_cast<std::size_t>(state.range(0));
  const bool near_on = state.range(1) != 0;
  ResultStore store(128 << 20);
  NearIndex index(32 << 20);
  std::vector<ParsedRequest> bodies;
  for (int i = 0; i < 256; ++i) {
    std::string body = chat_body(bytes);
    body.replace(body.find("The quick"), 9, "Query " + std::to_string(1000 + i));
    bodies.push_back(*parse_request(Route::kChatCompletions, body));
  }
  uint64_t n = 0;
  for (auto _ : state) {
    const ParsedRequest& p = bodies[n++ % bodies.size()];
    const auto now = ResultStore::Clock::now();
    const KeyParts k =
        cache_key_parts({Route::kChatCompletions, "m1", "tenant:" + std::to_string(n), std::nullopt}, p.text, p.top_keys());
    std::optional<NearText> near;
    if (near_on && k.prompt.size() <= 4096) near = near_text(k.prompt);
    benchmark::DoNotOptimize(store.find(k.exact, "tenant:a", "m1", now));
    if (near) benchmark::DoNotOptimize(index.find(k.near_scope, *near, 0.9));
    std::string copy;
    copy.append(kAnswer);  // the tee's copy
    store.put(k.exact, "tenant:a", "m1",
              std::make_shared<const StoredAnswer>(StoredAnswer{.raw = std::move(copy)}), now, std::chrono::seconds(600));
    if (near) index.add(k.near_scope, k.exact, std::move(*near));
  }
}
BENCHMARK(BM_Miss)->Args({1024, 0})->Args({1024, 1})->Args({64 * 1024, 0})->Args({64 * 1024, 1});

}  // namespace
}  // namespace arbiter::cache
