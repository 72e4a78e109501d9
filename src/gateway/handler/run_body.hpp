// The body one upstream run sends (DispatchHandler::run_upstream). Where
// nothing about it changes, the client's bytes as they came (a max_tokens cap
// already written in place; the stream-usage ask inserted without a copy);
// otherwise serialised from the parsed document with what this run adds: a
// resumed run's continuation (core/resume), the engine's priority field, the
// run's own body request_id, the usage ask.
#pragma once

#include <optional>
#include <string>
#include <string_view>

#include "core/config.hpp"
#include "core/request_parser.hpp"
#include "core/resume.hpp"
#include "http/http_head.hpp"

namespace arbiter {

struct RunBodyOptions {
  // The engine runs priority scheduling: the body carries `priority`.
  std::optional<EngineKind> priority_engine;
  int engine_priority = 0;
  // A later run's own body request_id (vLLM keys requests by it); nullopt:
  // the body's as it is.
  std::optional<std::string> request_id;
  // A stream whose client did not ask for usage: ask the engine for it.
  bool ask_usage = false;
  // A resumable request (after Checkpoint::begin_run()): its method, its
  // checkpoint, and whether the client asked for one whole answer.
  ResumeMethod resume_method = ResumeMethod::kNone;
  const Checkpoint* checkpoint = nullptr;
  bool aggregate = false;
};

// Sets `up.body` (and `up.body_insert`, `up.insert_at`): views into
// `parsed.text` or into `rewritten`, which must outlive the run. A body
// serialised from the document leaves the document edited (priority,
// request_id, usage ask) unless the run is a resumable one, whose body is
// built apart from it.
void build_run_body(ParsedRequest& parsed, const RunBodyOptions& options, UpstreamRequest& up, std::string& rewritten);

}  // namespace arbiter
