// Completion observer: writes the request's access-log line
// (observability/access_log.hpp), once, after its end.
#pragma once

#include "gateway/pipeline/stage.hpp"
#include "observability/access_log.hpp"

namespace arbiter {

class AccessLogObserver final : public CompletionObserver {
 public:
  explicit AccessLogObserver(bool enabled) : log_(enabled) {}
  void on_complete(const RequestContext& ctx) override { log_.write(ctx.rec); }

 private:
  AccessLog log_;
};

}  // namespace arbiter
