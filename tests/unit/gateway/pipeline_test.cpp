// The request pipeline (gateway/pipeline/): stages in order, the first
// refusal answered and nothing after it run, a stage that waits, a stage
// that answers the request itself, the handler only for admitted requests,
// observers exactly once each, the answer's last write held until the
// observers that must record before it have, and a request keeps the config
// snapshot it started with.
#include "gateway/pipeline/pipeline.hpp"

#include <gtest/gtest.h>

#include <string>
#include <vector>

#include "gateway/config_yaml.hpp"
#include "loopback.hpp"

namespace arbiter {
namespace {

using testing::Loopback;

struct Trace {
  std::vector<std::string> steps;
  int starts = 0;
  int answer_starts = 0;  // on_answer_started calls
  int completes = 0;
  int last_status = 0;
  std::string last_error;
};

class Step final : public AdmissionStage {
 public:
  Step(Trace& trace, std::string name, Verdict verdict, std::optional<ApiError> async_result = std::nullopt)
      : trace_(trace), name_(std::move(name)), verdict_(std::move(verdict)), async_(std::move(async_result)) {}
  Step(Trace& trace, std::string name, Phase phase, Verdict verdict) : Step(trace, std::move(name), std::move(verdict)) {
    phase_ = phase;
  }
  std::string_view name() const override { return name_; }
  Phase phase() const override { return phase_; }
  Verdict admit(RequestContext&) override {
    trace_.steps.push_back(name_);
    return verdict_;
  }
  Task<Verdict> admit_async(RequestContext&) override {
    trace_.steps.push_back(name_ + " (waited)");
    if (async_) co_return Verdict::refuse(*async_);
    co_return Verdict::go();
  }

 private:
  Trace& trace_;
  std::string name_;
  Verdict verdict_;
  std::optional<ApiError> async_;
  Phase phase_ = Phase::kAdmit;
};

class Answer final : public AdmittedHandler {
 public:
  // `stream_starts`: how many times the handler reports its answer began
  // (a relay reports it once per run that sends the head).
  explicit Answer(Trace& trace, int stream_starts = 0) : trace_(trace), stream_starts_(stream_starts) {}
  Task<void> run(RequestContext& ctx) override {
    trace_.steps.push_back("handler");
    for (int i = 0; i < stream_starts_; ++i) ctx.answer_started();
    http::response<http::string_body> res{http::status::ok, 11};
    res.body() = "answered";
    co_await ctx.sink->send(res);
    ctx.outcome.status = 200;
  }

 private:
  Trace& trace_;
  int stream_starts_;
};

class Watch final : public CompletionObserver {
 public:
  explicit Watch(Trace& trace) : trace_(trace) {}
  void on_start(RequestContext&) override { ++trace_.starts; }
  void on_answer_started(RequestContext&) override {
    ++trace_.answer_starts;
    trace_.steps.push_back("answer started");
  }
  void on_complete(const RequestContext& ctx) override {
    ++trace_.completes;
    trace_.last_status = ctx.rec.status;
    trace_.last_error = ctx.rec.error;
  }

