// Completion observer: formats the request's access-log line
// (observability/access_log.hpp), once, after its end, into this thread's
// reused buffer, and hands it to the batched writer that the gateway owns.
#pragma once

#include "gateway/pipeline/stage.hpp"
#include "observability/access_log.hpp"
#include "observability/batched_line_writer.hpp"

namespace arbiter {

// `rec`'s line, formatted into this thread's reused buffer, handed to `log`.
inline void log_access(BatchedLineWriter& log, const AccessRecord& rec) {
  thread_local fmt::memory_buffer line;
  line.clear();
  append_access_line(rec, line);
  log.append({line.data(), line.size()});
}

class AccessLogObserver final : public CompletionObserver {
 public:
  explicit AccessLogObserver(BatchedLineWriter& log) : log_(log) {}
  void on_complete(const RequestContext& ctx) override { log_access(log_, ctx.rec); }

 private:
  BatchedLineWriter& log_;
};

}  // namespace arbiter
