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
  // `settings.audit_sample`: the share of requests each decision kind is
  // kept for (by the request id's hash: the same requests every time).
  StoreObserver(StoreWriter& store, const StoreConfig& settings);
  // Journaled before the answer's last write leaves: a client that has its
  // whole answer has its bill in the journal, crash or not.
  bool records_before_answer_end() const override { return true; }
  void on_answer_end(const RequestContext& ctx) override;

  // Whether a request of this id keeps its row of `kind`.
  bool sampled(std::string_view kind, std::string_view request_id) const;

 private:
  StoreWriter& store_;
  std::vector<std::pair<std::string, double>> sample_;  // kinds kept for a share of requests
};

}  // namespace arbiter
