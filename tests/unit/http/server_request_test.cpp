// A request's fields as the handler reads them (http/server_request): found
// in any case, the first of repeated ones, and absent ones absent, whatever
// their length (the lookup skips names of a length no field has).
#include "http/server_request.hpp"

#include <gtest/gtest.h>

namespace arbiter {
namespace {

ServerRequest request_with(const std::vector<std::pair<std::string, std::string>>& fields) {
  http::request<http::string_body> req{http::verb::post, "/v1/chat/completions", 11};
  for (const auto& [name, value] : fields) req.insert(name, value);
  return ServerRequest(std::move(req));
}

TEST(ServerRequest, FieldsAreFoundInAnyCaseAndAbsentOnesAreNot) {
  const std::string long_name(70, 'x');
  const ServerRequest r = request_with({{"X-Request-Id", "abc"},
                                        {"Accept", "text/event-stream"},
                                        {"accept", "second"},
                                        {long_name, "long"}});
  EXPECT_EQ(r.field("x-request-id"), "abc");
  EXPECT_EQ(r.field("accept"), "text/event-stream") << "the first of repeated fields";
  EXPECT_EQ(r.field(long_name), "long");
  EXPECT_FALSE(r.field("x-arbiter-class")) << "no field of that length";
  EXPECT_FALSE(r.field("x-request-ix")) << "a field of that length, another name";
  EXPECT_FALSE(r.field(std::string(64, 'x'))) << "a long name that shares the long names' bit";
  EXPECT_EQ(r["origin"], "");
  EXPECT_FALSE(ServerRequest().field("accept"));
}

}  // namespace
}  // namespace arbiter
