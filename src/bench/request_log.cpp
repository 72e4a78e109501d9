#include "bench/request_log.hpp"

#include <boost/json.hpp>

namespace arbiter::bench {
namespace json = boost::json;

std::string request_log_header(const Scenario& scenario, const std::string& label,
                               double run_start_unix) {
  json::object o;
  o["run_start_unix"] = run_start_unix;
  o["scenario"] = scenario.name;
  o["label"] = label;
  return json::serialize(o);
}

std::string request_log_line(const Scenario& scenario, const RequestSpec& spec,
                             const ExchangeResult& r, bool exact_lengths) {
  json::object o;
  o["id"] = spec.id;
  o["class"] = scenario.classes[spec.klass].name;
  o["tenant"] = scenario.tenants[spec.tenant].name;
  o["arrival"] = spec.arrival;
  o["first_token"] = r.first_token;
  o["last_token"] = r.last_token;
  o["ended"] = r.ended;
  o["outcome"] = outcome_name(r.outcome);
  o["status"] = r.status;
  o["tokens"] = r.tokens;
  o["expected_tokens"] = exact_lengths ? spec.output_tokens : 0;
  o["backend"] = r.backend;
  o["note"] = r.note;
  return json::serialize(o);
}

}  // namespace arbiter::bench
