// Completion observer: each request that reached an engine goes into the
// usage ledger (UsageBook), in the hour it arrived: 1 request, the tokens
// its engine reported (none: 0) and its cost.
#pragma once

#include "gateway/observers/usage/usage_book.hpp"
#include "gateway/pipeline/stage.hpp"

namespace arbiter {

class UsageObserver final : public CompletionObserver {
 public:
  // `config`'s tenants, models and classes get their ledger ids here.
  UsageObserver(const Config& config, UsageBook& book) : config_(config), book_(book), ids_(book.ids_for(config)) {}
  void on_complete(const RequestContext& ctx) override;

 private:
  const Config& config_;
  UsageBook& book_;
  const usage::NameIds ids_;  // this config's numbers -> the ledger's
};

}  // namespace arbiter
