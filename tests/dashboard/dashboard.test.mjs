// The dashboard on the admin listener, in a real headless Chromium: served
// there only, asks for the token on a 401, loads without errors, and shows
// what /metrics and /admin/usage say (docs/dashboard.md).
import assert from 'node:assert/strict';
import { after, before, test } from 'node:test';

import { launch, readPanels, recordProblems } from './browser.mjs';
import { ADMIN_TOKEN, adminGet, chat, startGateway } from './gateway.mjs';
import { expectedFigures, parseMetrics, rowKey } from './metrics.mjs';

let gw;
let browser;

before(async () => {
  gw = await startGateway();
  browser = await launch();
  // alpha on m1 (20 a minute admitted, the rest refused 429), beta on both
  // models, streamed and not: two teams, both priced.
  const statuses = await Promise.all([
    ...Array.from({ length: 24 }, () => chat(gw, 'sk-alpha', 'm1')),
    ...Array.from({ length: 6 }, (_, i) => chat(gw, 'sk-beta', i % 2 ? 'm1' : 'm2', { stream: i % 3 === 0 })),
  ]);
  assert.equal(statuses.filter((s) => s === 200).length, 26, `statuses: ${statuses}`);
  assert.equal(statuses.filter((s) => s === 429).length, 4);
});

after(async () => {
  await browser?.close();
  gw?.stop();
});

async function scrape() {
  const res = await adminGet(gw, '/metrics');
  assert.equal(res.status, 200);
  return expectedFigures(parseMetrics(await res.text()));
}

// Waits until the page finished `n` live refreshes.
async function refreshed(page, n) {
  await page.waitForFunction((k) => Number(document.getElementById('status').dataset.refreshes ?? 0) >= k, { timeout: 20000 }, n);
}

// How each figure reads on the page, by panel and field (counts as plain
// integers, loads as percentages, stages by name).
const STAGES = ['normal', 'elevated', 'high', 'shedding'];
const BREAKER_STAGES = ['green', 'yellow', 'orange', 'red'];
const TEXT = {
  'pools.load': (v) => `${(v * 100).toFixed(1)}%`,
  'pools.stage': (v) => STAGES[v],
  'pools.panic': (v) => (v ? 'yes' : 'no'),
  'backends.down': (v) => (v ? 'yes' : 'no'),
  'backends.load': (v) => `${(v * 100).toFixed(1)}%`,
  'tenants.traffic_breaker': (v) => BREAKER_STAGES[v],
};

// A figure shown against /metrics before (`a`) and after (`b`) the refresh
// that drew it: a number between the two, in the panel's format; a state
// (a label) as one of them.
function checkFigure(kind, where, shown, a, b) {
  if (typeof b === 'string') {
    assert.ok(shown.text === a || shown.text === b, `${where}: shows ${shown.text}, /metrics said ${a} then ${b}`);
    return;
  }
  const value = Number(shown.value);
  a ??= 0;
  assert.ok(
    value >= Math.min(a, b) - 1e-9 && value <= Math.max(a, b) + 1e-9,
    `${where}: shows ${value}, /metrics said ${a} then ${b}`,
  );
  assert.equal(shown.text, (TEXT[kind] ?? String)(value), `${where}: text`);
}

test('served on the admin listener only, without the token; its data needs it', async () => {
  assert.equal((await fetch(`${gw.api}/dashboard`)).status, 404, 'the public port must not serve it');
  assert.equal((await fetch(`${gw.api}/dashboard/js/main.js`)).status, 404);
  const page = await fetch(`${gw.admin}/dashboard`);
  assert.equal(page.status, 200);
  assert.equal(page.headers.get('content-type'), 'text/html; charset=utf-8');
  assert.equal(page.headers.get('cache-control'), 'no-cache');
  assert.match(await page.text(), /<script type="module" src="\/dashboard\/js\/main.js">/);
  const script = await fetch(`${gw.admin}/dashboard/js/main.js`);
  assert.equal(script.headers.get('content-type'), 'text/javascript; charset=utf-8');
  assert.equal((await fetch(`${gw.admin}/dashboard/dashboard.css`)).headers.get('content-type'), 'text/css; charset=utf-8');
  assert.equal((await fetch(`${gw.admin}/dashboard/nope.js`)).status, 404);
  assert.equal((await fetch(`${gw.admin}/metrics`)).status, 401);
});