 private:
  Trace& trace_;
};

ApiError forbidden() { return ApiError{ErrorCode::kForbidden, "no", {}, {}}; }
ApiError busy() { return ApiError{ErrorCode::kRateLimited, "later", {}, std::chrono::seconds(3)}; }

// Runs `pipeline` on one request over a loopback connection; returns what
// the client received.
// `slot`: where the request takes its Runtime from (none: it runs without).
std::string run(const Pipeline& pipeline, bool client_leaves_first = false,
                const CurrentSlot<const Runtime>* slot = nullptr) {
  net::io_context ioc;
  Loopback loop(ioc);
  if (client_leaves_first) {
    loop.close_client();
    for (int i = 0; i < 100 && !loop.conn().client_gone(); ++i) ioc.run_one_for(std::chrono::milliseconds(20));
    EXPECT_TRUE(loop.conn().client_gone());
    ioc.restart();
  }
  http::request<http::string_body> beast_req{http::verb::post, "/v1/chat/completions", 11};
  beast_req.set("x-request-id", "req-1");
  beast_req.body() = "{}";
  HttpRequest req(std::move(beast_req));
  bool done = false;
  net::co_spawn(ioc, [&]() -> Task<void> {
    // A named local, not a conditional in the co_await (GCC 12 miscompiles those).
    std::shared_ptr<const Runtime> runtime;
    if (slot) runtime = slot->load();
    co_await pipeline.run(Route::kChatCompletions, req, loop.conn(), std::move(runtime));
    done = true;
    ioc.stop();  // the connection's pending read would keep it running
  }, net::detached);
  ioc.run_for(std::chrono::seconds(5));
  EXPECT_TRUE(done);
  return client_leaves_first ? std::string() : loop.received();
}

Pipeline chain(Trace& trace, std::vector<std::unique_ptr<AdmissionStage>> stages) {
  Pipeline p;
  for (auto& s : stages) p.add_stage(std::move(s));
  p.set_handler(std::make_unique<Answer>(trace));
  p.add_observer(std::make_unique<Watch>(trace));
  return p;
}

TEST(Pipeline, AdmittedRequestsRunEveryStageInOrderThenTheHandler) {
  Trace trace;
  std::vector<std::unique_ptr<AdmissionStage>> stages;
  stages.push_back(std::make_unique<Step>(trace, "a", Verdict::go()));
  stages.push_back(std::make_unique<Step>(trace, "b", Verdict::go()));
  const std::string got = run(chain(trace, std::move(stages)));
  EXPECT_EQ(trace.steps, (std::vector<std::string>{"a", "b", "handler"}));
  EXPECT_NE(got.find("answered"), std::string::npos) << got;
  EXPECT_EQ(trace.starts, 1);
  EXPECT_EQ(trace.completes, 1);
  EXPECT_EQ(trace.last_status, 200);
}

TEST(Pipeline, StagesRunByPhaseThenInTheOrderTheyWereAdded) {
  Trace trace;
  std::vector<std::unique_ptr<AdmissionStage>> stages;
  stages.push_back(std::make_unique<Step>(trace, "quota", Phase::kAdmit, Verdict::go()));
  stages.push_back(std::make_unique<Step>(trace, "route", Phase::kRoute, Verdict::go()));
  stages.push_back(std::make_unique<Step>(trace, "supersede", Phase::kAdmit, Verdict::go()));
  stages.push_back(std::make_unique<Step>(trace, "auth", Phase::kAuthenticate, Verdict::go()));
  stages.push_back(std::make_unique<Step>(trace, "hints", Phase::kRoute, Verdict::go()));
  stages.push_back(std::make_unique<Step>(trace, "breaker", Phase::kProtect, Verdict::go()));
  run(chain(trace, std::move(stages)));
  EXPECT_EQ(trace.steps,
            (std::vector<std::string>{"auth", "route", "hints", "breaker", "quota", "supersede", "handler"}));
}

TEST(Pipeline, TheFirstRefusalIsTheAnswerAndNothingAfterItRuns) {
  Trace trace;
  std::vector<std::unique_ptr<AdmissionStage>> stages;
  stages.push_back(std::make_unique<Step>(trace, "a", Verdict::go()));
  stages.push_back(std::make_unique<Step>(trace, "b", Verdict::refuse(forbidden())));
  stages.push_back(std::make_unique<Step>(trace, "c", Verdict::go()));
  const std::string got = run(chain(trace, std::move(stages)));
  EXPECT_EQ(trace.steps, (std::vector<std::string>{"a", "b"}));
  EXPECT_TRUE(got.starts_with("HTTP/1.1 403")) << got;
  EXPECT_NE(got.find("x-request-id: req-1"), std::string::npos) << got;
  EXPECT_EQ(trace.completes, 1);
  EXPECT_EQ(trace.last_status, 403);
  EXPECT_EQ(trace.last_error, map_error(ErrorCode::kForbidden).code);
}

TEST(Pipeline, AStageThatWaitsIsAwaitedAndMayRefuse) {
  {
    Trace trace;
    std::vector<std::unique_ptr<AdmissionStage>> stages;
    stages.push_back(std::make_unique<Step>(trace, "quota", Verdict::wait()));
    run(chain(trace, std::move(stages)));
    EXPECT_EQ(trace.steps, (std::vector<std::string>{"quota", "quota (waited)", "handler"}));
  }
  Trace trace;
  std::vector<std::unique_ptr<AdmissionStage>> stages;
  stages.push_back(std::make_unique<Step>(trace, "quota", Verdict::wait(), busy()));
  stages.push_back(std::make_unique<Step>(trace, "after", Verdict::go()));
  const std::string got = run(chain(trace, std::move(stages)));
  EXPECT_EQ(trace.steps, (std::vector<std::string>{"quota", "quota (waited)"}));
  EXPECT_TRUE(got.starts_with("HTTP/1.1 429")) << got;
  EXPECT_NE(got.find("Retry-After: 3"), std::string::npos) << got;
  EXPECT_EQ(trace.last_status, 429);
}

// A stage that answers from what it holds (as a result cache would): it
// waits to write, then writes the whole answer itself.
class Canned final : public AdmissionStage {
 public:
  explicit Canned(Trace& trace) : trace_(trace) {}
  std::string_view name() const override { return "canned"; }
  Phase phase() const override { return Phase::kAnswerEarly; }
  Verdict admit(RequestContext&) override {
    trace_.steps.push_back("canned");
    return Verdict::wait();
  }
  Task<Verdict> admit_async(RequestContext& ctx) override {
    http::response<http::string_body> res{http::status::ok, 11};
    res.body() = "from the stage";
    const bool sent = co_await ctx.sink->send(res);
    ctx.outcome.status = sent ? 200 : 499;
    co_return Verdict::answered();
  }

