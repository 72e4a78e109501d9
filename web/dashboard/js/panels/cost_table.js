// Cost by team and model over the usage report's default range (the last 24
// hours, widened to whole hours), from GET /admin/usage (docs/usage.md).
import { el, figure, label, money, note, show, table } from '../dom.js';

export const COST_QUERY = '/admin/usage?group_by=team,model';

export function renderCostTable(report) {
  const range = `${report.from} to ${report.to}`;
  if (report.rows.length === 0) return show('cost', note(`No usage from ${range}.`));
  const figures = (r) => [
    figure('requests', r.requests),
    figure('prompt_tokens', r.prompt_tokens),
    figure('completion_tokens', r.completion_tokens),
    figure('cost', r.cost, money(r.cost)),
  ];
  const rows = report.rows.map((r) =>
    el('tr', { 'data-team': r.team, 'data-model': r.model }, label('team', r.team), label('model', r.model), ...figures(r)),
  );
  const total = el('tr', { 'data-total': '', class: 'total' }, label('team', 'total'), label('model', ''), ...figures(report.total));
  const columns = ['team', 'model', 'requests', 'prompt tokens', 'completion tokens', 'cost'];
  show('cost', table(columns, [...rows, total]), note(`From ${range} (UTC).`));
}
