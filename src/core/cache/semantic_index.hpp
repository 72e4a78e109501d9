// The semantic near-duplicate index (docs/cache.md, "Semantic mode"): the
// embeddings of the prompts whose answers are kept, searched by cosine
// similarity through an approximate nearest-neighbour graph (hnswlib,
// Debian's libhnswlib-dev, header-only). Bounded by bytes: the entry count
// follows from the first vector's dimensions, and once full each new
// prompt takes the oldest one's place. Like the lexical index it only names
// candidates: a candidate of another scope is never returned, and the store
// still checks the answer's scope and model. Pure; one lock per call.
#pragma once

#include <cstdint>
#include <memory>
#include <mutex>
#include <optional>
#include <span>
#include <vector>

#include "core/cache/cache_key.hpp"

namespace arbiter::cache {

class SemanticIndex {
 public:
  explicit SemanticIndex(std::size_t max_bytes);
  ~SemanticIndex();
  SemanticIndex(const SemanticIndex&) = delete;
  SemanticIndex& operator=(const SemanticIndex&) = delete;

  struct Candidate {
    CacheKey key;
    double similarity = 0;
  };
  // The most similar prompt of `near_scope` at or above `threshold` (cosine
  // of the unit vectors), among the nearest the graph finds.
  std::optional<Candidate> find(uint64_t near_scope, std::span<const float> embedding, double threshold) const;
  // Kept in place of the oldest once the index is full. An embedding of
  // other dimensions than those held (the model changed) starts the index
  // over. A zero vector is not kept.
  void add(uint64_t near_scope, const CacheKey& key, std::span<const float> embedding);

  void clear();
  std::size_t entries() const;
  std::size_t capacity() const;  // entries it holds at most (0 until the first vector)
  std::size_t bytes() const;     // what its entries take, at most max_bytes

  // The bytes one entry takes at `dimensions` (vector, graph links, what it names).
  static std::size_t entry_bytes(std::size_t dimensions);

 private:
  struct Graph;  // hnswlib stays out of this header
  struct Named {
    uint64_t scope = 0;
    CacheKey key;
  };
  void start(std::size_t dimensions);  // under the lock

  mutable std::mutex mutex_;
  std::size_t max_bytes_;
  std::unique_ptr<Graph> graph_;
  std::vector<Named> named_;  // by label: the slot a prompt holds
  std::size_t next_ = 0;      // the slot the next prompt takes
  std::size_t used_ = 0;
};

// `v` scaled to unit length in place; false for a zero (or non-finite) vector.
bool normalize(std::span<float> v);

}  // namespace arbiter::cache
