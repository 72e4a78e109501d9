#include "gateway/config_yaml.hpp"

#include <gmock/gmock.h>
#include <gtest/gtest.h>

#include "core/tenants.hpp"
#include "gateway/scheduler_setup.hpp"

namespace arbiter::config_yaml_test {
namespace {

using ::testing::Contains;
using ::testing::HasSubstr;

constexpr const char* kMinimal = R"(
models:
  - name: m1
    backends: [{url: "http://127.0.0.1:8000"}]
)";

std::vector<std::string> errors_of(const std::string& yaml) {
  auto c = parse_config(yaml);
  return c ? std::vector<std::string>{} : c.error();
}

TEST(ConfigYaml, MinimalConfigGetsDocumentedDefaults) {
  auto c = parse_config(kMinimal);
  ASSERT_TRUE(c) << ::testing::PrintToString(c.error());
  EXPECT_EQ(c->listener.address, "127.0.0.1");
  EXPECT_EQ(c->listener.port, 8080);
  EXPECT_EQ(c->limits.max_body_bytes, 4u << 20);
  EXPECT_EQ(c->timeouts.upstream_connect.count(), 2000);
  EXPECT_FALSE(c->auth.enabled);
  ASSERT_EQ(c->models.size(), 1u);
  const auto& b = c->models[0].backends[0];
  EXPECT_EQ(b.host, "127.0.0.1");
  EXPECT_EQ(b.port, 8000);
  EXPECT_EQ(b.name, "127.0.0.1:8000");
  EXPECT_EQ(b.max_concurrency, 64u);
  // Default classes: the completion class is capped at 128 tokens; embeddings
  // have their own.
  ASSERT_EQ(c->classes.size(), 5u);
  EXPECT_EQ(c->classes[4].name, "embeddings");
  EXPECT_FALSE(c->classes[4].max_tokens_cap);
  EXPECT_EQ(c->default_class, "chat");
  const auto completion = std::find_if(c->classes.begin(), c->classes.end(),
                                       [](auto& x) { return x.name == "completion"; });
  ASSERT_NE(completion, c->classes.end());
  EXPECT_EQ(completion->max_tokens_cap, 128);
}

TEST(ConfigYaml, EngineKindSetsThePriorityOrder) {
  auto c = parse_config(R"(
models:
  - name: m1
    backends:
      - {url: "http://127.0.0.1:8000", priority_scheduling: true}
      - {url: "http://127.0.0.1:8001", priority_scheduling: true, engine: sglang}
)");
  ASSERT_TRUE(c) << ::testing::PrintToString(c.error());
  const auto& b = c->models[0].backends;
  EXPECT_EQ(b[0].engine, EngineKind::kVllm);
  EXPECT_EQ(engine_priority_field(b[0].engine, 3), 3);
  EXPECT_EQ(b[1].engine, EngineKind::kSglang);
  EXPECT_EQ(engine_priority_field(b[1].engine, 3), -3);
  EXPECT_THAT(errors_of(R"(
models:
  - name: m1
    backends: [{url: "http://127.0.0.1:8000", priority_scheduling: true, engine: llamacpp}]
)"),
              Contains(HasSubstr("priority_scheduling: llama.cpp server has no request priority")));
  EXPECT_THAT(errors_of(R"(
models:
  - name: m1
    backends: [{url: "http://127.0.0.1:8000", engine: tgi}]
)"),
              Contains(HasSubstr("engine: must be vllm, sglang or llamacpp")));
}

TEST(ConfigYaml, ClassSlosAndTheSchedulerKeysThatUseThem) {
  // Defaults: completion's 200 ms is the BRIEF's target; batch has none.
  auto d = parse_config(kMinimal);
  ASSERT_TRUE(d);
  const auto slo_of = [](const Config& c, std::string_view name) {
    for (const auto& k : c.classes) {
      if (k.name == name) return k.policy.ttft_slo;
    }
    return sched::Duration(-1);
  };
  EXPECT_EQ(slo_of(*d, "completion"), std::chrono::milliseconds(200));
  EXPECT_EQ(slo_of(*d, "batch"), sched::Duration::zero());
  EXPECT_EQ(d->scheduler.slo_lead_fraction, 0.5);
  EXPECT_EQ(d->scheduler.early_reject_margin, 2);
  auto c = parse_config(std::string(kMinimal) + R"(
scheduler: {slo_lead_fraction: 0.3, early_reject_margin: 0}
classes:
  - {name: chat, ttft_slo_ms: 1500}
)");
  ASSERT_TRUE(c) << ::testing::PrintToString(c.error());
  EXPECT_EQ(slo_of(*c, "chat"), std::chrono::milliseconds(1500));
  EXPECT_EQ(c->scheduler.slo_lead_fraction, 0.3);
  EXPECT_EQ(c->scheduler.early_reject_margin, 0);
  EXPECT_THAT(errors_of(std::string(kMinimal) + "scheduler: {slo_lead_fraction: 2}\n"),
              Contains(HasSubstr("slo_lead_fraction")));
  EXPECT_THAT(errors_of(std::string(kMinimal) + "classes: [{name: chat, ttft_slo_ms: -5}]\n"),
              Contains(HasSubstr("ttft_slo_ms")));
  // A per-token target (adaptive capacity's gap target): none by default, a
  // fraction of a millisecond kept, refused below 0.
  for (const auto& k : d->classes) EXPECT_EQ(k.policy.tpot_slo, sched::Duration::zero()) << k.name;
  auto t = parse_config(std::string(kMinimal) + "classes: [{name: chat, tpot_slo_ms: 43.75}]\n");
  ASSERT_TRUE(t) << ::testing::PrintToString(t.error());
  for (const auto& k : t->classes) {
    if (k.name == "chat") {
      EXPECT_EQ(k.policy.tpot_slo, std::chrono::microseconds(43'750));
    }
  }
  EXPECT_THAT(errors_of(std::string(kMinimal) + "classes: [{name: chat, tpot_slo_ms: -1}]\n"),
              Contains(HasSubstr("tpot_slo_ms")));
  // Tenant headroom: off by default, a share of the slots up to a half.
  EXPECT_EQ(d->scheduler.tenant_headroom, 0);
  auto h = parse_config(std::string(kMinimal) + "scheduler: {tenant_headroom: 0.125}\n");
  ASSERT_TRUE(h) << ::testing::PrintToString(h.error());
  EXPECT_EQ(h->scheduler.tenant_headroom, 0.125);
  EXPECT_EQ(to_scheduler_config(*h).tenant_headroom, 0.125);
  EXPECT_THAT(errors_of(std::string(kMinimal) + "scheduler: {tenant_headroom: 0.6}\n"),
              Contains(HasSubstr("tenant_headroom")));
  // The fair-share cap: twice a tenant's share by default, 0 turns it off.
  EXPECT_EQ(d->scheduler.tenant_fair_cap, 2);
  auto f = parse_config(std::string(kMinimal) + "scheduler: {tenant_fair_cap: 0}\n");
  ASSERT_TRUE(f) << ::testing::PrintToString(f.error());
  EXPECT_EQ(to_scheduler_config(*f).tenant_fair_cap, 0);
  EXPECT_THAT(errors_of(std::string(kMinimal) + "scheduler: {tenant_fair_cap: -1}\n"),
              Contains(HasSubstr("tenant_fair_cap")));
}

// adaptive_capacity: off by default (issue 41 measured it for the default:
// docs/configuration.md), with no extra slots for background work unless
// asked; the bench's keys and rules; it learns from the engines' figures, so
// it needs engine signals.
TEST(ConfigYaml, AdaptiveCapacityIsOffByDefaultAndNeedsEngineSignals) {
  auto d = parse_config(kMinimal);
  ASSERT_TRUE(d) << ::testing::PrintToString(d.error());
  EXPECT_FALSE(d->adaptive_capacity.enabled);
  EXPECT_DOUBLE_EQ(d->adaptive_capacity.max_extra_share, 0);
  auto c = parse_config(std::string(kMinimal) + "adaptive_capacity: {enabled: true, min: 2, max_extra_share: 0.5}\n");
  ASSERT_TRUE(c) << ::testing::PrintToString(c.error());
  EXPECT_TRUE(c->adaptive_capacity.enabled);
  EXPECT_EQ(c->adaptive_capacity.min_limit, 2u);
  EXPECT_DOUBLE_EQ(c->adaptive_capacity.max_extra_share, 0.5);
  EXPECT_THAT(errors_of(std::string(kMinimal) + "adaptive_capacity: {min: 20, max: 10}\n"),
              Contains(HasSubstr("adaptive_capacity")));
  EXPECT_THAT(errors_of(std::string(kMinimal) + "adaptive_capacity: {kv_grow_below: 0.95, kv_shrink_above: 0.9}\n"),
              Contains(HasSubstr("kv_grow_below")));
  EXPECT_THAT(errors_of(std::string(kMinimal) +
                        "engine_signals: {enabled: false}\nadaptive_capacity: {enabled: true}\n"),
              Contains(HasSubstr("engine_signals")));
}

// A model's own adaptive_capacity: the global section's settings with the
// keys it names changed, on every pool of the model; the others keep the
// global one. The same rules apply to it.
TEST(ConfigYaml, AModelsOwnAdaptiveCapacityChangesTheKeysItNames) {
  auto c = parse_config(R"(
adaptive_capacity: {enabled: false, min: 2, max_extra_share: 0.5, itl_target_ms: 45}
models:
  - name: m1
    adaptive_capacity: {enabled: true, max_extra_share: 1}
    backends:
      - {url: "http://127.0.0.1:8000", classes: [completion]}
      - {url: "http://127.0.0.1:8001"}
  - name: m2
    backends: [{url: "http://127.0.0.1:9000"}]
)");
  ASSERT_TRUE(c) << ::testing::PrintToString(c.error());
  ASSERT_EQ(c->models.size(), 3u);  // m1/completion, m1, m2
  for (std::size_t pool : {0, 1}) {
    SCOPED_TRACE(c->models[pool].pool_name());
    const sched::AdaptiveCapacityConfig& own = c->adaptive_capacity_of(pool);
    EXPECT_TRUE(own.enabled);
    EXPECT_DOUBLE_EQ(own.max_extra_share, 1);
    EXPECT_EQ(own.min_limit, 2u);                                 // the global section's
    EXPECT_EQ(own.itl_target, std::chrono::milliseconds(45));     // the global section's
  }
  EXPECT_FALSE(c->adaptive_capacity_of(2).enabled);
  EXPECT_DOUBLE_EQ(c->adaptive_capacity_of(2).max_extra_share, 0.5);
  EXPECT_TRUE(c->any_adaptive_capacity());
  // Off everywhere, also when the global section is on and a model says off.
  auto off = parse_config(std::string(kMinimal) + "adaptive_capacity: {enabled: false}\n");
  ASSERT_TRUE(off);
  EXPECT_FALSE(off->any_adaptive_capacity());
  auto one_off = parse_config(R"(
adaptive_capacity: {enabled: true}
models:
  - {name: m1, adaptive_capacity: {enabled: false}, backends: [{url: "http://127.0.0.1:8000"}]}
  - {name: m2, backends: [{url: "http://127.0.0.1:9000"}]}
)");
  ASSERT_TRUE(one_off);
  EXPECT_FALSE(one_off->adaptive_capacity_of(0).enabled);
  EXPECT_TRUE(one_off->adaptive_capacity_of(1).enabled);

  const std::string model = R"(
models:
  - name: m1
    adaptive_capacity: )";
  const std::string backends = "\n    backends: [{url: \"http://127.0.0.1:8000\"}]\n";
  EXPECT_THAT(errors_of(model + "on" + backends),
              Contains(HasSubstr("models[0].adaptive_capacity: must be a mapping")));
  EXPECT_THAT(errors_of(model + "{grow: 1}" + backends), Contains(HasSubstr("models[0].adaptive_capacity")));
  EXPECT_THAT(errors_of(model + "{min: 20, max: 10}" + backends), Contains(HasSubstr("models[0].adaptive_capacity")));
  EXPECT_THAT(errors_of("engine_signals: {enabled: false}\n" + model + "{enabled: true}" + backends),
              Contains(HasSubstr("models[0].adaptive_capacity.enabled: needs engine_signals")));
}

TEST(ConfigYaml, BackendsNamingClassesFormPoolsPerClass) {
  auto c = parse_config(R"(
models:
  - name: m1
    backends:
      - {url: "http://127.0.0.1:8000", classes: [completion]}
      - {url: "http://127.0.0.1:8001"}
      - {url: "http://127.0.0.1:8002", classes: [completion]}
  - name: m2
    backends: [{url: "http://127.0.0.1:9000"}]
)");
  ASSERT_TRUE(c) << ::testing::PrintToString(c.error());
  // m1 becomes two pools: completion on 8000 and 8002, the other classes on 8001.
  ASSERT_EQ(c->models.size(), 3u);
  EXPECT_EQ(c->models[0].pool_name(), "m1/completion");
  ASSERT_EQ(c->models[0].backends.size(), 2u);
  EXPECT_EQ(c->models[0].backends[1].port, 8002);
  EXPECT_EQ(c->models[1].pool_name(), "m1");
  EXPECT_EQ(c->models[1].backends.at(0).port, 8001);
  EXPECT_EQ(c->models[2].pool_name(), "m2");

  EXPECT_THAT(errors_of(R"(
models:
  - name: m1
    backends:
      - {url: "http://127.0.0.1:8000", classes: [completion]}
      - {url: "http://127.0.0.1:8001", classes: [chat, critical]}
)"),
              Contains(HasSubstr("no backend serves class 'batch'")));
  EXPECT_THAT(errors_of(R"(
models:
  - name: m1
    backends:
      - {url: "http://127.0.0.1:8000", classes: [completion]}
      - {url: "http://127.0.0.1:8001", classes: [completion, chat]}
      - {url: "http://127.0.0.1:8002"}
)"),
              Contains(HasSubstr("in two different class lists")));
  EXPECT_THAT(errors_of(R"(
models:
  - name: m1
    backends: [{url: "http://127.0.0.1:8000", classes: [nope]}]
)"),
              Contains(HasSubstr("names no class: 'nope'")));
}

TEST(ConfigYaml, PoolsThatLendServeTheModelsOtherPools) {
  auto c = parse_config(R"(
models:
  - name: m1
    backends:
      - {url: "http://127.0.0.1:8000", classes: [completion], lend: true}
      - {url: "http://127.0.0.1:8001"}
  - name: m2
    backends:
      - {url: "http://127.0.0.1:9000", classes: [completion], lend: true}
      - {url: "http://127.0.0.1:9001", lend: true}
)");
  ASSERT_TRUE(c) << ::testing::PrintToString(c.error());
  ASSERT_EQ(c->models.size(), 4u);
  EXPECT_TRUE(c->models[0].lends);
  EXPECT_FALSE(c->models[1].lends);  // off unless asked for
  const sched::SchedulerConfig s = to_scheduler_config(*c);
  // m1's general pool borrows from m1/completion; m1/completion from nobody;
  // m2's pools from each other, never across models.
  EXPECT_TRUE(s.pools[0].lenders.empty());
  EXPECT_EQ(s.pools[1].lenders, std::vector<sched::PoolId>{0});
  EXPECT_EQ(s.pools[2].lenders, std::vector<sched::PoolId>{3});
  EXPECT_EQ(s.pools[3].lenders, std::vector<sched::PoolId>{2});

  EXPECT_THAT(errors_of(R"(
models:
  - name: m1
    backends:
      - {url: "http://127.0.0.1:8000", classes: [completion], lend: true}
      - {url: "http://127.0.0.1:8001", classes: [completion]}
      - {url: "http://127.0.0.1:8002"}
)"),
              Contains(HasSubstr("models[0].backends[1].lend: differs from another backend with the same classes")));
}

TEST(ConfigYaml, AKeyGivenTwiceIsAnErrorNotTheFirstSilently) {
  EXPECT_THAT(errors_of(R"(
scheduler: {policy: fifo, policy: hybrid}
models:
  - name: m1
    backends: [{url: "http://127.0.0.1:8000"}]
)"),
              Contains(HasSubstr("scheduler.policy: given twice")));
  EXPECT_THAT(errors_of(R"(
models:
  - name: m1
    backends: [{url: "http://127.0.0.1:8000", max_concurrency: 4, max_concurrency: 64}]
)"),
              Contains(HasSubstr("models[0].backends[0].max_concurrency: given twice")));
}

TEST(ConfigYaml, ABooleanIsTrueOrFalseNothingElse) {
  // A section key (the table) and a list entry's key (read by hand) alike.
  const auto errs = errors_of(R"(
auth: {enabled: yes}
models:
  - name: m1
    backends: [{url: "http://127.0.0.1:8000", lend: 1}]
)");
  EXPECT_THAT(errs, Contains(HasSubstr("auth.enabled: must be true or false")));
  EXPECT_THAT(errs, Contains(HasSubstr("models[0].backends[0].lend: must be true or false")));
}

TEST(ConfigYaml, UnknownKeysAreRejectedWithTheirPath) {
  const auto errs = errors_of(R"(
listener: {adress: 0.0.0.0}
models:
  - name: m1
    backend: []
)");
  EXPECT_THAT(errs, Contains(HasSubstr("listener.adress: unknown key")));
  EXPECT_THAT(errs, Contains(HasSubstr("models[0].backend: unknown key")));
  EXPECT_THAT(errs, Contains(HasSubstr("models[0].backends: is required")));
}

// TLS settings (the files themselves are tests/integration/tls_test.cpp's).
TEST(ConfigYaml, TlsSettingsAreChecked) {
  const auto errs = errors_of(R"(
listener: {tls: {min_version: "1.1", client_cert: sometimes}}
tenants:
  - {name: nobody}
models:
  - name: m1
    backends:
      - {url: "http://127.0.0.1:9", ca_file: /etc/ssl/certs/ca-certificates.crt}
      - {url: "https://127.0.0.1:9", cert_file: /nonexistent.pem}
      - {type: sim, ca_file: x.pem}
)");
  EXPECT_THAT(errs, Contains(HasSubstr("listener.tls.min_version: must be 1.3 or 1.2, not '1.1'")));
  EXPECT_THAT(errs, Contains(HasSubstr("listener.tls.client_cert: must be off, optional or required")));
  EXPECT_THAT(errs, Contains(HasSubstr("listener.tls: needs cert_file")));
  EXPECT_THAT(errs, Contains(HasSubstr("listener.tls: needs key_file")));
  EXPECT_THAT(errs, Contains(HasSubstr("tenants[0]: needs at least one of api_keys, api_key_sha256 or client_cert_names")));
  EXPECT_THAT(errs, Contains(HasSubstr("models[0].backends[0].ca_file: applies only to an https:// url")));
  EXPECT_THAT(errs, Contains(HasSubstr("models[0].backends[1].key_file: cert_file and key_file go together")));
  EXPECT_THAT(errs, Contains(HasSubstr("models[0].backends[2].ca_file: is not used by type sim")));
  const auto unasked = errors_of(R"(
tenants: [{name: svc, client_cert_names: [svc.internal]}]
models: [{name: m1, backends: [{url: "http://127.0.0.1:9"}]}]
)");
  EXPECT_THAT(unasked, Contains(HasSubstr("tenants[0].client_cert_names: no client certificate is asked for")));
  const auto ca = errors_of(R"(
listener: {tls: {cert_file: a.pem, key_file: a.key, client_cert: required}}
models: [{name: m1, backends: [{url: "https://127.0.0.1:9", ca_file: /nonexistent-ca.pem}]}]
)");
  EXPECT_THAT(ca, Contains(HasSubstr("listener.tls.client_ca_file: is needed when client_cert is required")));
  EXPECT_THAT(ca, Contains(HasSubstr("models[0].backends[0].url: cannot load the CA bundle from /nonexistent-ca.pem")));
  // An https backend on the system's CA store needs no file.
  const auto system_store = parse_config(R"(models: [{name: m1, backends: [{url: "https://engine.example:8443"}]}])");
  ASSERT_TRUE(system_store.has_value()) << system_store.error().front();
  EXPECT_TRUE(system_store->models[0].backends[0].tls);
  EXPECT_EQ(system_store->models[0].backends[0].host, "engine.example");
}

// Found by fuzz/fuzz_config_yaml (docs/security.md, "Fuzzing"): a key that
// is a list or a mapping threw YAML::TypedBadConversion out of parse_config.
// The first case is the fuzzer's input cut down to the lines that matter.
TEST(ConfigYaml, AKeyThatIsNotASingleValueIsAnErrorNotAnException) {
  const auto top = errors_of(R"(
auth: {enabled: true}
tenants:
? - name: ide-plugin
    team: developer-productivity
)");
  EXPECT_THAT(top, Contains(HasSubstr("(top level): a key must be a single value")));
  const auto nested = errors_of(std::string(kMinimal) + "listener: {[a, b]: 1, {c: d}: 2}\n");
  EXPECT_THAT(nested, Contains(HasSubstr("listener: a key must be a single value")));
}

TEST(ConfigYaml, EveryErrorIsListedNotJustTheFirst) {
  const auto errs = errors_of(R"(
listener: {port: 70000, threads: -1}
timeouts: {upstream_connect_ms: abc}
limits: {max_body_bytes: 12XB}
models:
  - name: m1
    backends:
      - {url: "ftp://x:1"}
      - {url: "http://127.0.0.1"}
      - {url: "http://127.0.0.1:9/v1"}
      - {url: "http://127.0.0.1:9", max_concurrency: 0}
)");
  EXPECT_THAT(errs, Contains(HasSubstr("listener.port: must be between 0 and 65535")));
  EXPECT_THAT(errs, Contains(HasSubstr("listener.threads: must be between")));
  EXPECT_THAT(errs, Contains(HasSubstr("timeouts.upstream_connect_ms: must be an integer")));
  EXPECT_THAT(errs, Contains(HasSubstr("limits.max_body_bytes: must be a positive size")));
  EXPECT_THAT(errs, Contains(HasSubstr("models[0].backends[0].url: scheme must be http or https")));
  EXPECT_THAT(errs, Contains(HasSubstr("models[0].backends[1].url: must name a port")));
  EXPECT_THAT(errs, Contains(HasSubstr("models[0].backends[2].url: must not have a path")));
  EXPECT_THAT(errs, Contains(HasSubstr("models[0].backends[3].max_concurrency: must be between")));
  EXPECT_GE(errs.size(), 8u);
}

TEST(ConfigYaml, SizesAcceptBinarySuffixes) {
  auto c = parse_config(std::string("limits: {max_body_bytes: 2MiB, max_header_bytes: 8KiB}\n") + kMinimal);
  ASSERT_TRUE(c);
  EXPECT_EQ(c->limits.max_body_bytes, 2u << 20);
  EXPECT_EQ(c->limits.max_header_bytes, 8u << 10);
}

TEST(ConfigYaml, TenantKeysAreStoredOnlyAsHashes) {
  const std::string hash = sha256_hex("sk-beta");
  auto c = parse_config(std::string(R"(
auth: {enabled: true}
tenants:
  - {name: alpha, team: search, api_keys: [sk-alpha]}
  - {name: beta, api_key_sha256: [")") + hash + R"("], allowed_classes: [chat]}
)" + kMinimal);
  ASSERT_TRUE(c) << ::testing::PrintToString(c.error());
  ASSERT_EQ(c->tenants.size(), 2u);
  EXPECT_EQ(c->tenants[0].team, "search");
  EXPECT_EQ(c->tenants[0].key_sha256, std::vector<std::string>{sha256_hex("sk-alpha")});
  EXPECT_EQ(c->tenants[1].team, "beta");  // defaults to the tenant name
  EXPECT_EQ(c->tenants[1].key_sha256, std::vector<std::string>{hash});
}

TEST(ConfigYaml, CrossReferencesAreChecked) {
  const auto errs = errors_of(R"(
auth: {enabled: true}
tenants:
  - {name: alpha, api_keys: [k1], allowed_classes: [gold]}
  - {name: alpha, api_keys: [k1]}
  - {name: gamma, api_key_sha256: [nothex]}
classes:
  - {name: chat, match: {tenants: [nobody], models: [m9], routes: [/v1/moderations]}}
  - {name: chat}
default_class: platinum
models:
  - name: m1
    backends: [{url: "http://127.0.0.1:1"}, {url: "http://127.0.0.1:1"}]
)");
  EXPECT_THAT(errs, Contains(HasSubstr("tenants[0].allowed_classes[0]: names no class: 'gold'")));
  EXPECT_THAT(errs, Contains(HasSubstr("tenants[1].name: duplicate name 'alpha'")));
  EXPECT_THAT(errs, Contains(HasSubstr("shared with another tenant")));
  EXPECT_THAT(errs, Contains(HasSubstr("tenants[2].api_key_sha256[0]: must be 64 hex digits")));
  EXPECT_THAT(errs, Contains(HasSubstr("classes[0].match.tenants[0]: names no tenant: 'nobody'")));
  EXPECT_THAT(errs, Contains(HasSubstr("classes[0].match.models[0]: names no model: 'm9'")));
  EXPECT_THAT(errs, Contains(HasSubstr("classes[0].match.routes[0]: unknown route")));
  EXPECT_THAT(errs, Contains(HasSubstr("classes[1].name: duplicate name 'chat'")));
  EXPECT_THAT(errs, Contains(HasSubstr("default_class: names no class: 'platinum'")));
  EXPECT_THAT(errs, Contains(HasSubstr("models[0].backends[1].name: duplicate name")));
}

// The cache's semantic mode names a model of the config; its degraded
// threshold is the looser one.
TEST(ConfigYaml, TheSemanticModeNamesAModelOfTheConfig) {
  const auto errs = errors_of(R"(
cache: {semantic_model: embed-9, semantic_threshold: 0.9, semantic_degraded_threshold: 0.95}
models:
  - name: m1
    backends: [{url: "http://127.0.0.1:1"}]
)");
  EXPECT_THAT(errs, Contains(HasSubstr("cache.semantic_model: names no model")));
  EXPECT_THAT(errs, Contains(HasSubstr("cache.semantic_degraded_threshold: must not exceed semantic_threshold")));
  const auto ok = parse_config(R"(
cache: {semantic_model: emb, semantic_timeout_ms: 100, semantic_max_bytes: 8MiB, semantic_dimensions: 256}
models:
  - {name: m1, backends: [{url: "http://127.0.0.1:1"}]}
  - {name: emb, backends: [{url: "http://127.0.0.1:2"}]}
)");
  ASSERT_TRUE(ok) << ::testing::PrintToString(ok.error());
  EXPECT_EQ(ok->cache.semantic_model, "emb");
  EXPECT_EQ(ok->cache.semantic_threshold, 0.95);
  EXPECT_EQ(ok->cache.semantic_timeout, std::chrono::milliseconds(100));
  EXPECT_EQ(ok->cache.semantic_max_bytes, std::size_t{8} << 20);
  EXPECT_EQ(ok->cache.semantic_dimensions, 256);
}

TEST(ConfigYaml, AuthWithoutTenantsIsAnError) {
  EXPECT_THAT(errors_of(std::string("auth: {enabled: true}\n") + kMinimal),
              Contains(HasSubstr("auth.enabled: is true but no tenants")));
}

TEST(ConfigYaml, MissingModelsAndSyntaxErrors) {
  EXPECT_THAT(errors_of("listener: {port: 1}\n"), Contains(HasSubstr("models: is required")));
  EXPECT_THAT(errors_of("models: [\n"), Contains(HasSubstr("YAML syntax error at line")));
  EXPECT_THAT(errors_of("- a\n- b\n"), Contains(HasSubstr("(top level): must be a mapping")));
}

TEST(ConfigYaml, LoadsExampleFiles) {
  for (const char* name : {"minimal.yaml", "production.yaml", "demo.yaml"}) {
    auto c = load_config_file(std::string(ARBITER_SOURCE_DIR) + "/examples/" + name);
    EXPECT_TRUE(c) << name << ": " << ::testing::PrintToString(c ? std::vector<std::string>{} : c.error());
  }
  EXPECT_FALSE(load_config_file("/nonexistent/arbiter.yaml"));
}

TEST(ConfigYaml, QuotasOfTenantsAndTeams) {
  auto c = parse_config(std::string(kMinimal) + R"(
tenants:
  - name: a
    team: t
    api_keys: [k1]
    quotas:
      - {requests_per_minute: 60, tokens_per_minute: 1000.5, tokens_per_day: 1e6, max_concurrent: 4}
      - {tokens_per_minute: 100, classes: [batch], models: [m1]}
teams:
  - {name: t, quotas: [{max_concurrent: 10}]}
)");
  ASSERT_TRUE(c) << ::testing::PrintToString(c.error());
  ASSERT_EQ(c->tenants[0].quotas.size(), 2u);
  const auto& q = c->tenants[0].quotas[0];
  EXPECT_EQ(q.requests_per_minute, 60);
  EXPECT_EQ(q.tokens_per_minute, 1000.5);
  EXPECT_EQ(q.tokens_per_day, 1e6);
  EXPECT_EQ(q.max_concurrent, 4u);
  EXPECT_EQ(c->tenants[0].quotas[1].classes, std::vector<std::string>{"batch"});
  ASSERT_EQ(c->teams.size(), 1u);
  EXPECT_EQ(c->teams[0].quotas[0].max_concurrent, 10u);
}

TEST(ConfigYaml, QuotaMistakesAreNamedWithTheirPath) {
  const auto errors = errors_of(std::string(kMinimal) + R"(
tenants:
  - name: a
    api_keys: [k1]
    quotas:
      - {classes: [chat]}
      - {tokens_per_minute: 0}
      - {requests_per_minute: 5, classes: [gold], models: [m9], per_hour: 3}
teams:
  - {name: nobody, quotas: [{max_concurrent: 1}]}
)");
  EXPECT_THAT(errors, Contains(HasSubstr("tenants[0].quotas[0]: sets no limit")));
  EXPECT_THAT(errors, Contains(HasSubstr("tenants[0].quotas[1].tokens_per_minute")));
  EXPECT_THAT(errors, Contains(HasSubstr("tenants[0].quotas[2].per_hour: unknown key")));
  EXPECT_THAT(errors, Contains(HasSubstr("teams[0].name: no tenant is in team 'nobody'")));
  const auto refs = errors_of(std::string(kMinimal) + R"(
tenants:
  - {name: a, api_keys: [k1], quotas: [{requests_per_minute: 5, classes: [gold], models: [m9]}]}
)");
  EXPECT_THAT(refs, Contains(HasSubstr("tenants[0].quotas[0].classes[0]: names no class: 'gold'")));
  EXPECT_THAT(refs, Contains(HasSubstr("tenants[0].quotas[0].models[0]: names no model: 'm9'")));
  for (const char* bad : {"localhost", ":6379", "h:0", "h:70000", "h:63x9"}) {
    EXPECT_THAT(errors_of(std::string(kMinimal) + "quota_store: {redis: \"" + bad + "\"}\n"),
                Contains(HasSubstr("quota_store.redis: must be host:port")))
        << bad;
  }
  EXPECT_TRUE(errors_of(std::string(kMinimal) + "quota_store: {redis: \"127.0.0.1:6379\"}\n").empty());
  EXPECT_THAT(errors_of(std::string(kMinimal) + "traffic_breaker: {degrade_class: gold}\n"),
              Contains(HasSubstr("traffic_breaker.degrade_class: names no class: 'gold'")));
  EXPECT_THAT(errors_of(std::string(kMinimal) + "traffic_breaker: {degrade_at: 4, block_at: 3}\n"),
              Contains(HasSubstr("traffic_breaker")));
}

// store.url: a libpq connection string with no password in the config's
// text (shown on the admin listener); url_env may hold one; not both.
TEST(ConfigYaml, StoreUrlTakesNoPasswordAndUrlEnvMayHoldOne) {
  const auto ok = parse_config(std::string(kMinimal) + "store: {url: \"postgresql://arbiter@db:5432/usage\"}\n");
  ASSERT_TRUE(ok.has_value()) << ok.error().front();
  EXPECT_EQ(ok->store.url, "postgresql://arbiter@db:5432/usage");
  EXPECT_THAT(errors_of(std::string(kMinimal) + "store: {url: \"postgresql://arbiter:secret@db/usage\"}\n"),
              Contains(HasSubstr("holds a password")));
  EXPECT_THAT(errors_of(std::string(kMinimal) + "store: {url: \"host=db password=secret\"}\n"),
              Contains(HasSubstr("holds a password")));
  EXPECT_THAT(errors_of(std::string(kMinimal) + "store: {url: \"postgresql://db/x?nosuchoption=1\"}\n"),
              Contains(HasSubstr("store.url")));
  ::setenv("ARBITER_TEST_STORE_URL", "postgresql://arbiter:secret@db/usage", 1);
  EXPECT_TRUE(parse_config(std::string(kMinimal) + "store: {url_env: ARBITER_TEST_STORE_URL}\n").has_value());
  EXPECT_THAT(errors_of(std::string(kMinimal) + "store: {url_env: ARBITER_TEST_STORE_URL, url: \"host=db\"}\n"),
              Contains(HasSubstr("not both")));
  EXPECT_THAT(errors_of(std::string(kMinimal) + "store: {url_env: ARBITER_TEST_NOT_SET}\n"),
              Contains(HasSubstr("is not set")));
  ::unsetenv("ARBITER_TEST_STORE_URL");
}

// LoRA adapters: backends list them, each name is one model's alone,
// numbered in the order first named, and the scheduler gets each backend's
// adapter numbers and slots.
TEST(ConfigLora, AdaptersAreNumberedAndReachTheScheduler) {
  auto c = parse_config(R"(
models:
  - name: m1
    backends:
      - {url: "http://127.0.0.1:8000", adapters: [sql, support], max_loras: 4}
      - {url: "http://127.0.0.1:8001", adapters: [support, legal]}
      - {url: "http://127.0.0.1:8002"}
)");
  ASSERT_TRUE(c) << ::testing::PrintToString(c.error());
  ASSERT_EQ(c->adapters.size(), 3u);
  EXPECT_EQ(c->adapters[0].name, "sql");
  EXPECT_EQ(c->adapters[2].name, "legal");
  EXPECT_EQ(c->adapters[2].model, "m1");
  EXPECT_EQ(c->adapter_number("support"), 2);
  EXPECT_EQ(c->adapter_number("m1"), 0);
  const sched::SchedulerConfig s = to_scheduler_config(*c);
  ASSERT_EQ(s.pools[0].adapters.size(), 3u);
  EXPECT_EQ(s.pools[0].adapters[0], (std::vector<uint16_t>{1, 2}));
  EXPECT_EQ(s.pools[0].adapters[1], (std::vector<uint16_t>{2, 3}));
  EXPECT_TRUE(s.pools[0].adapters[2].empty());
  EXPECT_EQ(s.pools[0].max_loras, (std::vector<uint32_t>{4, 1, 1}));
}

TEST(ConfigLora, AnAdapterNameIsOneModelsAlone) {
  EXPECT_THAT(errors_of(R"(
models:
  - name: m1
    backends: [{url: "http://127.0.0.1:8000", adapters: [m2]}]
  - name: m2
    backends: [{url: "http://127.0.0.1:8001"}]
)"),
              Contains(HasSubstr("is a model's name")));
  EXPECT_THAT(errors_of(R"(
models:
  - name: m1
    backends: [{url: "http://127.0.0.1:8000", adapters: [sql]}]
  - name: m2
    backends: [{url: "http://127.0.0.1:8001", adapters: [sql]}]
)"),
              Contains(HasSubstr("is served with model 'm1' already")));
  EXPECT_THAT(errors_of(R"(
models:
  - name: m1
    backends: [{url: "http://127.0.0.1:8000", adapters: [sql, sql]}]
)"),
              Contains(HasSubstr("twice")));
  EXPECT_THAT(errors_of(R"(
models:
  - name: m1
    backends: [{url: "http://127.0.0.1:8000", max_loras: 0}]
)"),
              Contains(HasSubstr("max_loras")));
}

}  // namespace
}  // namespace arbiter::config_yaml_test
