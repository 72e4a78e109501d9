// Per tenant: requests answered (client errors, quota refusals among them,
// and server errors), tokens the engines reported, and its traffic breaker
// (docs/quotas.md). `anonymous` holds requests without a tenant's key,
// refusals before the pipeline included.
import { el, figure, label, note, show, table } from '../dom.js';
import { samples, sumBy } from '../prometheus.js';

const BREAKER_STAGES = ['green', 'yellow', 'orange', 'red'];

export function renderTenants(metrics) {
  const byTenant = (name, keep) => sumBy(metrics, name, ['tenant'], keep);
  const requests = byTenant('arbiter_requests_total');
  const clientErrors = byTenant('arbiter_requests_total', (l) => Number(l.status) >= 400 && Number(l.status) < 500);
  const serverErrors = byTenant('arbiter_requests_total', (l) => Number(l.status) >= 500);
  const refused = byTenant('arbiter_quota_refused_total');
  const prompt = byTenant('arbiter_tokens_total', (l) => l.kind === 'prompt');
  const completion = byTenant('arbiter_tokens_total', (l) => l.kind === 'completion');
  const breaker = new Map(samples(metrics, 'arbiter_traffic_breaker_stage').map((s) => [s.labels.tenant, s.value]));
  const tenants = [...new Set([...requests.keys(), ...breaker.keys()])].sort();
  if (tenants.length === 0) return show('tenants', note('No request yet.'));
  const rows = tenants.map((tenant) => {
    const stage = breaker.get(tenant) ?? 0;
    return el(
      'tr',
      { 'data-tenant': tenant, class: stage > 0 ? 'alert' : '' },
      label('tenant', tenant),
      figure('requests', requests.get(tenant) ?? 0),
      figure('client_errors', clientErrors.get(tenant) ?? 0),
      figure('quota_refused', refused.get(tenant) ?? 0),
      figure('server_errors', serverErrors.get(tenant) ?? 0),
      figure('prompt_tokens', prompt.get(tenant) ?? 0),
      figure('completion_tokens', completion.get(tenant) ?? 0),
      figure('traffic_breaker', stage, BREAKER_STAGES[stage] ?? String(stage)),
    );
  });
  const columns = ['tenant', 'requests', '4xx', 'quota refusals', '5xx', 'prompt tokens', 'completion tokens', 'traffic breaker'];
  show('tenants', table(columns, rows));
}
