// The result cache's settings (docs/cache.md): the `cache:` section, a
// class's `cache:` keys and a model's `cache` switch. Read by the gateway's
// config (yaml/setting_keys tables) and checked there.
#pragma once

#include <chrono>
#include <cstddef>
#include <cstdint>
#include <optional>
#include <string>
#include <string_view>

namespace arbiter::cache {

// Whose answers a request may be given.
enum class Scope : uint8_t { kTenant, kTeam, kGlobal };
std::string_view scope_name(Scope scope);
std::optional<Scope> scope_from_name(std::string_view name);

struct CacheConfig {
  bool enabled = true;
  std::size_t max_bytes = std::size_t{128} << 20;  // the in-process store's bound (entries' bytes)
  std::chrono::seconds ttl{600};                   // an entry's life
  std::size_t max_entry_bytes = std::size_t{1} << 20;  // a larger answer is not kept
  Scope scope = Scope::kTenant;
  // Near-duplicates (core/cache/near_duplicate.hpp): on by default, for
  // prompts up to near_max_prompt_bytes.
  bool near = true;
  double near_threshold = 0.9;
  // At the overload `high` stage and above, for classes that degrade: a
  // looser match may answer (docs/overload.md).
  double near_degraded_threshold = 0.8;
  std::size_t near_max_prompt_bytes = 4096;
  // Semantic near-duplicates (docs/cache.md, "Semantic mode"): the prompt's
  // embedding from `semantic_model` (a model of this gateway whose engines
  // serve /v1/embeddings; empty: off) searched among the kept prompts'. A
  // miss pays the embedding's round trip, at most semantic_timeout; an
  // embedding that fails or is late is a miss, never an error.
  std::string semantic_model;
  double semantic_threshold = 0.95;           // cosine similarity a semantic hit needs
  double semantic_degraded_threshold = 0.9;   // at the overload `high` stage, for degradable classes
  std::chrono::milliseconds semantic_timeout{250};
  std::size_t semantic_max_bytes = std::size_t{64} << 20;  // the index's bound
  std::size_t semantic_max_prompt_bytes = 16384;
  int64_t semantic_dimensions = 0;  // asked of the model (OpenAI's `dimensions`); 0: its own
  // Shared by replicas: a Redis server's host:port (empty: none), and how
  // long a lookup may wait for it.
  std::string redis;
  std::chrono::milliseconds redis_timeout{20};
};

// A class's own choices; unset: the section's.
struct ClassCacheConfig {
  std::optional<bool> enabled;
  std::optional<bool> near;  // lexical and semantic near hits
  // Answers of requests that carry tools may be kept (the tools' effects are
  // the client's: it calls them again on a replay as on a fresh answer).
  bool tools = false;
};

}  // namespace arbiter::cache
