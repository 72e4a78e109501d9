#include "gateway/stages/cache/cache_stage.hpp"

#include <chrono>

#include <fmt/format.h>

#include "core/cache/cache_policy.hpp"

namespace arbiter {

// What the stage found out about a request it takes, from admit() to
// admit_async().
struct CacheLookup {
  cache::KeyParts key;  // its prompt view points into the body, unchanged until admission ends
  std::string scope;
  cache::CacheUse use;
  std::optional<std::chrono::steady_clock::duration> max_age;  // cache-control: max-age
  std::optional<cache::NearText> near;  // its words, for the lexical index
  bool embed = false;                   // its embedding is to be asked for (semantic mode)
  std::vector<float> embedding;         // and here it is, for the semantic index
  uint64_t semantic_scope = 0;          // the near scope and the messages before the last
};

namespace {

// What a hit keeps between admit() and admit_async().
struct CacheHit {
  std::shared_ptr<const cache::StoredAnswer> answer;  // read (answer set)
  std::chrono::steady_clock::duration age{};
  std::optional<double> similarity;  // a near hit's
  bool semantic = false;             // found by the semantic index
};

// A request following an identical one in flight (flight.hpp).
struct CacheFollow {
  std::shared_ptr<Flight> flight;
};

// The flight's key: the answer's key and its shape (a follower replays the
// leader's bytes as they are).
cache::CacheKey flight_key(const cache::CacheKey& key, const RequestInfo& info) {
  return {key.hi ^ (info.stream ? 0x5bd1e9955bd1e995ULL : 0), key.lo ^ (info.include_usage ? 0xc2b2ae3d27d4eb4fULL : 0)};
}

std::string scope_of(const RequestContext& ctx, cache::Scope scope) {
  switch (scope) {
    case cache::Scope::kTenant: return "tenant:" + ctx.rec.tenant;
    case cache::Scope::kTeam: return "team:" + ctx.rec.team;
    case cache::Scope::kGlobal: return "global";
  }
  return "tenant:" + ctx.rec.tenant;
}

// The semantic index's scope: the request without its prompt, and the
// prompt's messages before the last (they must be the same).
uint64_t semantic_scope(uint64_t near_scope, uint64_t context) {
  return near_scope ^ (context * 0x9e3779b97f4a7c15ULL + 0x632be59bd9b4e019ULL);
}

// chatcmpl-... / cmpl-... from the request's id: its own, as a fresh answer's.
std::string answer_id(const RequestContext& ctx) {
  return (ctx.parsed.info.route == Route::kChatCompletions ? "chatcmpl-" : "cmpl-") + ctx.rec.request_id;
}

}  // namespace

std::optional<cache::ResultStore::Hit> CacheStage::read(const cache::CacheKey& key, std::string_view scope,
                                                        std::string_view model, cache::ResultStore::Clock::time_point now,
                                                        std::optional<cache::ResultStore::Clock::duration> max_age) {
  auto hit = cache_.store().find(key, scope, model, now, max_age);
  if (!hit || hit->answer->answer) return hit;
  // Its first hit: the bytes read once, the entry keeps what was read.
  auto answer = cache::read_answer(*hit->answer);
  if (!answer) {
    cache_.store().erase(key);  // not an answer a cache replays (tool calls, several choices)
    return std::nullopt;
  }
  auto read = std::make_shared<const cache::StoredAnswer>(
      cache::StoredAnswer{.route = hit->answer->route, .answer = std::move(answer)});
  cache_.store().replace(key, hit->answer.get(), read);
  hit->answer = std::move(read);
  return hit;
}

void CacheStage::count(const RequestContext& ctx, std::string_view result) {
  cache_.metrics().requests.with({ctx.parsed.info.model, ctx.rec.cls, result}).inc();
}

bool CacheStage::degraded(const RequestContext& ctx) const {
  const Config& config = ctx.runtime->config;
  return config.degradation.enabled && overload_.stage(ctx.pool()) >= overload::Stage::kHigh &&
         !overload_.actions(ctx.cls).protect;
}

Verdict CacheStage::admit(RequestContext& ctx) {
  const Config& config = ctx.runtime->config;
  const cache::CacheConfig& settings = config.cache;
  const ClassConfig& cls = config.classes[ctx.cls];
  const bool enabled = settings.enabled && cls.cache.enabled.value_or(true) && config.models[ctx.pool()].cache;
  if (!enabled) return Verdict::go();
  const RequestInfo& info = ctx.parsed.info;
  const cache::CacheDirectives directives = cache::read_cache_control(ctx.req["cache-control"]);
  const cache::CacheUse use = cache::decide_cache_use(info, directives, true, cls.cache.tools);
  if (!use.lookup && !use.store) {
    count(ctx, use.skipped);
    return Verdict::go();
  }
  std::string scope = scope_of(ctx, settings.scope);
  const cache::KeyParts key = cache::cache_key_parts({info.route, info.model, scope, cls.max_tokens_cap},
                                                     ctx.parsed.text, ctx.parsed.top_keys());
  CacheLookup& lookup = ctx.slots.emplace<CacheLookup>(CacheLookup{.key = key, .scope = std::move(scope), .use = use});
  if (directives.max_age_s) lookup.max_age = std::chrono::seconds(*directives.max_age_s);
  if (use.lookup) {
    if (auto hit = read(key.exact, lookup.scope, info.model, std::chrono::steady_clock::now(), lookup.max_age)) {
      return found(ctx, std::move(*hit), std::nullopt, "hit");
    }
    // Not here: the replicas' store is asked next, from admit_async.
    if (cache_.shared() && cache_.shared()->available()) return Verdict::wait();
  }
  return after_miss(ctx, lookup);
}

Verdict CacheStage::found(RequestContext& ctx, cache::ResultStore::Hit hit, std::optional<double> similarity,
                          std::string_view result) {
  count(ctx, result);
  const bool semantic = result == "semantic";
  ctx.rec.cache = semantic ? "semantic" : similarity ? "near" : "hit";
  ctx.slots.emplace<CacheHit>(CacheHit{std::move(hit.answer), hit.age, similarity, semantic});
  return Verdict::wait();
}

Verdict CacheStage::after_miss(RequestContext& ctx, CacheLookup& lookup) {
  const Config& config = ctx.runtime->config;
  const cache::CacheConfig& settings = config.cache;
  const bool near_on = config.classes[ctx.cls].cache.near.value_or(true);
  const RequestInfo& info = ctx.parsed.info;
  const cache::KeyParts& key = lookup.key;
  // Near duplicates: a prompt of words, short enough; not an embedding (a
  // near input has another vector).
  const bool words = near_on && info.route != Route::kEmbeddings && !key.prompt.empty();
  if (words && settings.near && key.prompt.size() <= settings.near_max_prompt_bytes) {
    lookup.near = cache::near_text(key.prompt);
    if (lookup.near->words < cache::kMinNearWords) lookup.near.reset();
  }
  if (lookup.use.lookup && lookup.near) {
    const double threshold = degraded(ctx) ? settings.near_degraded_threshold : settings.near_threshold;
    if (auto candidate = cache_.near().find(key.near_scope, *lookup.near, threshold)) {
      if (auto hit = read(candidate->key, lookup.scope, info.model, std::chrono::steady_clock::now(), lookup.max_age)) {
        return found(ctx, std::move(*hit), candidate->similarity, "near");
      }
    }
  }
  // The semantic mode: the prompt's embedding is asked for (admit_async),
  // to look it up and, on a miss, to keep it with the answer. An identical
  // request in flight is followed first: it needs no embedding.
  if (words && !settings.semantic_model.empty() && key.prompt.size() <= settings.semantic_max_prompt_bytes) {
    if (join_flight(ctx, lookup)) return Verdict::wait();
    lookup.embed = true;
    return Verdict::wait();
  }
  return miss(ctx, lookup);
}

bool CacheStage::join_flight(RequestContext& ctx, const CacheLookup& lookup) {
  if (!lookup.use.lookup) return false;
  const RequestInfo& info = ctx.parsed.info;
  auto flight = cache_.flights().join(flight_key(lookup.key.exact, info), lookup.scope, info.model);
  if (!flight) return false;
  count(ctx, "coalesced");
  ctx.rec.cache = "coalesced";
  ctx.slots.emplace<CacheFollow>(CacheFollow{std::move(flight)});
  return true;
}

Task<Verdict> CacheStage::semantic(RequestContext& ctx, CacheLookup& lookup) {
  lookup.embed = false;
  const cache::CacheConfig& settings = ctx.runtime->config.cache;
  EmbeddedPrompt prompt = embedded_prompt(lookup.key.prompt);
  lookup.semantic_scope = semantic_scope(lookup.key.near_scope, prompt.context);
  Embedder::Embedding e = co_await cache_.embedder().embed(*ctx.runtime, std::move(prompt.text));
  cache_.metrics().embeddings.with({embedder_result_name(e.result)}).inc();
  if (e.connected) cache_.metrics().embedding_connections.with({}).inc();
  if (e.result == Embedder::Result::kOk) {  // the index scales it to unit length (a zero vector finds nothing)
    if (lookup.use.lookup) {
      const double threshold = degraded(ctx) ? settings.semantic_degraded_threshold : settings.semantic_threshold;
      if (auto candidate = cache_.semantic().find(lookup.semantic_scope, e.vector, threshold)) {
        const auto now = std::chrono::steady_clock::now();
        if (auto hit = read(candidate->key, lookup.scope, ctx.parsed.info.model, now, lookup.max_age)) {
          co_return found(ctx, std::move(*hit), candidate->similarity, "semantic");
        }
      }
    }
    lookup.embedding = std::move(e.vector);
  }
  co_return miss(ctx, lookup);
}

Verdict CacheStage::miss(RequestContext& ctx, CacheLookup& lookup) {
  const RequestInfo& info = ctx.parsed.info;
  const cache::KeyParts& key = lookup.key;
  const cache::CacheKey shaped = flight_key(key.exact, info);
  if (join_flight(ctx, lookup)) return Verdict::wait();
  count(ctx, lookup.use.lookup ? "miss" : "bypass");
  ctx.rec.cache = "miss";
  ctx.response_headers.emplace_back("x-arbiter-cache", "miss");
  auto flight = std::make_shared<Flight>(lookup.scope, info.model, ctx.conn.executor());
  CacheFill& fill = ctx.slots.emplace<CacheFill>(*ctx.sink, key.exact, shaped, lookup.scope, flight);
  cache_.flights().lead(shaped, std::move(flight));
  fill.near_scope = key.near_scope;
  fill.near = std::move(lookup.near);
  fill.embedding = std::move(lookup.embedding);
  fill.semantic_scope = lookup.semantic_scope;
  ctx.sink = &fill.tee;
  return Verdict::go();
}

Task<Verdict> CacheStage::admit_async(RequestContext& ctx) {
  // admit() waits only after the request's lookup is made.
  CacheLookup& lookup = *ctx.slots.get<CacheLookup>();
  if (!lookup.embed && !ctx.slots.get<CacheHit>() && !ctx.slots.get<CacheFollow>()) {
    // The local store missed: the replicas' store, then the rest.
    const RequestInfo& info = ctx.parsed.info;
    std::optional<std::chrono::milliseconds> max_age;
    if (lookup.max_age) max_age = std::chrono::duration_cast<std::chrono::milliseconds>(*lookup.max_age);
    auto value = co_await cache_.shared()->get(lookup.key.exact, lookup.scope, info.model, max_age);
    Verdict next = Verdict::go();
    if (value) {
      // Kept here too, for the rest of its life.
      const auto now = std::chrono::steady_clock::now();
      const auto age = std::chrono::system_clock::now() - std::chrono::system_clock::time_point(
                                                                std::chrono::milliseconds(value->stored_at_ms));
      const auto ttl = ctx.runtime->config.cache.ttl - std::chrono::duration_cast<std::chrono::seconds>(age);
      if (ttl > std::chrono::seconds(0)) {
        cache_.store().put(lookup.key.exact, lookup.scope, info.model,
                           std::make_shared<const cache::StoredAnswer>(std::move(value->answer)), now, ttl);
      }
      auto hit = read(lookup.key.exact, lookup.scope, info.model, now, std::nullopt);
      if (hit) hit->age = std::chrono::duration_cast<std::chrono::steady_clock::duration>(age);  // since it was kept
      next = hit ? found(ctx, std::move(*hit), std::nullopt, "shared") : after_miss(ctx, lookup);
    } else {
      next = after_miss(ctx, lookup);
    }
    if (next.kind != Verdict::Kind::kWait) co_return next;
  }
  if (lookup.embed) {
    // The exact key and the lexical index missed: the semantic index.
    const Verdict next = co_await semantic(ctx, lookup);
    if (next.kind != Verdict::Kind::kWait) co_return next;
  }
  if (ctx.slots.get<CacheFollow>()) co_return co_await follow_flight(ctx);
  co_return co_await write_hit(ctx);
}

Task<Verdict> CacheStage::follow_flight(RequestContext& ctx) {
  CacheFollow& following = *ctx.slots.get<CacheFollow>();
  ctx.response_headers.emplace_back("x-arbiter-cache", "coalesced");
  const ResponseHead head{.status = 200, .gateway = ctx.response_headers};
  int status = 0;
  if (co_await follow(std::move(following.flight), *ctx.sink, head, status)) {
    ctx.outcome.status = status;
    ctx.outcome.stream = ctx.parsed.info.stream;
    co_return Verdict::answered();
  }
  // The leader's answer is not one to follow (refused, failed): this one runs.
  ctx.response_headers.back().second = "miss";
  ctx.rec.cache = "miss";
  co_return Verdict::go();
}

Task<Verdict> CacheStage::write_hit(RequestContext& ctx) {
  const CacheHit& hit = *ctx.slots.get<CacheHit>();
  const RequestInfo& info = ctx.parsed.info;
  const int64_t created = std::chrono::duration_cast<std::chrono::seconds>(
                              std::chrono::system_clock::now().time_since_epoch()).count();
  const auto age = std::chrono::duration_cast<std::chrono::seconds>(hit.age).count();
  ctx.response_headers.emplace_back("x-arbiter-cache", hit.similarity ? "near" : "hit");
  if (hit.similarity) {
    ctx.response_headers.emplace_back("x-arbiter-cache-similarity", fmt::format("{:.3f}", *hit.similarity));
    ctx.response_headers.emplace_back("x-arbiter-cache-match", hit.semantic ? "semantic" : "lexical");
  }
  ctx.response_headers.emplace_back("age", std::to_string(age));
  bool sent = false;
  if (info.stream) {
    const std::string body =
        cache::render_stream(*hit.answer->answer, answer_id(ctx), created, info.model, info.include_usage);
    const ResponseHead head{.status = 200, .content_type = "text/event-stream", .cache_control = "no-cache",
                            .gateway = ctx.response_headers};
    const std::string_view parts[] = {body};
    sent = co_await ctx.sink->write_stream(&head, parts, true);
  } else {
    const std::string body = cache::render_whole(*hit.answer->answer, answer_id(ctx), created, info.model);
    const ResponseHead head{.status = 200, .content_type = "application/json", .gateway = ctx.response_headers};
    sent = co_await ctx.sink->send(head, body);
  }
  ctx.outcome.status = sent ? 200 : 499;
  ctx.outcome.stream = info.stream;
  co_return Verdict::answered();
}

void CacheObserver::on_complete(const RequestContext& ctx) {
  if (CacheFill* fill = ctx.slots.get<CacheFill>()) cache_.offer(ctx, *fill);
}

}  // namespace arbiter
