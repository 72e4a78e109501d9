// The Batch API's runner with its clock in the test's hands: a window that
// has closed turns the lines not yet run into batch_expired errors and ends
// the batch expired (what no live test can wait an hour for); a 429 before
// the window closes is tried again. The pipeline is a stand-in that answers
// each line as the test says and counts the runs.
#include "gateway/batch/batch_book.hpp"

#include <gtest/gtest.h>

#include <atomic>

#include <boost/json.hpp>

#include "gateway/config_yaml.hpp"
#include "support/temp_dir.hpp"

namespace arbiter::batch {
namespace {

constexpr std::string_view kConfig =
    "models:\n"
    "  - name: m1\n"
    "    backends: [{url: \"http://127.0.0.1:9\"}]\n";

std::string input(int lines) {
  std::string out;
  for (int i = 0; i < lines; ++i) {
    out += R"({"custom_id":"l)" + std::to_string(i) +
           R"(","method":"POST","url":"/v1/chat/completions","body":{"model":"m1","messages":[]}})" "\n";
  }
  return out;
}

struct Bench {
  net::io_context ioc;
  test::TempDir dir{"batch-book"};
  // Written before the book opens (an earlier version's folder).
  metrics::Registry registry;
  std::shared_ptr<const Runtime> runtime = std::make_shared<const Runtime>(*parse_config(kConfig));
  std::atomic<int64_t> now{1'800'000'000};
  std::atomic<int> runs{0};
  // The status each run answers (then 200 when none is left).
  std::vector<unsigned> statuses;
  std::unique_ptr<BatchBook> book;

  explicit Bench(std::function<void(const test::TempDir&)> seed = {}) {
    if (seed) seed(dir);
    auto run = [this](Route, HttpRequest&, RequestClient& client) -> Task<void> {
      const std::size_t i = static_cast<std::size_t>(runs++);
      http::response<http::string_body> res{static_cast<http::status>(i < statuses.size() ? statuses[i] : 200), 11};
      res.body() = R"({"id":"x"})";
      if (res.result_int() == 429) res.set(http::field::retry_after, "0");
      co_await client.send(res);
    };
    StoreConfig store;
    store.enabled = false;  // the records in a SQLite file of the folder
    auto opened = BatchBook::open(dir.path(), store, "test", ioc.get_executor(), run, [this] { return runtime; },
                                  registry, [this] { return now.load(); });
    EXPECT_TRUE(opened) << (opened ? "" : opened.error());
    book = std::move(*opened);
  }

  Job create(int lines) {
    auto file = book->files().add("alpha", "in.jsonl", "batch", input(lines), 0);
    EXPECT_TRUE(file);
    auto job = book->create("alpha", nullptr,
                            boost::json::object{{"input_file_id", file->id},
                                                {"endpoint", "/v1/chat/completions"},
                                                {"completion_window", "1h"}});
    EXPECT_TRUE(job) << (job ? "" : job.error().message);
    return *job;
  }

  // Runs the book until the job has ended (or 20 s have passed).
  Job run_to_end(const std::string& id) {
    const auto until = std::chrono::steady_clock::now() + std::chrono::seconds(20);
    for (;;) {
      ioc.run_for(std::chrono::milliseconds(20));
      const auto job = book->find("alpha", id);
      EXPECT_TRUE(job && *job);
      if (!job || !*job || terminal((**job).status) || std::chrono::steady_clock::now() > until) return job && *job ? **job : Job{};
    }
  }

  std::vector<boost::json::object> lines_of(const std::string& file_id) {
    std::vector<boost::json::object> out;
    const auto text = book->files().content("alpha", file_id);
    EXPECT_TRUE(text && *text);
    std::string_view rest = text && *text ? std::string_view(**text) : std::string_view();
    while (!rest.empty()) {
      const std::size_t eol = rest.find('\n');
      out.push_back(boost::json::parse(rest.substr(0, eol)).as_object());
      rest.remove_prefix(eol + 1);
    }
    return out;
  }
};

TEST(BatchBook, LinesNotStartedBeforeTheWindowClosedAreWrittenExpired) {
  Bench b;
  const Job job = b.create(3);
  b.now = job.expires_at;  // the window closes before the runner starts
  const Job done = b.run_to_end(job.id);
  EXPECT_EQ(done.status, Status::kExpired);
  EXPECT_GT(done.expired_at, 0);
  EXPECT_EQ(done.completed, 0u);
  EXPECT_EQ(done.failed, 3u);
  EXPECT_EQ(b.runs.load(), 0) << "nothing runs once the window has closed";
  EXPECT_TRUE(done.output_file_id.empty());
  const auto errors = b.lines_of(done.error_file_id);
  ASSERT_EQ(errors.size(), 3u);
  for (const auto& line : errors) {
    EXPECT_TRUE(line.at("response").is_null());
    EXPECT_EQ(line.at("error").at("code").as_string(), "batch_expired");
  }
}

TEST(BatchBook, ARefusalInsideTheWindowIsTriedAgainAndOneAfterItExpiresTheLine) {
  Bench b;
  b.statuses = {429};  // the first run is refused (a quota), then answered
  const Job job = b.create(1);
  const Job done = b.run_to_end(job.id);
  EXPECT_EQ(done.status, Status::kCompleted);
  EXPECT_EQ(done.completed, 1u);
  EXPECT_EQ(b.runs.load(), 2);

  Bench late;
  late.statuses = {503, 503};
  const Job second = late.create(1);
  // The first run: 503 inside the window, a pause (1 s) before the next.
  const auto until = std::chrono::steady_clock::now() + std::chrono::seconds(20);
  while (late.runs.load() < 1 && std::chrono::steady_clock::now() < until) late.ioc.run_for(std::chrono::milliseconds(5));
  EXPECT_EQ(late.runs.load(), 1);
  late.now = second.expires_at;  // the window closes during the pause
  const Job ended = late.run_to_end(second.id);
  EXPECT_EQ(ended.status, Status::kExpired);
  EXPECT_EQ(ended.failed, 1u);
  EXPECT_EQ(late.runs.load(), 2) << "answered 503 once the window has closed: not tried again";
  const auto errors = late.lines_of(ended.error_file_id);
  ASSERT_EQ(errors.size(), 1u);
  EXPECT_EQ(errors[0].at("error").at("code").as_string(), "batch_expired");
}

TEST(BatchBook, AFolderAnEarlierVersionKeptRecordsInIsReadIntoTheStoreAndItsUnfinishedBatchRuns) {
  // The layout before the records moved to the store: a file's record beside
  // its bytes, a job's record in jobs/.
  Bench b([](const test::TempDir& dir) {
    std::filesystem::create_directories(dir.path() + "/files");
    std::filesystem::create_directories(dir.path() + "/jobs");
    dir.write("files/file-old", input(2));
    dir.write("files/file-old.json",
              R"({"id":"file-old","object":"file","bytes":1,"created_at":1700000000,"filename":"in.jsonl",)"
              R"("purpose":"batch","tenant":"alpha"})");
    Job job{.id = "batch_old", .tenant = "alpha", .endpoint = "/v1/chat/completions", .input_file_id = "file-old",
            .completion_window = "24h", .status = Status::kInProgress, .created_at = 1'800'000'000,
            .in_progress_at = 1'800'000'000, .expires_at = 1'800'086'400, .total = 2,
            .output_id = "file-out", .error_id = "file-err"};
    dir.write("jobs/batch_old.json", to_record(job));
  });
  b.book->start();
  const Job done = b.run_to_end("batch_old");
  EXPECT_EQ(done.status, Status::kCompleted);
  EXPECT_EQ(done.completed, 2u);
  EXPECT_EQ(b.runs.load(), 2);
  EXPECT_EQ(b.lines_of(done.output_file_id).size(), 2u);
  const auto file = b.book->files().find("alpha", "file-old");
  ASSERT_TRUE(file && *file);
  EXPECT_EQ((*file)->filename, "in.jsonl");
  EXPECT_FALSE(std::filesystem::exists(b.dir.path() + "/files/file-old.json")) << "moved into the store";
  EXPECT_FALSE(std::filesystem::exists(b.dir.path() + "/jobs/batch_old.json"));
}

TEST(BatchBook, FilesGoWhenTheirTimeHasComeAndABatchsOutputKeepsItsOwnExpiry) {
  Bench b;
  auto kept = b.book->files().add("alpha", "kept.jsonl", "batch", input(1), 0);
  auto hour = b.book->files().add("alpha", "hour.jsonl", "batch", input(1), kMinExpirySeconds);
  ASSERT_TRUE(kept && hour);
  EXPECT_EQ(hour->expires_at, b.now.load() + kMinExpirySeconds);
  auto job = b.book->create("alpha", nullptr,
                            boost::json::object{{"input_file_id", kept->id},
                                                {"endpoint", "/v1/chat/completions"},
                                                {"completion_window", "24h"},
                                                {"output_expires_after", {{"anchor", "created_at"}, {"seconds", 7200}}}});
  ASSERT_TRUE(job) << job.error().message;
  const Job done = b.run_to_end(job->id);
  const auto output = b.book->files().find("alpha", done.output_file_id);
  ASSERT_TRUE(output && *output);
  EXPECT_EQ((*output)->expires_at, b.now.load() + 7200);
  // A bad policy is refused, naming the rule.
  auto bad = b.book->create("alpha", nullptr,
                            boost::json::object{{"input_file_id", kept->id},
                                                {"endpoint", "/v1/chat/completions"},
                                                {"completion_window", "24h"},
                                                {"output_expires_after", {{"anchor", "created_at"}, {"seconds", 60}}}});
  ASSERT_FALSE(bad);
  EXPECT_NE(bad.error().message.find("3600"), std::string::npos) << bad.error().message;

  b.now += kMinExpirySeconds;  // the hour has passed; the output's two have not
  b.ioc.restart();             // it ran out of work when the batch ended
  b.book->start();             // a sweep at once, then every minute
  const auto until = std::chrono::steady_clock::now() + std::chrono::seconds(20);
  while (b.book->files().find("alpha", hour->id).value_or(std::optional<FileInfo>{FileInfo{}}) &&
         std::chrono::steady_clock::now() < until) {
    b.ioc.run_for(std::chrono::milliseconds(20));
  }
  EXPECT_FALSE(*b.book->files().find("alpha", hour->id)) << "expired: gone";
  EXPECT_FALSE(std::filesystem::exists(b.dir.path() + "/files/" + hour->id)) << "its bytes too";
  EXPECT_TRUE(*b.book->files().find("alpha", kept->id));
  EXPECT_TRUE(*b.book->files().find("alpha", done.output_file_id));
}

}  // namespace
}  // namespace arbiter::batch