test('asks for the token, then shows /metrics and /admin/usage as they are', async () => {
  const page = await browser.newPage();
  const { problems, state } = recordProblems(page);
  await page.goto(`${gw.admin}/dashboard`);
  await page.waitForSelector('#token-form:not([hidden])', { timeout: 10000 });
  state.phase = 'token';
  await page.type('#token-input', ADMIN_TOKEN);
  await page.click('#token-form button');
  await refreshed(page, 1);

  // Live figures: the page's values lie between a scrape taken before the
  // refresh that drew them began and one taken after it was drawn.
  const before = await scrape();
  const from = await page.$eval('#status', (s) => Number(s.dataset.refreshes));
  await refreshed(page, from + 2);
  const live = ['pools', 'classes', 'tenants', 'breakers', 'backends'];
  const shown = await readPanels(page, [...live, 'cost']);
  const later = await scrape();
  for (const panel of live) {
    const rows = shown[panel];
    const keys = rows.map((r) => rowKey[panel](r.data)).sort();
    assert.deepEqual(keys, Object.keys(later[panel]).sort(), `${panel}: the rows /metrics has`);
    for (const row of rows) {
      const key = rowKey[panel](row.data);
      for (const [field, b] of Object.entries(later[panel][key])) {
        assert.ok(row.fields[field], `${panel} ${key}: no ${field} shown`);
        checkFigure(`${panel}.${field}`, `${panel} ${key} ${field}`, row.fields[field], before[panel][key]?.[field], b);
      }
    }
  }
  const tenants = Object.fromEntries(shown.tenants.map((r) => [r.data.tenant, r.fields]));
  assert.equal(Number(tenants.alpha.quota_refused.value), 4);
  assert.ok(Number(tenants.beta.completion_tokens.value) > 0);

  // Cost: the same rows and values as the usage report itself.
  const usage = await (await adminGet(gw, '/admin/usage?group_by=team,model')).json();
  const costRows = shown.cost.filter((r) => !('total' in r.data));
  assert.deepEqual(
    costRows.map((r) => ({
      team: r.data.team,
      model: r.data.model,
      requests: Number(r.fields.requests.value),
      prompt_tokens: Number(r.fields.prompt_tokens.value),
      completion_tokens: Number(r.fields.completion_tokens.value),
      cost: Number(r.fields.cost.value),
    })),
    usage.rows.map(({ team, model, requests, prompt_tokens, completion_tokens, cost }) => ({
      team, model, requests, prompt_tokens, completion_tokens, cost,
    })),
  );
  assert.deepEqual([...new Set(usage.rows.map((r) => r.team))].sort(), ['blue', 'red']);
  assert.ok(usage.rows.every((r) => r.cost > 0), 'every team and model priced');
  const total = shown.cost.find((r) => 'total' in r.data);
  assert.equal(Number(total.fields.cost.value), usage.total.cost);

  // Cost per hour: a line per team and model.
  const lines = await page.$$eval('[data-panel="cost-history"] polyline', (ps) => ps.map((p) => p.dataset.series));
  assert.deepEqual(lines.sort(), usage.rows.map((r) => `${r.team} / ${r.model}`).sort());

  // Last decisions: the audit trail's rows, or a note while there is none.
  const audit = await adminGet(gw, '/admin/audit?limit=50');
  const auditText = await page.$eval('[data-panel="audit"] .body', (b) => b.textContent);
  if (audit.status === 404) {
    assert.match(auditText, /Audit trail not available/);
  } else {
    assert.equal(audit.status, 200);
    const ids = await page.$$eval('[data-panel="audit"] tbody tr', (rs) => rs.map((r) => r.dataset.requestId));
    assert.deepEqual(ids, (await audit.json()).data.map((d) => d.request_id));
  }

  // Nothing went wrong on the page but the 401s that asked for the token
  // and the audit trail's 404 while the gateway has none.
  const unexpected = problems.filter((p) => {
    const status = p.status || Number(/status of (\d+)/.exec(p.text)?.[1] ?? 0);
    if (p.phase === 'start' && status === 401) return false;
    return !(status === 404 && /\/admin\/audit\?/.test(p.url));
  });
  assert.deepEqual(unexpected, []);
  assert.ok(problems.some((p) => p.phase === 'start' && p.status === 401), 'the first fetches asked for the token');

  // The token stays for the tab: a reload asks for nothing.
  state.phase = 'reload';
  const n = problems.length;
  await page.reload();
  await refreshed(page, 1);
  assert.equal(await page.$eval('#token-form', (f) => f.hidden), true);
  assert.deepEqual(problems.slice(n).filter((p) => p.status === 401), []);
  await page.close();
});

test('draws the audit trail newest first', async () => {
  const page = await browser.newPage();
  await page.evaluateOnNewDocument((token) => sessionStorage.setItem('arbiter.adminToken', token), ADMIN_TOKEN);
  const data = [
    { ts: '2026-12-06T22:00:01.500Z', kind: 'refused', request_id: 'r2', tenant: 'alpha', class: 'chat', model: 'm1', reason: 'quota' },
    { ts: '2026-12-06T22:00:00.123Z', kind: 'dispatched', request_id: 'r1', tenant: 'beta', class: 'chat', model: 'm2', reason: 'share' },
  ];
  await page.setRequestInterception(true);
  page.on('request', (r) =>
    r.url().includes('/admin/audit?')
      ? r.respond({ status: 200, contentType: 'application/json', body: JSON.stringify({ object: 'list', data }) })
      : r.continue(),
  );
  await page.goto(`${gw.admin}/dashboard`);
  await refreshed(page, 1);
  const rows = await page.$$eval('[data-panel="audit"] tbody tr', (rs) =>
    rs.map((r) => [...r.querySelectorAll('td')].map((td) => td.textContent)),
  );
  assert.deepEqual(rows, data.map((d) => [d.ts, d.kind, d.tenant, d.class, d.model, d.request_id, d.reason]));
  await page.close();
});

// Keep the gateway's last words when something fails.
process.on('exit', (code) => {
  if (code !== 0 && gw) console.error(`gateway output (tail):\n${gw.log().slice(-3000)}`);
});
