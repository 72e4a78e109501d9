// The test's own reading of /metrics (not the page's parser), and the
// figures each dashboard panel should show from it, keyed as the panel's
// rows are.
export function parseMetrics(text) {
  const samples = [];
  for (const line of text.split('\n')) {
    const m = /^([a-zA-Z_:][a-zA-Z0-9_:]*)(?:\{(.*)\})? (\S+)/.exec(line);
    if (!m) continue;
    const labels = {};
    for (const [, k, v] of (m[2] ?? '').matchAll(/([a-zA-Z_]\w*)="((?:[^"\\]|\\.)*)"/g)) {
      labels[k] = v.replace(/\\(.)/g, (_, c) => (c === 'n' ? '\n' : c));
    }
    samples.push({ name: m[1], labels, value: Number(m[3].replace('Inf', 'Infinity')) });
  }
  return samples;
}

// Adds `value` to figures[key][field].
function add(figures, key, field, value) {
  figures[key] ??= {};
  figures[key][field] = (figures[key][field] ?? 0) + value;
}

// Panel -> row key -> field -> value, as the dashboard defines each figure
// (docs/dashboard.md).
export function expectedFigures(samples) {
  const f = { pools: {}, classes: {}, tenants: {}, breakers: {}, backends: {} };
  for (const { name, labels: l, value } of samples) {
    const backend = `${l.model}|${l.backend}`;
    switch (name) {
      case 'arbiter_pool_load': add(f.pools, l.pool, 'load', value); break;
      case 'arbiter_degradation_stage': add(f.pools, l.pool, 'stage', value); break;
      case 'arbiter_pool_panic': add(f.pools, l.pool, 'panic', value); break;
      case 'arbiter_queue_depth': add(f.classes, `${l.model}|${l.class}`, 'queued', value); break;
      case 'arbiter_class_in_flight': add(f.classes, `${l.model}|${l.class}`, 'running', value); break;
      case 'arbiter_requests_total':
        add(f.tenants, l.tenant, 'requests', value);
        add(f.tenants, l.tenant, 'client_errors', Number(l.status) >= 400 && Number(l.status) < 500 ? value : 0);
        add(f.tenants, l.tenant, 'server_errors', Number(l.status) >= 500 ? value : 0);
        break;
      case 'arbiter_quota_refused_total': add(f.tenants, l.tenant, 'quota_refused', value); break;
      case 'arbiter_tokens_total':
        if (l.kind === 'prompt' || l.kind === 'completion') add(f.tenants, l.tenant, `${l.kind}_tokens`, value);
        break;
      case 'arbiter_backend_in_flight': add(f.backends, backend, 'in_flight', value); break;
      case 'arbiter_backend_down': add(f.backends, backend, 'down', value); break;
      case 'arbiter_backend_ejections_total': add(f.backends, backend, 'ejections', value); break;
      // The test's pools are its models (no per-class pools): the pool is the model.
      case 'arbiter_backend_load': add(f.backends, `${l.pool}|${l.backend}`, 'load', value); break;
      case 'arbiter_model_breaker_stage': if (value === 1) (f.breakers[l.model] ??= {}).breaker = l.stage; break;
      case 'arbiter_backend_health': if (value === 1) (f.backends[backend] ??= {}).state = l.state; break;
    }
  }
  return f;
}

// The key of a dashboard row in expectedFigures' terms.
export const rowKey = {
  pools: (d) => d.pool,
  classes: (d) => `${d.model}|${d.class}`,
  tenants: (d) => d.tenant,
  breakers: (d) => d.model,
  backends: (d) => `${d.model}|${d.backend}`,
};
