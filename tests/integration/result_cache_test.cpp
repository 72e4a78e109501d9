// The result cache live (issue 44) against a real arbiter-sim: a repeated
// repeatable request is answered by the gateway, whole or streamed as it
// asks, in the shape of a fresh answer and with ids of its own; another
// tenant never gets it; a stream cut by its client is never kept; the
// client's cache-control is honoured; a sampled request is left alone.
#include <gtest/gtest.h>

#include <future>
#include <set>

#include "integration/sim_harness.hpp"
#include "support/free_port.hpp"
#include "support/gateway_config.hpp"
#include "support/gateway_process.hpp"
#include "support/harness.hpp"  // describe_output

namespace arbiter::test {
namespace {

namespace json = boost::json;

GatewayConfig cache_config(uint16_t port) {
  GatewayConfig config;
  config.backend_ports = {port};
  return config;
}

HttpRequest chat(const std::string& extra, const std::string& content = "Name three rivers.",
                 const std::string& key = kAlphaKey, Headers headers = {}) {
  HttpRequest r = sim_post("/v1/chat/completions", sim_chat(extra, content, "m1"));
  r.headers.emplace_back("authorization", "Bearer " + key);
  for (auto& h : headers) r.headers.push_back(std::move(h));
  return r;
}

// A JSON value's shape: its keys and the kinds of their values, recursively
// (an array by its first element); what a replay must match in a fresh
// answer. vLLM's own `stop_reason` (an engine's extension, null) left out.
std::string shape(const json::value& v) {
  switch (v.kind()) {
    case json::kind::object: {
      std::string out = "{";
      std::set<std::string> keys;
      for (const auto& [k, value] : v.as_object()) {
        if (k == "stop_reason") continue;
        keys.insert(std::string(k) + ":" + shape(value));
      }
      for (const auto& k : keys) out += k + ",";
      return out + "}";
    }
    case json::kind::array: return v.as_array().empty() ? "[]" : "[" + shape(v.as_array()[0]) + "]";
    case json::kind::string: return "s";
    case json::kind::int64:
    case json::kind::uint64:
    case json::kind::double_: return "n";
    case json::kind::bool_: return "b";
    case json::kind::null: return "null";
  }
  return "?";
}

// The shapes of a stream's events, in order, [DONE] as itself.
std::vector<std::string> stream_shapes(const std::string& body) {
  std::vector<std::string> out;
  for (const auto& e : split_sse_events(body)) {
    out.push_back(e.starts_with("data: [DONE]") ? "[DONE]" : shape(json::parse(std::string_view(e).substr(6))));
  }
  return out;
}

std::string stream_text(const std::string& body) {
  std::string text;
  for (const auto& o : sse_payloads(body)) {
    const auto& choices = o.at("choices").as_array();
    if (choices.empty()) continue;
    const auto* delta = choices[0].as_object().if_contains("delta");
    if (delta && delta->as_object().contains("content")) text += delta->at("content").as_string();
  }
  return text;
}

double stored(GatewayProcess& gateway, double least) {
  return gateway.wait_for_metric("arbiter_cache_fills_total", [&](double v) { return v >= least; }, Millis(10'000),
                                 {{"model", "m1"}, {"class", "chat"}, {"result", "stored"}})
      .value_or(0);
}

TEST(ResultCache, ARepeatIsAnsweredByTheGatewayWholeOrStreamedInTheFreshShape) {
  SimProcess sim({"--model", "m1"});
  GatewayProcess gateway(cache_config(sim.port()).to_yaml());
  const std::string greedy = "\"temperature\":0,\"max_tokens\":12";

  const HttpResponse fresh = http_call(gateway.port(), chat(greedy));
  ASSERT_EQ(fresh.status, 200) << fresh.body << describe_output(gateway);
  EXPECT_EQ(fresh.header("x-arbiter-cache"), "miss");
  ASSERT_GE(stored(gateway, 1), 1) << describe_output(gateway);

  const HttpResponse whole = http_call(gateway.port(), chat(greedy));
  ASSERT_EQ(whole.status, 200);
  EXPECT_EQ(whole.header("x-arbiter-cache"), "hit");
  EXPECT_TRUE(whole.header("age"));
  EXPECT_EQ(shape(whole.json()), shape(fresh.json()));
  EXPECT_EQ(whole.json().at("choices").at(0).at("message").at("content"),
            fresh.json().at("choices").at(0).at("message").at("content"));
  EXPECT_EQ(whole.json().at("usage"), fresh.json().at("usage"));
  EXPECT_NE(whole.json().at("id"), fresh.json().at("id"));  // ids of its own

  // Streamed, with usage: the events a fresh stream of another prompt has.
  const std::string streamed = greedy + ",\"stream\":true,\"stream_options\":{\"include_usage\":true}";
  const HttpResponse fresh_stream = http_call(gateway.port(), chat(streamed, "Name three seas."));
  ASSERT_EQ(fresh_stream.status, 200);
  const HttpResponse hit_stream = http_call(gateway.port(), chat(streamed));
  ASSERT_EQ(hit_stream.status, 200);
  EXPECT_EQ(hit_stream.header("x-arbiter-cache"), "hit");
  EXPECT_EQ(hit_stream.header("content-type"), "text/event-stream");
  EXPECT_EQ(stream_text(hit_stream.body), fresh.json().at("choices").at(0).at("message").at("content").as_string());
  // A fresh stream sends its text a token an event; the replay in one: the
  // same shapes, fewer content events.
  std::vector<std::string> fresh_shapes = stream_shapes(fresh_stream.body);
  fresh_shapes.erase(std::unique(fresh_shapes.begin(), fresh_shapes.end()), fresh_shapes.end());
  EXPECT_EQ(stream_shapes(hit_stream.body), fresh_shapes);
  EXPECT_EQ(stream_usage_tokens(hit_stream.body), usage_tokens(fresh.json().at("usage")));

  // The engine generated the first answer and the other prompt only.
  EXPECT_EQ(gateway.wait_for_metric("arbiter_cache_requests_total", [](double v) { return v >= 2; }, Millis(10'000),
                                    {{"model", "m1"}, {"class", "chat"}, {"result", "hit"}}),
            2);
}

TEST(ResultCache, AnotherTenantNeverGetsIt) {
  SimProcess sim({"--model", "m1"});
  GatewayProcess gateway(cache_config(sim.port()).to_yaml());
  const std::string greedy = "\"temperature\":0,\"max_tokens\":8";
  ASSERT_EQ(http_call(gateway.port(), chat(greedy)).status, 200);
  ASSERT_GE(stored(gateway, 1), 1);
  const HttpResponse beta = http_call(gateway.port(), chat(greedy, "Name three rivers.", kBetaKey));
  ASSERT_EQ(beta.status, 200);
  EXPECT_EQ(beta.header("x-arbiter-cache"), "miss");
  EXPECT_EQ(http_call(gateway.port(), chat(greedy)).header("x-arbiter-cache"), "hit");
}

TEST(ResultCache, AStreamItsClientCutIsNeverKept) {
  SimProcess sim({"--model", "m1"});
  GatewayProcess gateway(cache_config(sim.port()).to_yaml());
  const std::string long_stream = "\"temperature\":0,\"max_tokens\":400,\"min_tokens\":400,\"stream\":true";
  {
    HttpConnection conn(gateway.port());
    conn.send(chat(long_stream));
    ASSERT_EQ(conn.read_head().status, 200);
    ASSERT_GE(conn.read_events(3).size(), 3u);
    conn.close_abruptly();
  }
  EXPECT_GE(gateway.wait_for_metric("arbiter_cache_fills_total", [](double v) { return v >= 1; }, Millis(10'000),
                                    {{"model", "m1"}, {"class", "chat"}, {"result", "failed"}})
                .value_or(0),
            1);
  const HttpResponse again = http_call(gateway.port(), chat("\"temperature\":0,\"max_tokens\":400,\"min_tokens\":400"),
                                       Millis(60'000));
  ASSERT_EQ(again.status, 200);
  EXPECT_EQ(again.header("x-arbiter-cache"), "miss");
}

TEST(ResultCache, TheClientsCacheControlAndSampledRequests) {
  SimProcess sim({"--model", "m1"});
  GatewayProcess gateway(cache_config(sim.port()).to_yaml());
  const std::string greedy = "\"temperature\":0,\"max_tokens\":8";
  // no-store: neither answered from nor kept.
  const HttpResponse no_store = http_call(gateway.port(), chat(greedy, "Hi.", kAlphaKey, {{"cache-control", "no-store"}}));
  ASSERT_EQ(no_store.status, 200);
  EXPECT_FALSE(no_store.header("x-arbiter-cache"));
  EXPECT_EQ(http_call(gateway.port(), chat(greedy, "Hi.")).header("x-arbiter-cache"), "miss");
  ASSERT_GE(stored(gateway, 1), 1);
  // no-cache: a fresh answer although one is kept.
  EXPECT_EQ(http_call(gateway.port(), chat(greedy, "Hi.", kAlphaKey, {{"cache-control", "no-cache"}}))
                .header("x-arbiter-cache"),
            "miss");
  EXPECT_EQ(http_call(gateway.port(), chat(greedy, "Hi.")).header("x-arbiter-cache"), "hit");
  ASSERT_GE(stored(gateway, 2), 2);  // no-cache's fresh answer was kept
  // A sampled request (the default temperature) is not the cache's.
  EXPECT_FALSE(http_call(gateway.port(), chat("\"max_tokens\":8", "Hi.")).header("x-arbiter-cache"));
  EXPECT_GE(gateway.wait_for_metric("arbiter_cache_requests_total", [](double v) { return v >= 1; }, Millis(10'000),
                                    {{"model", "m1"}, {"class", "chat"}, {"result", "sampled"}})
                .value_or(0),
            1);
}

// Identical requests in flight share one generation; the leader's client
// leaving hands it to the follower instead of aborting it.
TEST(ResultCache, ACoalescedFollowerGetsTheWholeStreamWhenTheLeaderIsCancelled) {
  // A slower engine: the generation outlasts the follower's arrival.
  SimProcess sim({"--model", "m1", "--profile", "llama-70b-h100x8"});
  GatewayProcess gateway(cache_config(sim.port()).to_yaml());
  const std::string body =
      "\"temperature\":0,\"max_tokens\":400,\"min_tokens\":400,\"stream\":true";
  HttpConnection leader(gateway.port());
  leader.send(chat(body, "Write a long story."));
  ASSERT_EQ(leader.read_head().status, 200);
  ASSERT_GE(leader.read_events(2).size(), 2u);

  auto follower = std::async(std::launch::async,
                             [&] { return http_call(gateway.port(), chat(body, "Write a long story."), Millis(60'000)); });
  ASSERT_EQ(gateway.wait_for_metric("arbiter_cache_requests_total", [](double v) { return v >= 1; }, Millis(10'000),
                                    {{"model", "m1"}, {"class", "chat"}, {"result", "coalesced"}}),
            1)
      << describe_output(gateway);
  leader.close_abruptly();

  const HttpResponse got = follower.get();
  ASSERT_EQ(got.status, 200) << got.body;
  EXPECT_EQ(got.header("x-arbiter-cache"), "coalesced");
  EXPECT_TRUE(got.body.ends_with("data: [DONE]\n\n"));
  EXPECT_EQ(word_count(stream_text(got.body)), 400u);
  // One generation, finished, none aborted; then kept for the next one.
  EXPECT_EQ(sim.wait_for_metric("vllm:request_success_total", [](double v) { return v >= 1; }, Millis(10'000),
                                {{"model_name", "m1"}, {"finished_reason", "length"}}),
            1);
  EXPECT_EQ(sim.metric("arbiter_sim_requests_aborted_total").value_or(-1), 0);
  ASSERT_GE(stored(gateway, 1), 1);
  EXPECT_EQ(http_call(gateway.port(), chat(body, "Write a long story.")).header("x-arbiter-cache"), "hit");
}

// /v1/embeddings: proxied in its own class, the same input the same vector,
// repeats answered by the cache as the engine wrote them.
TEST(ResultCache, EmbeddingsAreProxiedScheduledAndCached) {
  SimProcess sim({"--model", "m1"});
  GatewayProcess gateway(cache_config(sim.port()).to_yaml());
  const auto embed = [&](const std::string& input) {
    HttpRequest r = sim_post("/v1/embeddings", R"({"model":"m1","input":)" + input + "}");
    r.headers.emplace_back("authorization", std::string("Bearer ") + kAlphaKey);
    return http_call(gateway.port(), r);
  };
  const HttpResponse first = embed(R"(["a cat sat", "on the mat"])");
  ASSERT_EQ(first.status, 200) << first.body << describe_output(gateway);
  EXPECT_EQ(first.header("x-arbiter-cache"), "miss");
  const boost::json::value doc = first.json();
  const auto& data = doc.at("data").as_array();
  ASSERT_EQ(data.size(), 2u);
  EXPECT_EQ(data[0].at("embedding").as_array().size(), 16u);
  EXPECT_NE(data[0].at("embedding"), data[1].at("embedding"));
  EXPECT_EQ(doc.at("usage").at("prompt_tokens"), 6);
  ASSERT_GE(gateway.wait_for_metric("arbiter_cache_fills_total", [](double v) { return v >= 1; }, Millis(10'000),
                                    {{"model", "m1"}, {"class", "embeddings"}, {"result", "stored"}})
                .value_or(0),
            1);
  const HttpResponse again = embed(R"(["a cat sat", "on the mat"])");
  EXPECT_EQ(again.header("x-arbiter-cache"), "hit");
  EXPECT_EQ(again.body, first.body);  // an embedding has no id of its own: the same bytes
  const HttpResponse other = embed(R"("a cat sat")");
  EXPECT_EQ(other.header("x-arbiter-cache"), "miss");
  EXPECT_EQ(other.json().at("data").at(0).at("embedding"), data[0].at("embedding"));  // deterministic
  // No input: the gateway's own 400, naming the field.
  const HttpResponse bad = embed("null");
  EXPECT_EQ(bad.status, 400);
  EXPECT_EQ(bad.json().at("error").at("param"), "input");
}

// POST /admin/cache/flush on the admin listener: answers kept before it
// are gone (a model's, or all); other methods and unknown models refused.
TEST(ResultCache, TheAdminFlushDropsKeptAnswers) {
  SimProcess sim({"--model", "m1"});
  GatewayProcess gateway(cache_config(sim.port()).to_yaml());
  const std::string greedy = "\"temperature\":0,\"max_tokens\":8";
  ASSERT_EQ(http_call(gateway.port(), chat(greedy, "Flush me.")).status, 200);
  ASSERT_GE(stored(gateway, 1), 1);
  ASSERT_EQ(http_call(gateway.port(), chat(greedy, "Flush me.")).header("x-arbiter-cache"), "hit");

  EXPECT_EQ(http_post(gateway.admin_port(), "/admin/cache/flush?model=nope", "").status, 400);
  const HttpResponse get = http_get(gateway.admin_port(), "/admin/cache/flush");
  EXPECT_EQ(get.status, 405);
  EXPECT_EQ(get.header("allow"), "POST");
  EXPECT_EQ(http_post(gateway.port(), "/admin/cache/flush", "").status, 404);  // never on the public port

  const HttpResponse flushed = http_post(gateway.admin_port(), "/admin/cache/flush?model=m1", "");
  ASSERT_EQ(flushed.status, 200) << flushed.body;
  EXPECT_EQ(flushed.json().at("flushed").at("local"), 1);
  EXPECT_TRUE(flushed.json().at("flushed").at("shared").is_null());  // no shared store here
  EXPECT_EQ(http_call(gateway.port(), chat(greedy, "Flush me.")).header("x-arbiter-cache"), "miss");
}

TEST(ResultCache, ANearDuplicateIsAnsweredAndSaysSo) {
  SimProcess sim({"--model", "m1"});
  GatewayProcess gateway(cache_config(sim.port()).to_yaml());
  const std::string greedy = "\"temperature\":0,\"max_tokens\":8";
  ASSERT_EQ(http_call(gateway.port(), chat(greedy, "Please name three rivers in Europe.")).status, 200);
  ASSERT_GE(stored(gateway, 1), 1);
  const HttpResponse near = http_call(gateway.port(), chat(greedy, "name three rivers in europe"));
  ASSERT_EQ(near.status, 200);
  EXPECT_EQ(near.header("x-arbiter-cache"), "near");
  EXPECT_EQ(near.header("x-arbiter-cache-similarity"), "1.000");
  // Another word is another prompt; so is another max_tokens.
  EXPECT_EQ(http_call(gateway.port(), chat(greedy, "name three rivers in asia")).header("x-arbiter-cache"), "miss");
  EXPECT_EQ(http_call(gateway.port(), chat("\"temperature\":0,\"max_tokens\":9", "name three rivers in europe"))
                .header("x-arbiter-cache"),
            "miss");
}

// The semantic mode (cache.semantic_model): a prompt in other words than a
// kept one, near by its embedding (arbiter-sim's: a hashed bag of words),
// is answered from the cache and says how it was found; another tenant's
// never is; an unrelated prompt misses; an embeddings engine that fails
// costs a miss, never an error.
GatewayConfig semantic_config(uint16_t chat_port, uint16_t embeddings_port) {
  GatewayConfig config = cache_config(chat_port);
  config.models_extra =
      "  - name: emb\n    backends:\n      - {url: \"http://127.0.0.1:" + std::to_string(embeddings_port) + "\"}\n";
  config.extra = "cache: {semantic_model: emb, semantic_dimensions: 256, semantic_threshold: 0.9}\n";
  return config;
}

// The embeddings asked for with `result`, once at least `least` (0: as it
// stands; a count never reported reads 0).
double embeddings(GatewayProcess& gateway, const std::string& result, double least) {
  return gateway.wait_for_metric("arbiter_cache_embeddings_total", [&](double v) { return v >= least; },
                                 Millis(least > 0 ? 10'000 : 1'000), {{"result", result}})
      .value_or(0);
}

TEST(ResultCache, ASemanticNearDuplicateIsAnsweredAndSaysSoWithinItsScopeOnly) {
  SimProcess sim({"--model", "m1"});
  SimProcess embedder({"--model", "emb"});
  GatewayProcess gateway(semantic_config(sim.port(), embedder.port()).to_yaml());
  const std::string greedy = "\"temperature\":0,\"max_tokens\":8";
  const std::string asked = "Which river flows through the city of Vienna in Austria today?";
  const HttpResponse first = http_call(gateway.port(), chat(greedy, asked));
  ASSERT_EQ(first.status, 200) << first.body << describe_output(gateway);
  EXPECT_EQ(first.header("x-arbiter-cache"), "miss");
  ASSERT_GE(stored(gateway, 1), 1);
  // The same words in another order: another prompt to the lexical index,
  // the same bag of words to the embedding.
  const std::string reworded = "Today, which river flows through the city of Vienna in Austria?";
  const HttpResponse near = http_call(gateway.port(), chat(greedy, reworded));
  ASSERT_EQ(near.status, 200) << near.body;
  EXPECT_EQ(near.header("x-arbiter-cache"), "near");
  EXPECT_EQ(near.header("x-arbiter-cache-match"), "semantic");
  EXPECT_EQ(near.header("x-arbiter-cache-similarity"), "1.000");
  EXPECT_EQ(near.json().at("choices").at(0).at("message").at("content"),
            first.json().at("choices").at(0).at("message").at("content"));
  EXPECT_GE(gateway.wait_for_metric("arbiter_cache_requests_total", [](double v) { return v >= 1; }, Millis(10'000),
                                    {{"model", "m1"}, {"class", "chat"}, {"result", "semantic"}})
                .value_or(0),
            1);
  // Another tenant, the same words: never another tenant's answer.
  const HttpResponse beta = http_call(gateway.port(), chat(greedy, reworded, kBetaKey));
  ASSERT_EQ(beta.status, 200) << beta.body;
  EXPECT_EQ(beta.header("x-arbiter-cache"), "miss");
  // An unrelated question misses.
  EXPECT_EQ(http_call(gateway.port(), chat(greedy, "Name three rivers in Asia.")).header("x-arbiter-cache"), "miss");
  EXPECT_GE(embeddings(gateway, "ok", 4), 4);
  EXPECT_EQ(embeddings(gateway, "failed", 0), 0);
  // Connections are kept alive between embeddings: at most one per I/O
  // thread for these one-at-a-time requests, not one per embedding.
  const auto opened =
      gateway.wait_for_metric("arbiter_cache_embedding_connections_total", [](double v) { return v >= 1; }, Millis(10'000));
  ASSERT_TRUE(opened) << describe_output(gateway);
  EXPECT_LE(*opened, semantic_config(sim.port(), embedder.port()).threads);
}

// A class's `cache: {near: false}` switches the semantic mode off for it too:
// no embedding is asked for, a reworded prompt misses.
TEST(ResultCache, AClassWithoutNearHitsAsksForNoEmbedding) {
  SimProcess sim({"--model", "m1"});
  SimProcess embedder({"--model", "emb"});
  GatewayConfig config = semantic_config(sim.port(), embedder.port());
  config.extra += "classes:\n  - {name: chat, cache: {near: false}}\n";
  GatewayProcess gateway(config.to_yaml());
  const std::string greedy = "\"temperature\":0,\"max_tokens\":8";
  ASSERT_EQ(http_call(gateway.port(), chat(greedy, "Which river flows through the city of Vienna?")).status, 200)
      << describe_output(gateway);
  ASSERT_GE(stored(gateway, 1), 1);
  EXPECT_EQ(http_call(gateway.port(), chat(greedy, "Through the city of Vienna which river flows?"))
                .header("x-arbiter-cache"),
            "miss");
  EXPECT_EQ(http_call(gateway.port(), chat(greedy, "Which river flows through the city of Vienna?"))
                .header("x-arbiter-cache"),
            "hit");
  // None was asked for (the answers above are all counted by now).
  for (const char* result : {"ok", "failed", "timeout", "no_backend"}) EXPECT_EQ(embeddings(gateway, result, 0), 0) << result;
}

TEST(ResultCache, AnEmbeddingsEngineThatFailsCostsAMissNeverAnError) {
  SimProcess sim({"--model", "m1"});
  const uint16_t closed = free_port();  // nothing listens there
  GatewayProcess gateway(semantic_config(sim.port(), closed).to_yaml());
  const std::string greedy = "\"temperature\":0,\"max_tokens\":8";
  for (int i = 0; i < 3; ++i) {
    const HttpResponse r = http_call(gateway.port(), chat(greedy, "Which river flows through Vienna, question " +
                                                                      std::to_string(i) + "?"));
    ASSERT_EQ(r.status, 200) << r.body << describe_output(gateway);
    EXPECT_EQ(r.header("x-arbiter-cache"), "miss");
  }
  EXPECT_GE(embeddings(gateway, "failed", 3), 3);
  // Its exact repeat is still a hit (the store does not need the embedding).
  ASSERT_GE(stored(gateway, 3), 3);
  EXPECT_EQ(http_call(gateway.port(), chat(greedy, "Which river flows through Vienna, question 0?"))
                .header("x-arbiter-cache"),
            "hit");
}

// At the overload `high` stage a degradable class takes near hits at the
// looser threshold (0.8: one typo in five words), the protected one does not.
TEST(ResultCache, UnderOverloadADegradableClassTakesALooserNearMatch) {
  SimProcess sim({"--model", "m1"});
  GatewayConfig config = cache_config(sim.port());
  config.max_concurrency = 2;
  config.engine_signals = true;
  config.alpha_classes = "[critical, chat]";
  // L = busy: one stream on the two slots is 0.5, the high stage.
  config.extra = "degradation: {enabled: true, weight_busy: 1, weight_kv: 0, weight_queue: 0, weight_cache_miss: 0, "
                 "smoothing_ms: 0, elevated_at: 0.2, high_at: 0.4, shed_at: 1, hold_ms: 300}\n";
  GatewayProcess gateway(config.to_yaml());
  const auto ask = [&](const std::string& content, const std::string& cls) {
    HttpRequest r = gateway_post("/v1/chat/completions",
                                 sim_chat("\"temperature\":0,\"max_tokens\":8", content, "m1"), kAlphaKey, cls);
    return http_call(gateway.port(), r);
  };
  // summarize history of portugal briefly: five words.
  ASSERT_EQ(ask("Summarize the history of Portugal briefly.", "chat").status, 200);
  ASSERT_GE(stored(gateway, 1), 1) << describe_output(gateway);
  // That request alone may have lifted the stage for hold_ms (one stream on
  // two slots is the high stage): the premise here is no overload.
  ASSERT_EQ(gateway.wait_for_metric("arbiter_degradation_stage", [](double v) { return v == 0; }, Millis(30'000),
                                    {{"pool", "m1"}}),
            0)
      << describe_output(gateway);
  EXPECT_EQ(ask("Summarize the histroy of Portugal briefly.", "chat").header("x-arbiter-cache"), "miss");  // 0.8 < 0.9

  auto load = std::async(std::launch::async, [&] {
    return http_call(gateway.port(),
                     gateway_post("/v1/chat/completions", sim_chat("\"max_tokens\":150,\"min_tokens\":150,\"stream\":true",
                                                                   "Write a report.", "m1"),
                                  kAlphaKey, "chat"),
                     Millis(120'000));
  });
  ASSERT_EQ(gateway.wait_for_metric("arbiter_degradation_stage", [](double v) { return v >= 2; }, Millis(30'000),
                                    {{"pool", "m1"}}),
            2)
      << describe_output(gateway);
  const HttpResponse degraded = ask("Summarize the hsitory of Portugal briefly.", "chat");
  EXPECT_EQ(degraded.header("x-arbiter-cache"), "near");
  EXPECT_EQ(degraded.header("x-arbiter-cache-similarity"), "0.800");
  EXPECT_EQ(ask("Summarize the hsitory of Portugal briefly.", "critical").header("x-arbiter-cache"), "miss");
  EXPECT_EQ(load.get().status, 200);
}

}  // namespace
}  // namespace arbiter::test
