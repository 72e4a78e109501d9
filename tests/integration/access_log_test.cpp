// The access log (issue 17): written in batches off the request path, every
// line still there after SIGTERM, and a file destination that logrotate can
// rename and have reopened with SIGUSR1, no line lost.
#include <csignal>
#include <filesystem>
#include <sstream>
#include <thread>

#include <boost/json.hpp>
#include <gtest/gtest.h>

#include "support/harness.hpp"
#include "support/http_client.hpp"
#include "support/requests.hpp"
#include "support/temp_dir.hpp"

namespace arbiter::test {
namespace {

// request_id of every access-log line in `text`.
std::vector<std::string> request_ids(const std::string& text) {
  std::vector<std::string> ids;
  std::istringstream in(text);
  for (std::string line; std::getline(in, line);) {
    if (line.empty() || line.front() != '{') continue;
    ids.emplace_back(boost::json::parse(line).at("request_id").as_string());
  }
  return ids;
}

// Sends `n` requests on one keep-alive connection; their x-request-id.
std::vector<std::string> send_requests(uint16_t port, int n) {
  std::vector<std::string> ids;
  HttpConnection conn(port);
  for (int i = 0; i < n; ++i) {
    const HttpResponse r = conn.request(chat_request(chat_body()));
    EXPECT_EQ(r.status, 200) << r.body;
    ids.push_back(r.header("x-request-id").value_or("?"));
  }
  return ids;
}

// Polls `path` until it has `n` access-log lines (a liveness bound only).
std::vector<std::string> wait_for_lines(const std::string& path, std::size_t n) {
  std::vector<std::string> ids;
  for (int i = 0; i < 500; ++i) {
    ids = request_ids(read_file(path));
    if (ids.size() >= n) break;
    std::this_thread::sleep_for(Millis(20));
  }
  return ids;
}

TEST(AccessLog, EveryLineIsWrittenBeforeTheGatewayExitsOnSigterm) {
  GatewayConfig cfg;
  // No timed flush and far under the size mark: the lines are still
  // buffered when SIGTERM comes.
  cfg.extra = "log: {access_flush_ms: 60000}\n";
  Harness h(cfg);
  constexpr int kRequests = 100;
  const auto sent = send_requests(h.port(), kRequests);
  EXPECT_EQ(h.metric("arbiter_access_log_dropped_total"), 0);
  EXPECT_TRUE(h.gateway().access_log().empty()) << "written before the flush interval or the size mark";

  h.gateway().terminate();
  ASSERT_EQ(h.gateway().wait_exit(Millis(10'000)), 0) << describe_output(h.gateway());
  EXPECT_EQ(request_ids(h.gateway().stdout_text()), sent);
}

TEST(AccessLog, SigusrOneReopensTheFileAfterARenameAndNoLineIsLost) {
  const TempDir dir("arbiter-access-log");
  const std::string path = dir.file("access.log");
  GatewayConfig cfg;
  cfg.extra = "log: {access_file: \"" + path + "\", access_flush_ms: 10}\n";
  Harness h(cfg);

  const auto before = send_requests(h.port(), 5);
  EXPECT_EQ(wait_for_lines(path, 5), before);
  EXPECT_TRUE(h.gateway().access_log().empty()) << "lines on stdout with log.access_file set";

  const std::string rotated = path + ".1";
  std::filesystem::rename(path, rotated);  // what logrotate does
  ASSERT_EQ(::kill(h.gateway().pid(), SIGUSR1), 0);
  for (int i = 0; i < 500 && !std::filesystem::exists(path); ++i) std::this_thread::sleep_for(Millis(20));
  ASSERT_TRUE(std::filesystem::exists(path)) << "not reopened: " << describe_output(h.gateway());

  const auto after = send_requests(h.port(), 5);
  h.gateway().terminate();
  ASSERT_EQ(h.gateway().wait_exit(Millis(10'000)), 0) << describe_output(h.gateway());
  EXPECT_EQ(request_ids(read_file(rotated)), before);
  EXPECT_EQ(request_ids(read_file(path)), after);
}

}  // namespace
}  // namespace arbiter::test
