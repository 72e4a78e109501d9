#include "gateway/handler/run_body.hpp"

#include <boost/json/serialize.hpp>

#include "core/stream_usage.hpp"

namespace arbiter {
namespace {

// What this run adds to a body serialised from a document.
void add_run_fields(boost::json::object& body, const RunBodyOptions& o) {
  if (o.priority_engine) body["priority"] = engine_priority_field(*o.priority_engine, o.engine_priority);
  if (o.request_id) body["request_id"] = *o.request_id;
  if (o.ask_usage) ask_stream_usage(body);
}

}  // namespace

void build_run_body(ParsedRequest& parsed, const RunBodyOptions& o, UpstreamRequest& up, std::string& rewritten) {
  const bool resumable = o.checkpoint != nullptr;
  const bool as_sent = !parsed.document_changed() && !o.priority_engine && !o.request_id &&
                       (!resumable || (!o.checkpoint->resumed() && !o.aggregate));
  up.body_insert = {};
  up.insert_at = 0;
  if (as_sent) {
    up.body = parsed.text;  // the client's bytes (a cap written in place)
    if (o.ask_usage) {
      up.body_insert = kStreamUsageAsk;
      up.insert_at = stream_usage_ask_at(parsed.text);
    }
    return;
  }
  if (resumable) {
    boost::json::object body = run_body(parsed, o.resume_method, *o.checkpoint, o.aggregate);
    add_run_fields(body, o);
    rewritten = boost::json::serialize(body);
  } else {
    add_run_fields(parsed.body(), o);
    rewritten = boost::json::serialize(parsed.body());
  }
  up.body = rewritten;
}

}  // namespace arbiter
