// Issue 15 end to end, against real arbiter-sim processes (one per backend,
// so one can be killed): outlier ejection of a backend answering 5xx, the
// mid-stream failover of resumable streams when a backend dies, the model
// breaker's walk through degraded variant, fallback and isolation and back,
// the retry budget with every backend failing, and fail-fast when no
// backend is alive. Every load is bounded in count and time; every read has
// a deadline, so a gateway that hangs fails a test instead of blocking it.
// RES_VERBOSE=1 prints each test's figures (ejection time, retries, answers).
#include <gtest/gtest.h>

#include <algorithm>
#include <atomic>
#include <csignal>
#include <functional>
#include <future>
#include <iostream>
#include <map>
#include <memory>
#include <mutex>
#include <sstream>
#include <thread>
#include <vector>

#include "integration/sim_harness.hpp"
#include "support/gateway_config.hpp"
#include "support/gateway_process.hpp"
#include "support/harness.hpp"  // describe_output
#include "support/metrics_text.hpp"
#include "support/audit_trail.hpp"

namespace arbiter::test {
namespace {

using Sims = std::vector<std::unique_ptr<SimProcess>>;

// `n` simulators serving `model`, each its own process (started from the
// test's thread: ChildProcess's death signal follows the thread that forked).
Sims start_sims(std::size_t n, const std::string& model, const std::string& profile,
                const std::vector<std::string>& more = {}) {
  Sims sims;
  for (std::size_t i = 0; i < n; ++i) {
    std::vector<std::string> flags = {"--profile", profile, "--model", model, "--seed", std::to_string(i + 1)};
    flags.insert(flags.end(), more.begin(), more.end());
    sims.push_back(std::make_unique<SimProcess>(flags));
  }
  return sims;
}

std::vector<uint16_t> ports_of(const Sims& sims) {
  std::vector<uint16_t> ports;
  for (const auto& s : sims) ports.push_back(s->port());
  return ports;
}

// Backends named sim0, sim1, ... (the label in metrics and x-arbiter-backend).
std::vector<std::string> names(std::size_t n, const std::string& prefix = "sim") {
  std::vector<std::string> out;
  for (std::size_t i = 0; i < n; ++i) out.push_back(", name: " + prefix + std::to_string(i));
  return out;
}

std::string gateway_metrics(uint16_t port) { return http_get(port, "/metrics", {}, Millis(5'000)).body; }

double gw_metric(uint16_t port, const std::string& name, const Labels& labels = {}) {
  return metric_value(gateway_metrics(port), name, labels).value_or(0);
}

// Sum over the simulators of one of their metrics.
double sims_metric(Sims& sims, const std::string& name) {
  double sum = 0;
  for (auto& s : sims) sum += s->metric(name).value_or(0);
  return sum;
}

// A chat request of `cls` to the gateway: exactly `tokens` tokens asked for.
HttpRequest chat(const std::string& cls, int tokens, bool stream, const std::string& content = "Say hello.",
                 const std::string& model = "m1", const char* key = kAlphaKey) {
  std::string extra = "\"max_tokens\":" + std::to_string(tokens) + ",\"min_tokens\":" + std::to_string(tokens);
  if (stream) extra += ",\"stream\":true";
  return gateway_post("/v1/chat/completions", sim_chat(extra, content, model), key, cls);
}

struct Answer {
  int status = 0;  // -1: no answer (timeout, connection failure)
  std::string body;
  Headers headers;
  double ms = 0;        // from send to the whole answer
  double sent_ms = 0;   // send time, from the load's start
  std::string failure;  // status -1: why
  std::optional<std::string> header(std::string_view name) const {
    for (const auto& [k, v] : headers)
      if (k == name) return v;
    return std::nullopt;
  }
};

Answer call(uint16_t port, const HttpRequest& request, Millis timeout) {
  Answer a;
  const auto start = Clock::now();
  try {
    HttpResponse r = http_call(port, request, timeout);
    a.status = r.status;
    a.body = std::move(r.body);
    a.headers = std::move(r.headers);
  } catch (const std::exception& e) {
    a.status = -1;
    a.failure = e.what();
  }
  a.ms = ms_between(start, Clock::now());
  return a;
}

// `n` requests, `concurrency` at a time (closed loop), each bounded by
// `timeout`; answers in request order.
std::vector<Answer> run_load(uint16_t port, int n, int concurrency, const std::function<HttpRequest(int)>& make,
                             Millis timeout = Millis(10'000)) {
  std::vector<Answer> answers(n);
  std::atomic<int> next{0};
  const auto start = Clock::now();
  std::vector<std::thread> workers;
  for (int w = 0; w < concurrency; ++w) {
    workers.emplace_back([&] {
      for (int i; (i = next.fetch_add(1)) < n;) {
        const double sent = ms_between(start, Clock::now());
        answers[i] = call(port, make(i), timeout);
        answers[i].sent_ms = sent;
      }
    });
  }
  for (auto& t : workers) t.join();
  return answers;
}

// "status: count, ..." of a load's answers, and one body per status.
std::string summary(const std::vector<Answer>& answers) {
  std::map<int, int> counts;
  std::map<int, std::string> sample;
  for (const auto& a : answers) {
    ++counts[a.status];
    if (!sample.contains(a.status)) sample[a.status] = a.status < 0 ? a.failure : a.body.substr(0, 300);
  }
  std::ostringstream out;
  for (const auto& [s, c] : counts) out << s << ": " << c << " (e.g. " << sample[s] << ")\n";
  return out.str();
}

// The gateway's stderr lines holding `needle` (its JSON event lines).
std::vector<std::string> stderr_lines(const GatewayProcess& gateway, const std::string& needle) {
  std::vector<std::string> out;
  std::istringstream in(gateway.stderr_text());
  for (std::string line; std::getline(in, line);)
    if (line.find(needle) != std::string::npos) out.push_back(line);
  return out;
}

// Sets `stop` and joins `threads` however the scope is left (an ASSERT's
// return included: a joinable std::thread's destructor would terminate the
// whole binary, hiding every later test's result).
class StopAndJoin {
 public:
  StopAndJoin(std::atomic<bool>& stop, std::vector<std::thread>& threads) : stop_(stop), threads_(threads) {}
  ~StopAndJoin() { now(); }
  StopAndJoin(const StopAndJoin&) = delete;
  StopAndJoin& operator=(const StopAndJoin&) = delete;
  void now() {
    stop_ = true;
    for (auto& t : threads_)
      if (t.joinable()) t.join();
  }

 private:
  std::atomic<bool>& stop_;
  std::vector<std::thread>& threads_;
};

std::string joined(const std::vector<std::string>& lines) {
  std::string out;
  for (const auto& l : lines) out += l + "\n";
  return out;
}

// ---------------------------------------------------------------------------
// 1. 30% 5xx on one of three backends: clients see (almost) nothing of it,
// and the backend is ejected within 2 s. The fault strikes a gateway that
// has been serving for a while (100 requests), as in the chaos drill.
void five_hundreds_on_one_of_three(const std::string& extra) {
  // llama-8b-a100: ~0.1 s a request, so 8 clients send ~70 requests a
  // second, an engine's realistic pace, and the load lasts a few seconds.
  Sims sims = start_sims(3, "m1", "llama-8b-a100");
  GatewayConfig config;
  config.backend_ports = ports_of(sims);
  config.max_concurrency = 16;
  config.engine_signals = true;
  config.backend_extras = names(3);
  config.extra = extra;
  GatewayProcess gateway(config.to_yaml());
  const auto question = [](int i) { return chat("chat", 8, false, "Question " + std::to_string(i) + ": say hello."); };

  const auto warm = run_load(gateway.port(), 100, 8, question);
  ASSERT_TRUE(std::all_of(warm.begin(), warm.end(), [](const Answer& a) { return a.status == 200; }))
      << summary(warm);
  ASSERT_EQ(sims[0]->set_faults(R"({"error_rate":0.3,"error_status":500})"), 200);
  const auto fault = Clock::now();
  // The time of the first ejection, watched on /metrics.
  std::atomic<bool> done{false};
  std::atomic<double> ejected_ms{-1};
  std::thread watch([&] {
    while (!done) {
      if (gw_metric(gateway.admin_port(), "arbiter_backend_ejections_total", {{"backend", "sim0"}}) > 0) {
        ejected_ms = ms_between(fault, Clock::now());
        return;
      }
      std::this_thread::sleep_for(Millis(20));
    }
  });
  constexpr int kRequests = 400;
  const auto answers = run_load(gateway.port(), kRequests, 8, [&](int i) { return question(100 + i); });
  const double load_ms = ms_between(fault, Clock::now());
  // Ejection watched for 2 s after the load if it has not happened yet.
  const auto watch_until = Clock::now() + Millis(2'000);
  while (ejected_ms < 0 && Clock::now() < watch_until) std::this_thread::sleep_for(Millis(20));
  done = true;
  watch.join();

  const auto errors = std::count_if(answers.begin(), answers.end(), [](const Answer& a) { return a.status != 200; });
  const std::string metrics = gateway_metrics(gateway.admin_port());
  const auto retries = [&](const std::string& kind) {
    return std::to_string(metric_value(metrics, "arbiter_retries_total", {{"kind", kind}}).value_or(0));
  };
  const std::string facts =
      "load after the fault: " + std::to_string(load_ms) + " ms\n" + summary(answers) + "sim0 received " +
      std::to_string(sims[0]->metric("arbiter_sim_requests_received_total").value_or(-1)) + " (100 before the fault: " +
      "~33), faults injected " +
      std::to_string(sims[0]->metric("arbiter_sim_faults_injected_total", {{"kind", "error"}}).value_or(-1)) +
      "\nretries: retry " + retries("retry") + ", refused_budget " + retries("refused_budget") + ", exhausted " +
      retries("exhausted") + "\nejections of sim0: " +
      std::to_string(metric_value(metrics, "arbiter_backend_ejections_total", {{"backend", "sim0"}}).value_or(0)) +
      "\n" + joined(stderr_lines(gateway, "\"event\""));
  if (std::getenv("RES_VERBOSE")) std::cout << "ejected after " << ejected_ms.load() << " ms\n" << facts;
  EXPECT_LT(static_cast<double>(errors) / kRequests, 0.005) << errors << " client errors\n" << facts;
  EXPECT_GE(ejected_ms.load(), 0) << "sim0 never ejected\n" << facts;
  // How soon, as a count and not a time (a shared 2-core machine cannot
  // hold a timing bound: 2.1 s was seen under a parallel ctest, 0.2-1.7 s
  // alone; `make chaos` reports the time): ejected after few of its
  // requests failed, so clients were spared the rest of its 30%.
  const double failed_on_sim0 =
      sims[0]->metric("arbiter_sim_faults_injected_total", {{"kind", "error"}}).value_or(1e9);
  EXPECT_LE(failed_on_sim0, 20) << "sim0 ejected " << ejected_ms.load() << " ms after the fault\n" << facts;
  // A retried answer comes from another backend, and says how often it was retried.
  int retried = 0;
  for (const auto& a : answers) {
    if (!a.header("x-arbiter-retries")) continue;
    retried += std::stoi(*a.header("x-arbiter-retries"));
    EXPECT_NE(a.header("x-arbiter-backend"), "sim0")
        << "a retry goes to another backend when one has room: " << a.status << " retries "
        << *a.header("x-arbiter-retries") << " request " << a.header("x-request-id").value_or("?") << " "
        << a.body.substr(0, 200);
  }
  EXPECT_EQ(retried, metric_value(metrics, "arbiter_retries_total", {{"kind", "retry"}}).value_or(0)) << facts;
  // Only the failing backend is ejected.
  EXPECT_EQ(metric_value(metrics, "arbiter_backend_ejections_total", {{"backend", "sim1"}}).value_or(0), 0) << facts;
  EXPECT_EQ(metric_value(metrics, "arbiter_backend_ejections_total", {{"backend", "sim2"}}).value_or(0), 0) << facts;
  // The ejection is logged as a backend_health event.
  const auto lines = stderr_lines(gateway, "\"event\":\"backend_health\"");
  EXPECT_TRUE(std::any_of(lines.begin(), lines.end(), [](const std::string& l) {
    return l.find("\"backend\":\"sim0\"") != std::string::npos && l.find("\"to\":\"ejected\"") != std::string::npos;
  })) << facts;
}

// Out of the box: outlier detection, retries and the breaker at their
// defaults, as the issue's "must be shown" and the chaos drill measure it.
TEST(Resilience, FiveHundredsOnOneOfThreeBackendsEjectItAndClientsBarelyNotice) {
  five_hundreds_on_one_of_three("");
}

// The same with a failure-rate rule that can see the fault within 2 s: 15%
// over a 1 s window. The default 50% over 10 s never trips at 30%; a
// window holding seconds of the healthy past dilutes the rate for as long;
// and the simulator's draws are lumpy (16% to 35% over a second or two).
// This checks the wiring end to end (verdicts, ejection, the scheduler told,
// retries elsewhere), whatever the default thresholds.
TEST(Resilience, FiveHundredsOnOneOfThreeBackendsWithAFailureRateRuleThatSeesThem) {
  five_hundreds_on_one_of_three("outlier_detection: {failure_rate: 0.15, window_ms: 1000}\n");
}

// ---------------------------------------------------------------------------
// 2. A backend killed during 100 streams: resumable ones (batch: background
// and preemptible) complete in full on another backend, the others on that
// backend end with an error event, none hangs.
TEST(Resilience, BackendKilledMidStreamResumableStreamsCompleteElsewhereOthersEndWithAnError) {
  Sims sims = start_sims(3, "m1", "llama-8b-a100");
  GatewayConfig config;
  config.backend_ports = ports_of(sims);
  config.max_concurrency = 64;  // 100 streams at once over three backends: nobody queues
  config.engine_signals = true;
  config.backend_extra = ", continue_final_message: true";
  config.backend_extras = names(3);
  GatewayProcess gateway(config.to_yaml());

  constexpr int kStreams = 100;
  // ~6 s at ~33 streams per engine: under ThreadSanitizer's slowdown 150
  // (~2 s) let some streams on the victim end before the test had started
  // all 100 and killed it.
  constexpr int kTokens = 450;
  struct Stream {
    std::string cls, backend, body, failure;
    bool complete = false, hung = false;
    int status = 0;
  };
  std::vector<Stream> streams(kStreams);
  std::atomic<int> started{0};
  std::atomic<bool> killed{false};
  std::vector<std::thread> clients;
  for (int i = 0; i < kStreams; ++i) {
    streams[i].cls = i % 2 == 0 ? "batch" : "chat";
    clients.emplace_back([&, i] {
      Stream& s = streams[i];
      bool counted = false;
      try {
        HttpConnection conn(gateway.port());
        conn.send(chat(s.cls, kTokens, true, "Essay " + std::to_string(i) + ": write about the sea."));
        const HttpResponse head = conn.read_head(Millis(10'000));
        s.status = head.status;
        s.backend = head.header("x-arbiter-backend").value_or("");
        conn.read_events(6, Millis(10'000));  // role + 5 tokens: generating
        ++started;
        counted = true;
        try {
          conn.read_rest(Millis(30'000));
        } catch (const TimeoutError&) {
          s.hung = true;
        }
        s.body = conn.body();
        s.complete = conn.complete();
        if (conn.error()) s.failure = *conn.error();
      } catch (const std::exception& e) {
        s.failure = e.what();
      }
      if (!counted) ++started;
    });
  }
  // Every stream generating, then the backend holding the most is killed.
  const auto wait_until = Clock::now() + Millis(20'000);
  while (started < kStreams && Clock::now() < wait_until) std::this_thread::sleep_for(Millis(5));
  std::map<std::string, int> per_backend;
  std::size_t victim = 0;
  if (started == kStreams) {
    for (const auto& s : streams) ++per_backend[s.backend];  // every head is in: no race
    for (std::size_t b = 1; b < 3; ++b)
      if (per_backend["sim" + std::to_string(b)] > per_backend["sim" + std::to_string(victim)]) victim = b;
    sims[victim]->child().signal(SIGKILL);
    killed = true;
  }
  const std::string victim_name = "sim" + std::to_string(victim);
  for (auto& t : clients) t.join();
  ASSERT_TRUE(killed) << "not every stream started within 20 s\n" << describe_output(gateway);

  int batch_on_victim = 0, chat_on_victim = 0;
  std::ostringstream problems;
  for (int i = 0; i < kStreams; ++i) {
    const Stream& s = streams[i];
    const std::string who = "stream " + std::to_string(i) + " (" + s.cls + " on " + s.backend + "): ";
    if (s.status != 200) {
      problems << who << "status " << s.status << " " << s.failure << "\n";
      continue;
    }
    if (s.hung) {
      problems << who << "hung (no end within 30 s)\n";
      continue;
    }
    std::vector<boost::json::object> payloads;
    try {
      payloads = sse_payloads(s.body);
    } catch (const std::exception& e) {
      problems << who << "bad SSE: " << e.what() << "\n";
      continue;
    }
    const bool error_event = !payloads.empty() && payloads.back().contains("error");
    const bool on_victim = s.backend == victim_name;
    if (s.cls == "batch") batch_on_victim += on_victim;
    if (s.cls == "chat") chat_on_victim += on_victim;
    if (s.cls == "batch" || !on_victim) {
      // Complete, every token once, no error.
      std::vector<boost::json::object> tokens;
      for (const auto& p : payloads)
        if (!p.contains("error")) tokens.push_back(p);
      const std::size_t words = word_count(stream_text(tokens));
      if (error_event || words != static_cast<std::size_t>(kTokens) || !s.body.ends_with("data: [DONE]\n\n") ||
          !s.complete) {
        problems << who << words << " tokens, error event " << error_event << ", complete " << s.complete
                 << ", failure '" << s.failure << "', tail: "
                 << s.body.substr(s.body.size() > 300 ? s.body.size() - 300 : 0) << "\n";
      }
    } else if (!error_event) {
      problems << who << "no final error event; tail: "
               << s.body.substr(s.body.size() > 300 ? s.body.size() - 300 : 0) << "\n";
    }
  }
  const std::string metrics = gateway_metrics(gateway.admin_port());
  EXPECT_TRUE(problems.str().empty())
      << problems.str() << "victim " << victim_name << " held " << per_backend[victim_name] << " streams ("
      << batch_on_victim << " batch)\nfailovers "
      << metric_value(metrics, "arbiter_retries_total", {{"kind", "failover"}}).value_or(0) << ", refused_budget "
      << metric_value(metrics, "arbiter_retries_total", {{"kind", "refused_budget"}}).value_or(0) << ", exhausted "
      << metric_value(metrics, "arbiter_retries_total", {{"kind", "exhausted"}}).value_or(0) << "\n"
      << describe_output(gateway);
  EXPECT_GT(batch_on_victim, 0) << "the test needs resumable streams on the killed backend";
  // Two of three backends live: the model still serves new requests.
  const auto after = run_load(gateway.port(), 10, 2, [](int i) {
    return chat("chat", 4, false, "After the crash " + std::to_string(i));
  });
  EXPECT_TRUE(std::all_of(after.begin(), after.end(), [](const Answer& a) { return a.status == 200; }))
      << "new requests after the crash: " << summary(after) << joined(stderr_lines(gateway, "\"event\""));
  EXPECT_GT(chat_on_victim, 0) << "the test needs non-resumable streams on the killed backend";
  EXPECT_GE(metric_value(metrics, "arbiter_retries_total", {{"kind", "failover"}}).value_or(0), batch_on_victim);
  // The audit trail (the store, on by default) has each failover, from the
  // killed backend to another.
  const std::string from = "from=" + victim_name + " to=";
  bool found = false;
  const std::string trail = audit_trail_with(gateway, from, found);
  EXPECT_TRUE(found) << "no failover row " << from << " in " << trail;
  EXPECT_EQ(trail.find(from + victim_name + " "), std::string::npos) << "a failover back onto the dead backend";
}

// ---------------------------------------------------------------------------
// 3. The model breaker: m1 (degraded: m1-awq, fallback: small), each model
// on its own simulator. Errors walk it closed -> degraded -> fallback ->
// isolated (5/10/20% over 10 requests or more), a failed half-open opens
// isolation again, and once the faults are gone the trials close it.
TEST(Resilience, ModelBreakerWalksDegradedFallbackIsolatedAndBack) {
  Sims m1 = start_sims(1, "m1", "tiny");
  Sims awq = start_sims(1, "m1-awq", "tiny");
  Sims small = start_sims(1, "small", "tiny");
  GatewayConfig config;
  config.backend_ports = ports_of(m1);
  config.engine_signals = true;
  config.models_extra = "    degraded: m1-awq\n    fallback: small\n"
                        "  - name: m1-awq\n    backends:\n      - {url: \"http://127.0.0.1:" +
                        std::to_string(awq[0]->port()) +
                        "\", name: awq0}\n"
                        "  - name: small\n    backends:\n      - {url: \"http://127.0.0.1:" +
                        std::to_string(small[0]->port()) + "\", name: small0}\n";
  // Openings of 3, 6 s (capped): each stage's ten requests must all be
  // served inside its opening, which a loaded 2-core machine cannot be
  // trusted to do in 0.5 s; the isolated openings are waited out by
  // polling, not timed. A window (30 s, each stage starts it afresh) long
  // enough to hold each stage's requests however slowly they go.
  config.extra = "model_breaker: {window_ms: 30000, min_requests: 10, base_open_ms: 3000, max_open_ms: 6000}\n";
  GatewayProcess gateway(config.to_yaml());
  const uint16_t port = gateway.port();
  const auto ask = [&] { return call(port, chat("chat", 2, false), Millis(5'000)); };
  // The breaker observer records an answer once it has gone out, so the
  // stage is polled for (at most 2 s), not read once right after an answer.
  const auto stage_is = [&](const std::string& stage) {
    return gateway.wait_for_metric("arbiter_model_breaker_stage", [](double v) { return v == 1; }, Millis(2'000),
                                   {{"model", "m1"}, {"stage", stage}}) == 1;
  };
  const auto transitions = [&](const std::string& from, const std::string& to) {
    return gw_metric(gateway.admin_port(), "arbiter_model_breaker_transitions_total", {{"model", "m1"}, {"from", from}, {"to", to}});
  };
  const auto served_by = [](const Answer& a) {
    try {
      return std::string(boost::json::parse(a.body).at("model").as_string());
    } catch (const std::exception&) {
      return std::string("?");
    }
  };
  // The breaker's transitions and, to tell why a trial failed, the
  // backends' health (ejections, probes) and the gateway's warnings.
  const auto log = [&] { return joined(stderr_lines(gateway, "\"level\":\"warn\"")); };

  // Closed: 19 answers from m1 itself.
  for (int i = 0; i < 19; ++i) {
    const Answer a = ask();
    ASSERT_EQ(a.status, 200) << a.body;
    EXPECT_EQ(served_by(a), "m1");
    EXPECT_EQ(a.header("x-arbiter-model").value_or("m1"), "m1");
  }
  EXPECT_TRUE(stage_is("closed"));

  // 1 failure in 20: 5% -> degraded.
  ASSERT_EQ(m1[0]->set_faults(R"({"error_rate":1,"error_status":500})"), 200);
  EXPECT_EQ(ask().status, 500);
  EXPECT_TRUE(stage_is("degraded")) << log();
  EXPECT_EQ(transitions("closed", "degraded"), 1) << log();

  // Degraded (open 3 s): m1-awq serves; 1 failure in 10: 10% -> fallback.
  for (int i = 0; i < 9; ++i) {
    const Answer a = ask();
    ASSERT_EQ(a.status, 200) << a.body << "\n" << log();
    EXPECT_EQ(a.header("x-arbiter-model"), "m1-awq");
    EXPECT_EQ(a.header("x-arbiter-breaker"), "degraded");
    EXPECT_EQ(served_by(a), "m1-awq");
  }
  ASSERT_EQ(awq[0]->set_faults(R"({"error_rate":1,"error_status":500})"), 200);
  EXPECT_EQ(ask().status, 500);
  EXPECT_TRUE(stage_is("fallback")) << log();
  EXPECT_EQ(transitions("degraded", "fallback"), 1) << log();

  // Fallback (open 6 s): small serves; 2 failures in 10: 20% -> isolated.
  for (int i = 0; i < 8; ++i) {
    const Answer a = ask();
    ASSERT_EQ(a.status, 200) << a.body << "\n" << log();
    EXPECT_EQ(a.header("x-arbiter-model"), "small");
    EXPECT_EQ(a.header("x-arbiter-breaker"), "fallback");
    EXPECT_EQ(served_by(a), "small");
  }
  ASSERT_EQ(small[0]->set_faults(R"({"error_rate":1,"error_status":500})"), 200);
  EXPECT_EQ(ask().status, 500);
  EXPECT_EQ(ask().status, 500);
  EXPECT_TRUE(stage_is("isolated")) << log();
  EXPECT_EQ(transitions("fallback", "isolated"), 1) << log();

  // Isolated (open 6 s): refused by the gateway's breaker itself (its
  // code, model_unavailable, is no engine's) with Retry-After.
  {
    const Answer a = ask();
    ASSERT_EQ(a.status, 503) << a.body;
    EXPECT_EQ(boost::json::parse(a.body).at("error").at("code"), "model_unavailable") << a.body;
    ASSERT_TRUE(a.header("retry-after").has_value());
    const int retry = std::stoi(*a.header("retry-after"));
    EXPECT_GE(retry, 1);
    EXPECT_LE(retry, 6);
  }
  // Refused until the opening ends (polled, 100 ms apart), then half-open
  // while m1 still fails: the trial goes to m1 itself and fails, and
  // isolation opens again.
  const auto until_not_refused = [&](Millis deadline) {
    const auto until = Clock::now() + deadline;
    Answer a = ask();
    while (a.status == 503 && Clock::now() < until) {
      std::this_thread::sleep_for(Millis(100));
      a = ask();
    }
    return a;
  };
  EXPECT_EQ(until_not_refused(Millis(30'000)).status, 500) << "a half-open trial goes to m1 itself\n" << log();
  {
    const Answer a = ask();
    EXPECT_EQ(a.status, 503) << a.body << "\n" << log();
  }
  EXPECT_TRUE(stage_is("isolated")) << log();

  // The faults cleared: at the next half-open the trials succeed and the
  // breaker closes.
  for (auto* s : {&m1, &awq, &small}) ASSERT_EQ((*s)[0]->set_faults(R"({"error_rate":0})"), 200);
  const Answer trial = until_not_refused(Millis(30'000));
  const auto health_metrics = [&] {
    std::string out;
    std::istringstream all(gateway_metrics(gateway.admin_port()));
    for (std::string line; std::getline(all, line);) {
      if (line.find("backend_health") != std::string::npos || line.find("pool_panic") != std::string::npos ||
          line.find("no_backend") != std::string::npos) {
        out += line + "\n";
      }
    }
    return out;
  };
  ASSERT_EQ(trial.status, 200) << trial.body << "\n" << log() << "\n" << health_metrics();
  EXPECT_EQ(served_by(trial), "m1");
  for (int i = 0; i < 2; ++i) {
    const Answer a = ask();
    EXPECT_EQ(a.status, 200) << a.body;
    EXPECT_EQ(served_by(a), "m1");
  }
  EXPECT_TRUE(stage_is("closed")) << log();
  EXPECT_EQ(transitions("isolated", "closed"), 1) << log();
  for (int i = 0; i < 5; ++i) {
    const Answer a = ask();
    EXPECT_EQ(a.status, 200) << a.body;
    EXPECT_EQ(served_by(a), "m1");
    EXPECT_FALSE(a.header("x-arbiter-model").has_value() && *a.header("x-arbiter-model") != "m1");
  }
  // Each rerouted or refused request counted: 10 to the variant, 10 to the
  // fallback, 2 refused while isolated.
  const auto rerouted = [&](const std::string& target) {
    return gw_metric(gateway.admin_port(), "arbiter_model_rerouted_total", {{"model", "m1"}, {"target", target}});
  };
  EXPECT_EQ(rerouted("m1-awq"), 10);
  EXPECT_EQ(rerouted("small"), 10);
  EXPECT_GE(rerouted("isolated"), 2);
  // The openings' back-off as logged: 3, 6, then 6 (capped) twice.
  std::vector<double> opens;
  for (const auto& line : stderr_lines(gateway, "\"event\":\"model_breaker\"")) {
    const boost::json::object event = boost::json::parse(line).as_object();
    if (event.at("half_open").as_bool()) continue;
    opens.push_back(event.at("open_s").to_number<double>());
  }
  EXPECT_EQ(opens, (std::vector<double>{3, 6, 6, 6, 0})) << log();
}

// ---------------------------------------------------------------------------
// 4. Retry budget: with every backend failing, upstream attempts stay within
// 1.1x the client requests (not 1 + max_retries = 3x).
TEST(Resilience, EveryBackendFailingRetriesStayWithinTheBudget) {
  Sims sims = start_sims(3, "m1", "tiny", {"--error-rate", "1", "--error-status", "500"});
  GatewayConfig config;
  config.backend_ports = ports_of(sims);
  config.engine_signals = true;
  config.backend_extras = names(3);
  // Outlier detection and the model breaker off: with them, every backend
  // ejected (panic mode) and the model isolated (503 before any attempt)
  // would change what is counted; this measures the retry budget alone.
  config.extra = "outlier_detection: {enabled: false}\nmodel_breaker: {enabled: false}\n";
  GatewayProcess gateway(config.to_yaml());

  constexpr int kRequests = 300;
  const auto answers = run_load(gateway.port(), kRequests, 8, [](int i) {
    return chat("chat", 4, false, "Question " + std::to_string(i));
  });
  const double attempts = sims_metric(sims, "arbiter_sim_requests_received_total");
  const std::string metrics = gateway_metrics(gateway.admin_port());
  const double retries = metric_value(metrics, "arbiter_retries_total", {{"kind", "retry"}}).value_or(0);
  const std::string facts = summary(answers) + "upstream attempts " + std::to_string(attempts) + ", retries " +
                            std::to_string(retries) + ", refused_budget " +
                            std::to_string(metric_value(metrics, "arbiter_retries_total",
                                                        {{"kind", "refused_budget"}})
                                               .value_or(0));
  if (std::getenv("RES_VERBOSE")) std::cout << facts << "\n";
  EXPECT_TRUE(std::all_of(answers.begin(), answers.end(), [](const Answer& a) { return a.status == 500; })) << facts;
  // Without the budget each request would make 1 + max_retries = 3 attempts.
  EXPECT_GT(metric_value(metrics, "arbiter_retries_total", {{"kind", "refused_budget"}}).value_or(0), 0) << facts;
  EXPECT_GE(attempts, kRequests) << facts;
  EXPECT_LE(attempts, 1.1 * kRequests) << facts;
  EXPECT_EQ(attempts, kRequests + retries) << "every attempt is a request or a counted retry\n" << facts;
}

// ---------------------------------------------------------------------------
// 5. Fail fast: every backend killed -> 503 no_backend_available with a
// Retry-After at once, not after the class's 30 s queue wait.
TEST(Resilience, EveryBackendKilledRequestsFailFastWith503AndRetryAfter) {
  Sims sims = start_sims(3, "m1", "tiny");
  GatewayConfig config;
  config.backend_ports = ports_of(sims);
  config.engine_signals = true;  // the monitor's scrapes tell a dead backend
  config.backend_extras = names(3);
  config.max_concurrency = 1;  // so that requests can be queued in the gateway at the kill
  GatewayProcess gateway(config.to_yaml());
  ASSERT_EQ(call(gateway.port(), chat("chat", 2, false), Millis(5'000)).status, 200);

  // Three long requests running (one per backend) and three queued behind
  // them when every backend dies.
  std::vector<std::future<Answer>> caught;
  for (int i = 0; i < 6; ++i) {
    caught.push_back(std::async(std::launch::async, [&, i] {
      return call(gateway.port(), chat("chat", 4000, false, "Long " + std::to_string(i)), Millis(10'000));
    }));
  }
  const auto busy_until = Clock::now() + Millis(5'000);
  while ((sims_metric(sims, "vllm:num_requests_running") < 3 ||
          gw_metric(gateway.admin_port(), "arbiter_queue_depth") < 3) &&
         Clock::now() < busy_until) {
    std::this_thread::sleep_for(Millis(10));
  }
  ASSERT_EQ(sims_metric(sims, "vllm:num_requests_running"), 3);
  ASSERT_EQ(gw_metric(gateway.admin_port(), "arbiter_queue_depth"), 3);

  for (auto& s : sims) s->child().signal(SIGKILL);
  for (auto& s : sims) s->child().wait(Millis(2'000));
  // Answered, not left to wait for the class's 30 s queue deadline: each
  // call gives up after 10 s (status -1), far short of it.
  for (auto& f : caught) {
    const Answer a = f.get();
    EXPECT_GE(a.status, 500) << "running or queued at the kill: " << a.status << " " << a.failure << a.body
                             << " after " << a.ms << " ms\n" << describe_output(gateway);
    if (std::getenv("RES_VERBOSE")) std::cout << "caught by the kill: " << a.status << " after " << a.ms << " ms " << a.body.substr(0, 160) << "\n";
  }
  // Until the monitor has missed a few scrapes (100 ms apart), the dead
  // backends are tried (502, at once). Waited for on /metrics, without
  // requests, so the breaker (on by default: 20 requests in its window
  // before it judges) has seen only the 7 above when the fail-fast answers
  // begin.
  EXPECT_EQ(gateway.wait_for_metric("arbiter_backend_down", [](double v) { return v == 3; }, Millis(20'000)), 3)
      << describe_output(gateway);
  // Then every request is refused by the gateway itself: 503 with a
  // Retry-After, no_backend_available, and once the breaker (which counts
  // these answers as the model's failures) isolates the model, its own
  // model_unavailable. Each call is bounded by 5 s: far short of the
  // class's 30 s queue wait, so an answer at all is a fail-fast one.
  std::vector<Answer> answers;
  for (int i = 0; i < 20; ++i) answers.push_back(call(gateway.port(), chat("chat", 2, false), Millis(5'000)));
  if (std::getenv("RES_VERBOSE"))
    for (const auto& a : answers)
      std::cout << a.status << " in " << a.ms << " ms " << a.header("retry-after").value_or("-") << " "
                << a.body.substr(0, 160) << "\n";
  int no_backend = 0, isolated = 0;
  for (const auto& a : answers) {
    const std::string what = std::to_string(a.status) + " in " + std::to_string(a.ms) + " ms: " + a.failure + a.body;
    EXPECT_EQ(a.status, 503) << what << "\n" << describe_output(gateway);
    EXPECT_TRUE(a.header("retry-after").has_value()) << what;
    std::string code;
    try {
      code = boost::json::parse(a.body).at("error").at("code").as_string();
    } catch (const std::exception&) {
    }
    no_backend += code == "no_backend_available";
    isolated += code == "model_unavailable";
    EXPECT_TRUE(code == "no_backend_available" || code == "model_unavailable") << what;
  }
  // The breaker judges from its 20th request in the window: the first of
  // these are the gateway's fail-fast answers, the breaker's after that.
  EXPECT_GE(no_backend, 3) << "fail-fast answers before the breaker isolated the model";
  EXPECT_EQ(no_backend + isolated, 20);
}

// ---------------------------------------------------------------------------
// 6. An ejected backend returns only through a probe, and ramps up: ejected
// for failing every request, its probe at the ejection's end fails (still
// failing: ejected again, twice as long), the next succeeds (faults
// cleared), then slow start, then healthy; no client request reaches it
// while it is out.
TEST(Resilience, EjectedBackendReturnsThroughAProbeAndSlowStart) {
  Sims sims = start_sims(3, "m1", "tiny");
  GatewayConfig config;
  config.backend_ports = ports_of(sims);
  config.engine_signals = true;
  config.backend_extras = names(3);
  config.extra = "outlier_detection: {base_ejection_ms: 500, slow_start_ms: 1000}\n";
  GatewayProcess gateway(config.to_yaml());
  const auto events = [&] { return stderr_lines(gateway, "\"event\":\"backend_health\""); };
  const auto wait_for_event = [&](const std::string& needle, Millis timeout) {
    const auto until = Clock::now() + timeout;
    for (;;) {
      for (const auto& l : events())
        if (l.find("\"backend\":\"sim0\"") != std::string::npos && l.find(needle) != std::string::npos) return true;
      if (Clock::now() >= until) return false;
      std::this_thread::sleep_for(Millis(20));
    }
  };
  // A steady trickle of requests from two clients while it all happens.
  std::atomic<bool> stop{false};
  std::mutex mu;
  std::vector<Answer> answers;
  std::vector<std::thread> clients;
  for (int c = 0; c < 2; ++c) {
    clients.emplace_back([&, c] {
      for (int i = 0; !stop && i < 2'000; ++i) {
        Answer a = call(gateway.port(), chat("chat", 2, false, "Client " + std::to_string(c) + " asks " +
                                                                   std::to_string(i)),
                        Millis(5'000));
        std::lock_guard lock(mu);
        answers.push_back(std::move(a));
        std::this_thread::sleep_for(Millis(5));
      }
    });
  }
  StopAndJoin stop_clients(stop, clients);

  ASSERT_EQ(sims[0]->set_faults(R"({"error_rate":1,"error_status":500})"), 200);
  const bool ejected = wait_for_event("\"to\":\"ejected\",\"reason\":\"consecutive_failures\"", Millis(2'000));
  const double received_at_ejection = sims[0]->metric("arbiter_sim_requests_received_total").value_or(-1);
  // Its first probe fails: ejected again, for 2 x 0.5 s.
  const bool probe_failed = wait_for_event("\"reason\":\"probe_failed\",\"ejection_s\":1}", Millis(2'000));
  // Out all along: only the probe reached it (one request).
  const double received_while_out = sims[0]->metric("arbiter_sim_requests_received_total").value_or(-1);
  ASSERT_EQ(sims[0]->set_faults(R"({"error_rate":0})"), 200);
  const bool probe_ok = wait_for_event("\"reason\":\"probe_ok\"", Millis(3'000));
  const bool healthy = wait_for_event("\"reason\":\"slow_start_ended\"", Millis(3'000));
  // Once healthy, it serves clients again.
  const double received_back = sims[0]->metric("arbiter_sim_requests_received_total").value_or(-1);
  std::this_thread::sleep_for(Millis(300));
  const double received_later = sims[0]->metric("arbiter_sim_requests_received_total").value_or(-1);
  stop_clients.now();

  const std::string metrics = gateway_metrics(gateway.admin_port());
  const std::string facts = joined(events()) + summary(answers) + "sim0 received: at ejection " +
                            std::to_string(received_at_ejection) + ", after the failed probe " +
                            std::to_string(received_while_out) + ", healthy " + std::to_string(received_back) +
                            ", 300 ms later " + std::to_string(received_later);
  if (std::getenv("RES_VERBOSE")) std::cout << facts << "\n";
  EXPECT_TRUE(ejected) << facts;
  EXPECT_TRUE(probe_failed) << facts;
  EXPECT_TRUE(probe_ok) << facts;
  EXPECT_TRUE(healthy) << facts;
  EXPECT_EQ(received_while_out, received_at_ejection + 1) << "only the probe while ejected\n" << facts;
  EXPECT_GT(received_later, received_back) << facts;
  EXPECT_EQ(metric_value(metrics, "arbiter_health_probes_total", {{"backend", "sim0"}, {"result", "failed"}}), 1)
      << facts;
  EXPECT_EQ(metric_value(metrics, "arbiter_health_probes_total", {{"backend", "sim0"}, {"result", "ok"}}), 1)
      << facts;
  EXPECT_EQ(metric_value(metrics, "arbiter_backend_health", {{"backend", "sim0"}, {"state", "healthy"}}), 1) << facts;
  // The order of the transitions.
  std::vector<std::string> path;
  for (const auto& l : events()) {
    if (l.find("\"backend\":\"sim0\"") == std::string::npos) continue;
    const auto at = l.find("\"to\":\"");
    path.push_back(l.substr(at + 6, l.find('"', at + 6) - at - 6));
  }
  EXPECT_EQ(path, (std::vector<std::string>{"ejected", "probing", "ejected", "probing", "slow_start", "healthy"}))
      << facts;
}

// ---------------------------------------------------------------------------
// 7. Half-open trials that a later admission stage refuses (here a tenant
// over its quota: 429) never reach the model, so they cannot be its trials:
// the breaker must still test the model with later requests and close once
// it is well, not stay half-open with its trials "out" for ever.
TEST(Resilience, HalfOpenTrialsRefusedByAQuotaDoNotWedgeTheBreaker) {
  Sims m1 = start_sims(1, "m1", "tiny");
  GatewayConfig config;
  config.backend_ports = ports_of(m1);
  config.engine_signals = true;
  config.alpha_extra = ", quotas: [{requests_per_minute: 1}]";
  config.extra =
      "model_breaker: {window_ms: 2000, min_requests: 5, base_open_ms: 300, max_open_ms: 300}\n"
      "traffic_breaker: {enabled: false}\n";
  GatewayProcess gateway(config.to_yaml());
  const uint16_t port = gateway.port();
  const auto as = [&](const char* key) { return call(port, chat("chat", 2, false, "Hi", "m1", key), Millis(5'000)); };
  // The breaker's transitions and, to tell why a trial failed, the
  // backends' health (ejections, probes) and the gateway's warnings.
  const auto log = [&] { return joined(stderr_lines(gateway, "\"level\":\"warn\"")); };

  ASSERT_EQ(as(kAlphaKey).status, 200);  // alpha's one request this minute
  ASSERT_EQ(m1[0]->set_faults(R"({"error_rate":1,"error_status":500})"), 200);
  // beta's failures isolate the model (alpha's success is in the window: 4 of 5).
  for (int i = 0; i < 10 && as(kBetaKey).status == 500; ++i) {
  }
  ASSERT_EQ(gw_metric(gateway.admin_port(), "arbiter_model_breaker_stage", {{"model", "m1"}, {"stage", "isolated"}}), 1) << log();
  std::this_thread::sleep_for(Millis(400));  // the opening is over: half-open
  for (int i = 0; i < 3; ++i) EXPECT_EQ(as(kAlphaKey).status, 429);  // refused by alpha's quota
  ASSERT_EQ(m1[0]->set_faults(R"({"error_rate":0})"), 200);

  // beta's requests: trials once the model is tested again, then served.
  const auto start = Clock::now();
  Answer a;
  std::map<int, int> seen;
  while (ms_between(start, Clock::now()) < 20'000) {  // a generous deadline: polled, not timed
    a = as(kBetaKey);
    ++seen[a.status];
    if (a.status == 200) break;
    std::this_thread::sleep_for(Millis(100));
  }
  std::string statuses;
  for (const auto& [status, n] : seen) statuses += std::to_string(status) + " x" + std::to_string(n) + " ";
  EXPECT_EQ(a.status, 200) << "beta got " << statuses << "for 20 s after the faults cleared; last: " << a.body << "\n"
                           << log();
}

// ---------------------------------------------------------------------------
// 8. A stream's verdict for its model's breaker is known when its answer
// begins (a cut after that is its backend's, not the model's), so the
// breaker counts it then, not at its end. Counted at the end, failures
// (which end at once) met no successes while long streams ran, so a few
// failures isolated a model that was answering everyone else; and a
// half-open trial that streams kept the model refused for the whole length
// of its generation.

// Streams of `tokens` tokens on `port`, each read up to its first tokens
// (the answer has begun); the connections stay open for the caller to drop.
std::vector<std::unique_ptr<HttpConnection>> open_streams(uint16_t port, int n, int tokens) {
  std::vector<std::unique_ptr<HttpConnection>> streams;
  for (int i = 0; i < n; ++i) {
    auto conn = std::make_unique<HttpConnection>(port);
    conn->send(chat("chat", tokens, true, "Essay " + std::to_string(i) + ": write about the sea."));
    const HttpResponse head = conn->read_head(Millis(10'000));
    EXPECT_EQ(head.status, 200) << "stream " << i;
    EXPECT_GE(conn->read_events(3, Millis(10'000)).size(), 3u) << "stream " << i;
    streams.push_back(std::move(conn));
  }
  return streams;
}

// A gateway over `sims` (nobody queues) whose model breaker alone judges
// failures (outlier detection off), with `breaker`'s settings.
std::string breaker_only_config(const Sims& sims, const std::string& breaker) {
  GatewayConfig config;
  config.backend_ports = ports_of(sims);
  config.max_concurrency = 64;
  config.engine_signals = true;
  config.extra = "outlier_detection: {enabled: false}\nmodel_breaker: {" + breaker + "}\n";
  return config.to_yaml();
}

// `n` requests the engine answers 500.
void fail_requests(uint16_t port, SimProcess& sim, int n) {
  ASSERT_EQ(sim.set_faults(R"({"error_rate":1,"error_status":500})"), 200);
  for (int i = 0; i < n; ++i) EXPECT_EQ(call(port, chat("chat", 2, false), Millis(5'000)).status, 500);
  ASSERT_EQ(sim.set_faults(R"({"error_rate":0})"), 200);
}

TEST(Resilience, FailuresWhileLongStreamsRunAreWeighedAgainstTheStreamsAlreadyAnswering) {
  Sims sims = start_sims(1, "m1", "llama-8b-a100");
  // Isolated at 50% over at least 5 requests.
  GatewayProcess gateway(breaker_only_config(
      sims, "window_ms: 60000, min_requests: 5, degrade_at: 0.3, fallback_at: 0.4, isolate_at: 0.5"));
  const uint16_t port = gateway.port();
  const auto log = [&] { return joined(stderr_lines(gateway, "\"level\":\"warn\"")); };

  // 15 answers streaming (2,000 tokens: tens of seconds at this engine's pace).
  auto streams = open_streams(port, 15, 2'000);
  // Then the engine fails 5 new requests: 5 of 20 answered requests failed.
  fail_requests(port, *sims[0], 5);
  // The last failure is recorded just after its answer went out: watched for 0.5 s.
  EXPECT_NE(gateway.wait_for_metric("arbiter_model_breaker_stage", [](double v) { return v == 1; }, Millis(500),
                                    {{"model", "m1"}, {"stage", "isolated"}}),
            1)
      << log();
  const Answer after = call(port, chat("chat", 2, false), Millis(5'000));
  EXPECT_EQ(after.status, 200) << after.body << "\n" << log();
  EXPECT_EQ(gw_metric(gateway.admin_port(), "arbiter_model_breaker_transitions_total", {{"model", "m1"}, {"from", "closed"}, {"to", "isolated"}}),
            0)
      << log();
  for (auto& s : streams) s->close_abruptly();
}

TEST(Resilience, AStreamedHalfOpenTrialClosesTheBreakerWhenItsAnswerBegins) {
  Sims sims = start_sims(1, "m1", "llama-8b-a100");
  GatewayProcess gateway(breaker_only_config(
      sims, "window_ms: 60000, min_requests: 5, base_open_ms: 300, max_open_ms: 300, probe_requests: 3"));
  const uint16_t port = gateway.port();
  const auto log = [&] { return joined(stderr_lines(gateway, "\"level\":\"warn\"")); };
  const auto stage_is = [&](const std::string& stage) {
    return gateway.wait_for_metric("arbiter_model_breaker_stage", [](double v) { return v == 1; }, Millis(2'000),
                                   {{"model", "m1"}, {"stage", stage}}) == 1;
  };

  fail_requests(port, *sims[0], 5);
  ASSERT_TRUE(stage_is("isolated")) << log();
  std::this_thread::sleep_for(Millis(400));  // the opening is over: half-open

  // The three trials are long streams; once their answers have begun the
  // model has answered, and the breaker closes.
  auto trials = open_streams(port, 3, 2'000);
  EXPECT_TRUE(stage_is("closed")) << log();
  const Answer next = call(port, chat("chat", 2, false), Millis(5'000));
  EXPECT_EQ(next.status, 200) << "refused while the trials still stream: " << next.body << "\n" << log();
  for (auto& s : trials) s->close_abruptly();
}

}  // namespace
}  // namespace arbiter::test
