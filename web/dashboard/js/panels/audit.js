// The last scheduling decisions, newest first, from GET /admin/audit; a
// gateway without the audit trail answers 404, which the panel says.
import { adminFetch } from '../admin_api.js';
import { el, label, note, show, table } from '../dom.js';

export const AUDIT_PATH = '/admin/audit?limit=50';

// The audit list; null when this gateway has no audit trail; an Error when
// it failed, which the panel shows without holding up the others.
export async function fetchAudit() {
  const res = await adminFetch(AUDIT_PATH);
  if (res.status === 404) return null;
  if (!res.ok) return new Error(`${AUDIT_PATH} answered ${res.status}`);
  return res.json();
}

export function renderAudit(list) {
  if (list === null) return show('audit', note('Audit trail not available on this gateway.'));
  if (list instanceof Error) return show('audit', note(`Audit trail failed: ${list.message}.`));
  if (list.data.length === 0) return show('audit', note('No decision recorded yet.'));
  const fields = ['ts', 'kind', 'tenant', 'class', 'model', 'request_id', 'reason'];
  const rows = list.data.map((d) =>
    el('tr', { 'data-request-id': d.request_id ?? '' }, ...fields.map((f) => label(f, d[f] ?? ''))),
  );
  show('audit', table(['time', 'decision', 'tenant', 'class', 'model', 'request id', 'reason'], rows));
}
