// The dashboard's refresh loop: every 5 s the live panels (from /metrics,
// the usage report and the audit trail), every 60 s the cost per hour (24
// usage reports). A 401 stops the loop until the operator gives the token.
import { NeedsToken, dropToken, fetchJson, fetchText, setToken } from './admin_api.js';
import { parsePrometheus } from './prometheus.js';
import { askForToken } from './token_form.js';
import { fetchAudit, renderAudit } from './panels/audit.js';
import { renderBackends } from './panels/backends.js';
import { renderClasses } from './panels/classes.js';
import { COST_QUERY, renderCostTable } from './panels/cost_table.js';
import { fetchCostHistory, renderCostHistory } from './panels/cost_history.js';
import { renderPools } from './panels/pools.js';
import { renderTenants } from './panels/tenants.js';

const LIVE_MS = 5000;
const HISTORY_MS = 60000;

const status = document.getElementById('status');
let refreshes = 0;  // completed live refreshes, in data-refreshes for tests

function showStatus(state, text) {
  status.dataset.status = state;
  status.textContent = text;
}

async function refreshLive() {
  const [metricsText, usage, audit] = await Promise.all([fetchText('/metrics'), fetchJson(COST_QUERY), fetchAudit()]);
  const metrics = parsePrometheus(metricsText);
  renderPools(metrics);
  renderClasses(metrics);
  renderTenants(metrics);
  renderBackends(metrics);
  renderCostTable(usage);
  renderAudit(audit);
  status.dataset.refreshes = String(++refreshes);
}

async function run() {
  let historyAt = -Infinity;
  for (;;) {
    try {
      await refreshLive();
      if (Date.now() - historyAt >= HISTORY_MS) {
        renderCostHistory(await fetchCostHistory());
        historyAt = Date.now();
      }
      const at = new Date().toLocaleTimeString();
      showStatus('ok', `Updated ${at}; live figures every ${LIVE_MS / 1000} s, cost per hour every ${HISTORY_MS / 1000} s.`);
    } catch (e) {
      if (e instanceof NeedsToken) {
        dropToken();
        showStatus('needs-token', 'The admin listener asks for its token.');
        setToken(await askForToken());
        continue;
      }
      showStatus('error', `Refresh failed: ${e.message}. Trying again in ${LIVE_MS / 1000} s.`);
    }
    await new Promise((resolve) => setTimeout(resolve, LIVE_MS));
  }
}

run();
