// The usage and audit store's metric families (docs/audit.md): set from
// the writer's state at each scrape.
#pragma once

#include "gateway/store/store_writer.hpp"
#include "observability/metrics_registry.hpp"

namespace arbiter {

class StoreMetrics {
 public:
  explicit StoreMetrics(metrics::Registry& registry);
  void show(const StoreWriter::State& s);

 private:
  metrics::Gauge& up_;
  metrics::Gauge& spool_rows_;
  metrics::Gauge& spool_bytes_;
  metrics::Counter& usage_written_;
  metrics::Counter& audit_written_;
  metrics::Counter& dropped_;
  metrics::Counter& failures_;
};

}  // namespace arbiter
