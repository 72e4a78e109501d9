// The folders of src/gateway/ and who may include whom (issue 42;
// docs/architecture.md, "Inside the gateway"). A folder includes only
// folders of a lower level and the gateway's shared parts (root headers
// that include no folder); gateway.cpp and the pipeline registry, which
// assemble everything, are the top. Read from the source tree, so a new
// include that closes a loop fails here with its file and line.
#include <gtest/gtest.h>

#include <filesystem>
#include <fstream>
#include <map>
#include <regex>
#include <set>
#include <string>
#include <vector>

namespace arbiter {
namespace {

namespace fs = std::filesystem;

const fs::path kGateway = fs::path(ARBITER_SOURCE_DIR) / "src" / "gateway";

// Lower levels first; a folder may include folders of a lower level only.
const std::map<std::string, int> kLevel = {
    {"relay", 1},     {"redis", 1},  // upstream exchanges; the Redis client
    {"store", 1},  // the usage and audit store and its writer
    {"pipeline", 2},  {"dispatch", 2},  // stage interfaces and the request context; the scheduler's queues
    {"observers", 3}, {"resilience", 3},  // what runs after an answer; backend health over the queues
    {"reload", 3},  // what a config reload compares and keeps (its map is the dispatcher's)
    {"stages", 4},    {"admin", 4},  // admission features (a feature's observer with it); admin routes
    {"handler", 5},  // the pipeline's handler: dispatch, relay, retries, health
    {"batch", 5},    // the Batch API: its lines run through the pipeline (the router hands it over)
};

// Root headers the folders share: they include no folder themselves.
const std::set<std::string> kParts = {
    "backend_monitor.hpp", "config_section.hpp", "cors.hpp", "engine_signal_log.hpp", "error_response.hpp", "gateway_metrics.hpp",
    "model_pool.hpp",      "periodic.hpp", "request_id.hpp",       "runtime.hpp",        "scheduler_setup.hpp",
    "stream_gaps.hpp",
};

struct Include {
  fs::path file;
  int line;
  std::string target;  // after "gateway/"
};

std::vector<Include> gateway_includes(const fs::path& file) {
  static const std::regex kInclude(R"(^\s*#\s*include\s+"gateway/([^"]+)\")");
  std::vector<Include> out;
  std::ifstream in(file);
  std::string text;
  for (int n = 1; std::getline(in, text); ++n) {
    std::smatch m;
    if (std::regex_search(text, m, kInclude)) out.push_back({file, n, m[1]});
  }
  return out;
}

std::string folder_of(const std::string& target) {
  const auto slash = target.find('/');
  return slash == std::string::npos ? std::string() : target.substr(0, slash);
}

std::string where(const Include& i) {
  return fs::relative(i.file, kGateway).string() + ":" + std::to_string(i.line) + " includes gateway/" + i.target;
}

TEST(GatewayFolders, EachIncludesOnlyLowerFoldersAndTheSharedParts) {
  ASSERT_TRUE(fs::is_directory(kGateway)) << kGateway;
  std::set<std::string> folders_seen;
  int checked = 0;
  for (const auto& entry : fs::recursive_directory_iterator(kGateway)) {
    if (!entry.is_regular_file()) continue;
    const fs::path rel = fs::relative(entry.path(), kGateway);
    const std::string folder = rel.has_parent_path() ? rel.begin()->string() : std::string();
    if (folder.empty()) continue;  // the root: its parts are checked below, the rest is the top
    folders_seen.insert(folder);
    ASSERT_TRUE(kLevel.contains(folder)) << "a new folder needs its level here and in architecture.md: " << folder;
    for (const Include& inc : gateway_includes(entry.path())) {
      ++checked;
      const std::string to = folder_of(inc.target);
      if (to == folder) continue;
      if (to.empty()) {
        EXPECT_TRUE(kParts.contains(inc.target)) << where(inc) << ": not a shared part";
        continue;
      }
      ASSERT_TRUE(kLevel.contains(to)) << where(inc);
      EXPECT_LT(kLevel.at(to), kLevel.at(folder)) << where(inc) << ": not a lower folder";
    }
  }
  EXPECT_GT(checked, 50) << "the scan found almost nothing: is the tree where it should be?";
  for (const auto& [folder, level] : kLevel) EXPECT_TRUE(folders_seen.contains(folder)) << "gone: " << folder;
}

TEST(GatewayFolders, TheSharedPartsIncludeNoFolder) {
  for (const std::string& part : kParts) {
    for (const std::string& file : {part, part.substr(0, part.size() - 4) + ".cpp"}) {
      if (!fs::exists(kGateway / file)) continue;
      for (const Include& inc : gateway_includes(kGateway / file)) {
        EXPECT_TRUE(folder_of(inc.target).empty() && kParts.contains(inc.target)) << where(inc);
      }
    }
    EXPECT_TRUE(fs::exists(kGateway / part)) << "gone: " << part;
  }
}

}  // namespace
}  // namespace arbiter
