// The metrics the gateway exports that belong to no one feature, declared in
// one place with stable names. A feature's own families live in its folder
// and register themselves with `registry` (stages/breaker/breaker_metrics.hpp,
// stages/quota/quota_metrics.hpp).
#pragma once

#include "observability/metrics_registry.hpp"

namespace arbiter {

struct GatewayMetrics {
  metrics::Registry registry;

  // Requests answered, by the status the client got (499: client went away).
  metrics::Family<metrics::Counter>& requests = registry.counter(
      "arbiter_requests_total", "Requests answered, by model, class, tenant and status.",
      {"model", "class", "tenant", "status"});
  metrics::Gauge& in_flight =
      registry.gauge("arbiter_requests_in_flight", "Requests being handled right now.", {}).with({});
  metrics::Gauge& request_body_bytes =
      registry
          .gauge("arbiter_request_body_bytes",
                 "Bytes of request bodies held by requests being handled. A stream lets go of its body when "
                 "its answer begins, unless a preemption may run it again.",
                 {})
          .with({});
  metrics::Family<metrics::Histogram>& duration = registry.histogram(
      "arbiter_request_duration_seconds",
      "Time from request received to the last response byte written.", {"model", "class"});
  metrics::Family<metrics::Histogram>& first_byte = registry.histogram(
      "arbiter_time_to_first_byte_seconds",
      "Time from request received to the first response body byte written (for streams: the "
      "first event).",
      {"model", "class"});
  metrics::Family<metrics::Counter>& upstream_errors = registry.counter(
      "arbiter_upstream_errors_total",
      "Failed upstream exchanges by backend and kind (connect, timeout, reset, protocol, "
      "too_large).",
      {"backend", "kind"});
  metrics::Counter& admin_unauthorized = registry.counter(
      "arbiter_admin_unauthorized_total",
      "Requests to /metrics or /admin/* refused for a missing or wrong admin token.", {}).with({});
  metrics::Family<metrics::Counter>& cancelled = registry.counter(
      "arbiter_requests_cancelled_total",
      "Requests whose client went away before the answer was complete.", {"model", "class"});
  metrics::Family<metrics::Counter>& resumed = registry.counter(
      "arbiter_requests_resumed_total",
      "Requests that were preempted and continued from their checkpoint at least once.",
      {"model", "class"});
  metrics::Family<metrics::Counter>& rewrites = registry.counter(
      "arbiter_max_tokens_capped_total", "Requests whose max_tokens the class cap rewrote.",
      {"class"});
  metrics::Family<metrics::Counter>& client_hints = registry.counter(
      "arbiter_client_hints_total",
      "Client hints (x-priority: hint=priority, x-slo-ttft-ms: hint=ttft) by outcome: used as sent, clamped to "
      "the tenant's bound, or invalid (answered 400).",
      {"hint", "outcome"});
  metrics::Family<metrics::Gauge>& backend_in_flight = registry.gauge(
      "arbiter_backend_in_flight", "Slots held per backend: one per sequence a request runs (n answers hold n).",
      {"model", "backend"});
  metrics::Family<metrics::Gauge>& backend_prefix_cache = registry.gauge(
      "arbiter_backend_prefix_cache_tokens",
      "Prompt prefix tokens prefix-affinity routing assumes the backend's engine caches (its KV size: "
      "configured, or the engine's cache_config_info with prefix_cache_tokens: auto).",
      {"model", "backend"});
  // LoRA (docs/scheduler.md, "LoRA adapters"): its adapter_loaded share is
  // the gateway's hit rate.
  metrics::Family<metrics::Counter>& lora_dispatches = registry.counter(
      "arbiter_lora_dispatches_total",
      "Runs of requests for a LoRA adapter by base model, adapter and placement: adapter_loaded (its backend had "
      "it loaded), adapter_load (a free adapter slot), adapter_wait (urgent: sent to wait for a slot), "
      "avoid_failed (a retry).",
      {"model", "adapter", "placement"});
  metrics::Family<metrics::Histogram>& queue_wait = registry.histogram(
      "arbiter_queue_wait_seconds", "Time a request waited in the gateway's queue before dispatch.",
      {"model", "class", "tenant"});
  metrics::Family<metrics::Counter>& tokens = registry.counter(
      "arbiter_tokens_total",
      "Tokens the engines reported in answers' usage (whole answers; streams and whole answers "
      "of resumable requests, over all runs), by model, class, tenant and kind (prompt, "
      "completion, cached: the part of prompt served from the engine's prefix cache).",
      {"model", "class", "tenant", "kind"});
  metrics::Family<metrics::Counter>& team_tokens = registry.counter(
      "arbiter_team_tokens_total",
      "arbiter_tokens_total by team (tenants[].team) and model instead: prompt, completion, cached "
      "(part of prompt).",
      {"team", "model", "kind"});
  metrics::Family<metrics::RealCounter>& cost = registry.real_counter(
      "arbiter_cost_total",
      "What requests cost at their model's prices (config: prices; docs/usage.md), by team and model.",
      {"team", "model"});
  metrics::Family<metrics::Counter>& queue_waits = registry.counter(
      "arbiter_queue_waits_total",
      "Requests that waited in the gateway's queue, by what they waited for: capacity (every "
      "backend at max_concurrency), saturated (engine signals), prefill (the engines' prefill "
      "backlog), share_cap (the class at its max_share), debounce, tenant_headroom (a flooding "
      "tenant's request kept off the slots left for the others), tenant_cap (its tenants at "
      "tenants[].max_running or max_share, or a flooding tenant at scheduler.tenant_fair_cap).",
      {"model", "class", "reason"});
  metrics::Family<metrics::Gauge>& queue_depth = registry.gauge(
      "arbiter_queue_depth", "Requests queued, by model pool and class.", {"model", "class"});
  metrics::Family<metrics::Gauge>& tenant_queue_depth = registry.gauge(
      "arbiter_tenant_queue_depth", "Requests queued, by model pool, class and tenant.",
      {"model", "class", "tenant"});
  metrics::Family<metrics::Gauge>& class_in_flight = registry.gauge(
      "arbiter_class_in_flight", "Backend slots held, by model pool and class (n answers hold n).",
      {"model", "class"});
  metrics::Family<metrics::Counter>& scheduler_events = registry.counter(
      "arbiter_scheduler_events_total",
      "Scheduler decisions by class: enqueued, dispatched, completed, rejected_class_full, "
      "rejected_tenant_full, rejected_predicted, cancelled_queued, cancelled_in_flight, superseded_queued, "
      "superseded_in_flight, preempted, expired, borrowed (dispatched onto another pool's idle slot), "
      "reclaimed (borrowed work preempted for the lending pool's own).",
      {"class", "event"});
  metrics::Family<metrics::Counter>& preemptions_guard_held =
      registry.counter("arbiter_preemptions_guard_held_total",
                       "Scheduler polls where a class below its min_share needed a preemption and the "
                       "only victims were requests resumed within preempt_guard (the thrash guard kept "
                       "them; the guarantee waits for a slot to free).",
                       {"model"});
  metrics::Counter& stale_dispatches =
      registry.counter("arbiter_stale_dispatches_total",
                       "Dispatches to a backend whose engine metrics were stale.", {})
          .with({});
  metrics::Family<metrics::Gauge>& backend_saturated = registry.gauge(
      "arbiter_backend_saturated",
      "1 while a backend's engine reports a queue or KV use over the threshold.",
      {"model", "backend"});
  metrics::Family<metrics::Gauge>& backend_signal_stale = registry.gauge(
      "arbiter_backend_metrics_stale",
      "1 while a backend's engine metrics are older than stale_after (concurrency limit alone).",
      {"model", "backend"});
  metrics::Family<metrics::Gauge>& backend_down = registry.gauge(
      "arbiter_backend_down", "1 while a backend fails its scrapes (skipped by the scheduler).",
      {"model", "backend"});
  // Adaptive capacity (gateway/backend_capacity.hpp): what each backend's controller set.
  metrics::Family<metrics::Gauge>& backend_slot_limit = registry.gauge(
      "arbiter_backend_slot_limit", "A backend's slot limit for every class (at most its max_concurrency).",
      {"model", "backend"});
  metrics::Family<metrics::Gauge>& backend_extra_slots =
      registry.gauge("arbiter_backend_extra_slots", "Slots above that limit for background classes only.",
                     {"model", "backend"});
  metrics::Family<metrics::Gauge>& backend_gap_target = registry.gauge(
      "arbiter_backend_gap_target_seconds",
      "The inter-token gap a backend's steps are held to: the tightest tpot_slo_ms of the classes with work on "
      "its pool, else adaptive_capacity.itl_target_ms.",
      {"model", "backend"});
  metrics::Family<metrics::Counter>& backend_limit_changes = registry.counter(
      "arbiter_backend_slot_limit_changes_total",
      "Changes of a backend's whole slot limit (with the extra slots), by direction: up, down.",
      {"model", "backend", "direction"});
  metrics::Family<metrics::Counter>& backend_stale_total = registry.counter(
      "arbiter_backend_stale_total", "Times a backend's engine metrics went stale.",
      {"model", "backend"});
  metrics::Family<metrics::Counter>& backend_scrapes = registry.counter(
      "arbiter_backend_scrapes_total", "Engine /metrics scrapes by outcome (ok, failed, unusable).",
      {"model", "backend", "outcome"});
  metrics::Family<metrics::Gauge>& engine_waiting = registry.gauge(
      "arbiter_engine_requests_waiting", "Requests queued inside the engine, as last scraped.",
      {"model", "backend"});
  metrics::Family<metrics::Gauge>& engine_kv_usage = registry.gauge(
      "arbiter_engine_kv_cache_usage", "Engine KV cache use 0..1, as last scraped.",
      {"model", "backend"});
  metrics::Counter& service_exchanges =
      registry.counter("arbiter_service_exchanges_total",
                       "Exchanges of recent service per tenant with the other gateway replicas through Redis "
                       "(tenant fairness across replicas; every 500 ms with quota_store.redis).",
                       {})
          .with({});
  metrics::Family<metrics::Counter>& http_refusals = registry.counter(
      "arbiter_http_refusals_total",
      "Requests refused before the request pipeline, by reason (malformed: framing the server refuses, "
      "smuggling attempts included; header_too_large; body_too_large; too_many_connections; no_route; "
      "method_not_allowed) and status. Also counted in arbiter_requests_total with model and class none.",
      {"reason", "status"});
  metrics::Counter& http_refusals_unlogged =
      registry.counter("arbiter_http_refusals_unlogged_total",
                       "Refusals before the pipeline whose access-log line was left out: at most 20 such lines a "
                       "second (bursts of 100), so that a flood of bad requests does not flood the log.",
                       {})
          .with({});
  metrics::Counter& access_log_dropped =
      registry.counter("arbiter_access_log_dropped_total",
                       "Access-log lines dropped: the writer fell 4 MiB behind (a full pipe, a slow disk) or a "
                       "write failed. The request path never waits for the log.",
                       {})
          .with({});
  // Config reloads (docs/deployment.md, "Config changes").
  metrics::Family<metrics::Gauge>& config_info = registry.gauge(
      "arbiter_config_info",
      "1 for the config version running (its hash and where it came from), 0 for versions that ran before: "
      "replicas whose hashes differ have drifted apart.",
      {"hash", "source"});
  metrics::Family<metrics::Counter>& config_reloads = registry.counter(
      "arbiter_config_reloads_total",
      "Config reloads (SIGHUP, POST /admin/config, rollbacks) by result: applied, unchanged (the same text "
      "runs already) or rejected (invalid, or a change only a restart applies; the old config keeps serving).",
      {"result"});
  metrics::Family<metrics::Counter>& config_carried = registry.counter(
      "arbiter_config_carried_total",
      "Requests a config reload found, by what became of them: queued (queued again under the new config), "
      "running (counted on their backend there), dropped_queued (answered 503: the new config has no place for "
      "them) and orphaned_running (their backend was removed: they finish uncounted).",
      {"what"});
  metrics::Gauge& config_generations =
      registry.gauge("arbiter_config_generations",
                     "Config generations in memory: the running one, and replaced ones that requests still use or "
                     "whose background loops are ending (freed within seconds of their last request).",
                     {})
          .with({});
  metrics::Family<metrics::Counter>& upstream_retries = registry.counter(
      "arbiter_upstream_retries_total",
      "Requests resent on a new connection after a pooled one turned out closed.", {"backend"});
  // Backend failures (docs/resilience.md).
  metrics::Family<metrics::Gauge>& backend_health = registry.gauge(
      "arbiter_backend_health",
      "1 for the backend's outlier-detection state (healthy, ejected, probing, slow_start), 0 for the others.",
      {"model", "backend", "state"});
  metrics::Family<metrics::Counter>& backend_ejections = registry.counter(
      "arbiter_backend_ejections_total",
      "Backends taken out of rotation by outlier detection, by reason (consecutive_failures, failure_rate, "
      "probe_failed, retry_after).",
      {"model", "backend", "reason"});
  metrics::Family<metrics::Gauge>& pool_panic = registry.gauge(
      "arbiter_pool_panic",
      "1 while every backend of a pool is ejected or down, so the ejected ones serve anyway (panic mode).",
      {"pool"});
  metrics::Family<metrics::Counter>& typing_through = registry.counter(
      "arbiter_typing_through_total",
      "Streaming completions of a typing_through class that superseded a running request, by what came "
      "of it: handed_over (the running generation went on to the newer request), lost (claimed, but the "
      "old run ended before handing it over: the newer one ran anew), or why not (not_extension, "
      "not_generated, shape, not_eligible, tls_other_thread: the old one was aborted).",
      {"class", "outcome"});
  metrics::Family<metrics::Counter>& retries = registry.counter(
      "arbiter_retries_total",
      "Runs of a request after a failed one, by pool and kind: retry (nothing had reached the client), "
      "failover (a resumable stream continued on another backend), refused_budget (the pool's retry budget "
      "was spent), exhausted (max_retries reached).",
      {"pool", "kind"});
  metrics::Family<metrics::Counter>& health_probes = registry.counter(
      "arbiter_health_probes_total", "Active health probes (a 1-token completion) by backend and result (ok, failed).",
      {"model", "backend", "result"});
};

}  // namespace arbiter
