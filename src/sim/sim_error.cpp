#include "sim/sim_error.hpp"

#include <boost/json.hpp>

namespace arbiter::sim {

std::string_view error_type(int status) {
  switch (status) {
    case 400: return "BadRequestError";
    case 404: return "NotFoundError";
    case 405: return "MethodNotAllowed";
    case 429: return "RateLimitError";
    case 500: return "InternalServerError";
    case 503: return "ServiceUnavailableError";
    default: return "Error";
  }
}

std::string error_body(const SimError& error) {
  boost::json::object inner;
  inner["message"] = error.message;
  inner["type"] = error_type(error.status);
  inner["param"] = error.param ? boost::json::value(*error.param) : boost::json::value(nullptr);
  inner["code"] = error.status;
  boost::json::object outer;
  outer["error"] = std::move(inner);
  return boost::json::serialize(outer);
}

}  // namespace arbiter::sim