 private:
  Trace& trace_;
};

TEST(Pipeline, AStageMayAnswerItselfAndThenNothingAfterItRuns) {
  Trace trace;
  std::vector<std::unique_ptr<AdmissionStage>> stages;
  stages.push_back(std::make_unique<Step>(trace, "auth", Phase::kAuthenticate, Verdict::go()));
  stages.push_back(std::make_unique<Canned>(trace));
  stages.push_back(std::make_unique<Step>(trace, "quota", Verdict::go()));
  const std::string got = run(chain(trace, std::move(stages)));
  EXPECT_EQ(trace.steps, (std::vector<std::string>{"auth", "canned"})) << "no later stage, no handler";
  EXPECT_TRUE(got.starts_with("HTTP/1.1 200")) << got;
  EXPECT_NE(got.find("from the stage"), std::string::npos) << got;
  EXPECT_EQ(got.find("answered"), std::string::npos) << "the handler's answer too: " << got;
  EXPECT_EQ(trace.starts, 1);
  EXPECT_EQ(trace.completes, 1);
  EXPECT_EQ(trace.last_status, 200);
  EXPECT_TRUE(trace.last_error.empty()) << trace.last_error;
}

TEST(Pipeline, ObserversHearThatAnAnswerBeganOnceHoweverOftenTheHandlerSaysSo) {
  Trace trace;
  Pipeline p;
  p.set_handler(std::make_unique<Answer>(trace, 2));
  p.add_observer(std::make_unique<Watch>(trace));
  run(p);
  EXPECT_EQ(trace.steps, (std::vector<std::string>{"handler", "answer started"}));
  EXPECT_EQ(trace.answer_starts, 1);
  EXPECT_EQ(trace.completes, 1);

  Trace quiet;  // an answer that never reports a stream: never told
  run(chain(quiet, {}));
  EXPECT_EQ(quiet.answer_starts, 0);
  EXPECT_EQ(quiet.completes, 1);
}

TEST(Pipeline, ARefusalNobodyHearsIsCounted499) {
  Trace trace;
  std::vector<std::unique_ptr<AdmissionStage>> stages;
  stages.push_back(std::make_unique<Step>(trace, "a", Verdict::refuse(forbidden())));
  run(chain(trace, std::move(stages)), /*client_leaves_first=*/true);
  EXPECT_EQ(trace.completes, 1);
  EXPECT_EQ(trace.last_status, 499);
}

// An observer that records before the answer's end (the store's journal):
// what the client had been sent when it ran, and the status it saw and the
// one on_complete saw.
struct EndSeen {
  std::vector<std::size_t> bytes_at_end, bytes_at_complete;
  int status_at_end = 0, status_at_complete = 0;
};
class RecordsBeforeEnd final : public CompletionObserver {
 public:
  explicit RecordsBeforeEnd(EndSeen& seen) : seen_(seen) {}
  bool records_before_answer_end() const override { return true; }
  void on_answer_end(const RequestContext& ctx) override {
    seen_.bytes_at_end.push_back(ctx.conn.body_bytes_sent());
    seen_.status_at_end = ctx.rec.status;
  }
  void on_complete(const RequestContext& ctx) override {
    seen_.bytes_at_complete.push_back(ctx.conn.body_bytes_sent());
    seen_.status_at_complete = ctx.rec.status;
  }

