// Completion observer: each request's rows for the usage and audit store
// (docs/audit.md). A request that reached an engine gives its bill (a
// usage row: what RequestContext::billed says, its engine time and cost);
// with store.audit on, its decisions give audit rows: refused (the stage
// and why) or answered by a stage (a cache hit), else dispatched (its
// class, backend, queue wait and why it waited), and when they happened
// preempted, degraded, retried, superseded. Handing them to the writer is
// an encode into a reused buffer and a copy into the journal under one
// short lock (StoreWriter::add).
#pragma once

#include "gateway/pipeline/stage.hpp"
#include "gateway/store/store_writer.hpp"

namespace arbiter {

class StoreObserver final : public CompletionObserver {
 public:
  explicit StoreObserver(StoreWriter& store) : store_(store) {}
  void on_complete(const RequestContext& ctx) override;

 private:
  StoreWriter& store_;
};

}  // namespace arbiter
