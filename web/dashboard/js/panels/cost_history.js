// Cost per hour by team and model over the last 24 hours: one usage report
// per hour (GET /admin/usage with from/to), plotted as a line per pair.
import { fetchJson } from '../admin_api.js';
import { money, note, show } from '../dom.js';
import { legend, lineChart } from '../line_chart.js';

const HOURS = 24;

// [{ from (unix seconds), rows }] for each of the last 24 hours, the current
// one last.
export async function fetchCostHistory() {
  const now = Math.floor(Date.now() / 1000);
  const current = now - (now % 3600);
  const starts = Array.from({ length: HOURS }, (_, i) => current - (HOURS - 1 - i) * 3600);
  const reports = await Promise.all(
    starts.map((from) => fetchJson(`/admin/usage?group_by=team,model&from=${from}&to=${from + 3600}`)),
  );
  return starts.map((from, i) => ({ from, rows: reports[i].rows }));
}

export function renderCostHistory(hours) {
  const series = new Map();  // "team / model" -> cost per hour
  hours.forEach(({ rows }, i) => {
    for (const r of rows) {
      const name = `${r.team} / ${r.model}`;
      if (!series.has(name)) series.set(name, new Array(hours.length).fill(0));
      series.get(name)[i] = r.cost;
    }
  });
  if (series.size === 0) return show('cost-history', note('No cost in the last 24 hours.'));
  const xLabels = hours.map(({ from }) => new Date(from * 1000).toISOString().slice(11, 16));
  show('cost-history', lineChart({ xLabels, series, format: money }), legend([...series.keys()]), note('Hours in UTC.'));
}