 private:
  EndSeen& seen_;
};

// A streamed answer: "a" in its own write, "b" with the end.
class StreamAnswer final : public AdmittedHandler {
 public:
  Task<void> run(RequestContext& ctx) override {
    const ResponseHead head{.status = 200, .content_type = "text/event-stream", .cache_control = {}, .upstream = {},
                            .gateway = {}};
    const std::string_view first[] = {"a"};
    const std::string_view last[] = {"b"};
    co_await ctx.sink->write_stream(&head, first, false);
    const bool ended = co_await ctx.sink->write_stream(nullptr, last, true);
    ctx.outcome.status = ended ? 200 : 499;
  }
};

TEST(Pipeline, TheAnswersLastWriteWaitsForWhatMustBeRecordedBeforeIt) {
  Trace trace;
  EndSeen seen;
  Pipeline whole;
  whole.set_handler(std::make_unique<Answer>(trace));
  whole.add_observer(std::make_unique<RecordsBeforeEnd>(seen));
  const std::string got = run(whole);
  EXPECT_NE(got.find("answered"), std::string::npos) << got;
  EXPECT_EQ(seen.bytes_at_end, std::vector<std::size_t>{0});  // the whole answer held
  EXPECT_EQ(seen.bytes_at_complete, std::vector<std::size_t>{8});
  EXPECT_EQ(seen.status_at_end, 200);

  EndSeen streamed;
  Pipeline stream;
  stream.set_handler(std::make_unique<StreamAnswer>());
  stream.add_observer(std::make_unique<RecordsBeforeEnd>(streamed));
  const std::string events = run(stream);
  EXPECT_NE(events.find("0\r\n\r\n"), std::string::npos) << events;  // ended, after the observer
  EXPECT_EQ(streamed.bytes_at_end, std::vector<std::size_t>{1});        // "a" out, "b" and the end held
  EXPECT_EQ(streamed.bytes_at_complete, std::vector<std::size_t>{2});

  // Without such an observer nothing is held.
  Pipeline plain;
  plain.set_handler(std::make_unique<Answer>(trace));
  plain.add_observer(std::make_unique<Watch>(trace));
  EXPECT_NE(run(plain).find("answered"), std::string::npos);
}

// A client gone before the answer's end: nothing is held for it, the
// connection says at once that the write failed.
class AnswerChecked final : public AdmittedHandler {
 public:
  Task<void> run(RequestContext& ctx) override {
    http::response<http::string_body> res{http::status::ok, 11};
    res.body() = "answered";
    const bool delivered = co_await ctx.sink->send(res);
    ctx.outcome.status = delivered ? 200 : 499;
  }
};

TEST(Pipeline, NothingIsHeldForAClientAlreadyGone) {
  EndSeen seen;
  Pipeline p;
  p.set_handler(std::make_unique<AnswerChecked>());
  p.add_observer(std::make_unique<RecordsBeforeEnd>(seen));
  run(p, /*client_leaves_first=*/true);
  EXPECT_EQ(seen.status_at_end, 499);
  EXPECT_EQ(seen.status_at_complete, 499);
}

// A reload puts a new Runtime in the slot while a request is in flight: the
// request keeps the one it took at its start, to its end (and keeps it
// alive), and the next request takes the new one.
class Reload final : public AdmissionStage {
 public:
  Reload(CurrentSlot<const Runtime>& slot, std::shared_ptr<const Runtime> next) : slot_(slot), next_(std::move(next)) {}
  std::string_view name() const override { return "reload"; }
  Phase phase() const override { return Phase::kAdmit; }
  Verdict admit(RequestContext&) override { return next_ ? Verdict::wait() : Verdict::go(); }
  Task<Verdict> admit_async(RequestContext&) override {
    slot_.store(std::move(next_));  // while this request waits here
    co_return Verdict::go();
  }

 private:
  CurrentSlot<const Runtime>& slot_;
  std::shared_ptr<const Runtime> next_;
};

class SeenRuntime final : public CompletionObserver {
 public:
  explicit SeenRuntime(std::vector<const Runtime*>& seen) : seen_(seen) {}
  void on_start(RequestContext& ctx) override { seen_.push_back(ctx.runtime.get()); }
  void on_complete(const RequestContext& ctx) override { seen_.push_back(ctx.runtime.get()); }

 private:
  std::vector<const Runtime*>& seen_;
};

std::shared_ptr<const Runtime> runtime_with_model(const std::string& model) {
  auto config = parse_config("models: [{name: " + model + ", backends: [{url: \"http://127.0.0.1:9000\"}]}]\n");
  EXPECT_TRUE(config) << ::testing::PrintToString(config.error());
  return std::make_shared<const Runtime>(std::move(*config));
}

TEST(Pipeline, ARequestKeepsTheRuntimeItStartedWithWhenTheSlotIsSwapped) {
  auto first = runtime_with_model("old");
  auto second = runtime_with_model("new");
  const Runtime* first_at = first.get();
  const Runtime* second_at = second.get();
  CurrentSlot<const Runtime> slot(std::move(first));  // the slot holds the only reference
  std::weak_ptr<const Runtime> first_alive = slot.load();

  Trace trace;
  std::vector<const Runtime*> seen;
  Pipeline p;
  p.add_stage(std::make_unique<Reload>(slot, std::move(second)));
  p.set_handler(std::make_unique<Answer>(trace));
  p.add_observer(std::make_unique<SeenRuntime>(seen));

  run(p, false, &slot);  // swaps the slot to `second` between its start and its end
  EXPECT_EQ(slot.load().get(), second_at);
  EXPECT_EQ(seen, (std::vector<const Runtime*>{first_at, first_at}));  // start and end: the first
  EXPECT_EQ(trace.steps, (std::vector<std::string>{"handler"}));
  EXPECT_TRUE(first_alive.expired());  // released with the request that held it last

  run(p, false, &slot);  // the next request starts after the swap
  EXPECT_EQ(seen, (std::vector<const Runtime*>{first_at, first_at, second_at, second_at}));
}

}  // namespace
}  // namespace arbiter
