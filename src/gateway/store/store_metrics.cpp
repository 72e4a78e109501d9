#include "gateway/store/store_metrics.hpp"

namespace arbiter {

StoreMetrics::StoreMetrics(metrics::Registry& r)
    : up_(r.gauge("arbiter_store_up", "1 while the usage and audit store takes writes (its last write succeeded)", {})
              .with({})),
      spool_rows_(r.gauge("arbiter_store_spool_rows", "Rows journaled and queued, not yet in the store", {}).with({})),
      spool_bytes_(r.gauge("arbiter_store_spool_bytes", "The journal's segment files, in bytes", {}).with({})),
      usage_written_(r.counter("arbiter_store_rows_written_total", "Rows written to the store, by kind", {"kind"})
                         .with({"usage"})),
      audit_written_(r.counter("arbiter_store_rows_written_total", "Rows written to the store, by kind", {"kind"})
                         .with({"audit"})),
      dropped_(r.counter("arbiter_store_rows_dropped_total",
                         "Rows dropped: the journal was full (store.spool_bytes) while the store was down", {})
                   .with({})),
      failures_(r.counter("arbiter_store_write_failures_total", "Batches the store refused or failed (retried)", {})
                    .with({})) {}

void StoreMetrics::show(const StoreWriter::State& s) {
  up_.set(s.up ? 1 : 0);
  spool_rows_.set(static_cast<double>(s.spool_rows));
  spool_bytes_.set(static_cast<double>(s.spool_bytes));
  usage_written_.set(s.usage_written);
  audit_written_.set(s.audit_written);
  dropped_.set(s.dropped);
  failures_.set(s.failures);
}

}  // namespace arbiter
