// Each model's breaker stage (docs/resilience.md) and each backend's
// outlier-detection state, engine scrape and slots held; an ejected or down
// backend is marked.
import { el, figure, label, note, percent, show, table } from '../dom.js';
import { samples, sumBy } from '../prometheus.js';

// The label value of the one sample of `name` set to 1, by `key`'s labels.
function activeState(metrics, name, keyLabels, stateLabel) {
  const states = new Map();
  for (const s of samples(metrics, name)) {
    if (s.value === 1) states.set(keyLabels.map((l) => s.labels[l]).join('\u0000'), s.labels[stateLabel]);
  }
  return states;
}

function breakersTable(metrics) {
  const stages = activeState(metrics, 'arbiter_model_breaker_stage', ['model'], 'stage');
  const rows = [...stages.keys()].sort().map((model) =>
    el(
      'tr',
      { 'data-model': model, class: stages.get(model) === 'closed' ? '' : 'alert' },
      label('model', model),
      label('breaker', stages.get(model)),
    ),
  );
  return rows.length ? table(['model', 'breaker'], rows) : note('No model breaker reports yet.');
}

function backendsTable(metrics) {
  const key = (l) => `${l.model}\u0000${l.backend}`;
  const health = activeState(metrics, 'arbiter_backend_health', ['model', 'backend'], 'state');
  const down = new Map(samples(metrics, 'arbiter_backend_down').map((s) => [key(s.labels), s.value]));
  const inFlight = new Map(samples(metrics, 'arbiter_backend_in_flight').map((s) => [key(s.labels), s.value]));
  // The load gauge names the backend's pool: its model's name, or model/classes.
  const loads = samples(metrics, 'arbiter_backend_load');
  const loadOf = (model, backend) =>
    loads.find((s) => s.labels.backend === backend && (s.labels.pool === model || s.labels.pool.startsWith(`${model}/`)))
      ?.value ?? 0;
  const ejections = sumBy(metrics, 'arbiter_backend_ejections_total', ['model', 'backend']);
  const keys = [...new Set([...health.keys(), ...down.keys()])].sort();
  const rows = keys.map((k) => {
    const [model, backend] = k.split('\u0000');
    const state = health.get(k) ?? 'healthy';
    const isDown = down.get(k) ?? 0;
    return el(
      'tr',
      { 'data-model': model, 'data-backend': backend, class: state === 'healthy' && !isDown ? '' : 'alert' },
      label('model', model),
      label('backend', backend),
      label('state', state),
      figure('down', isDown, isDown ? 'yes' : 'no'),
      figure('in_flight', inFlight.get(k) ?? 0),
      figure('load', loadOf(model, backend), percent(loadOf(model, backend))),
      figure('ejections', ejections.get(k) ?? 0),
    );
  });
  const columns = ['model', 'backend', 'outlier state', 'scrapes failing', 'slots held', 'load L', 'ejections'];
  return rows.length ? table(columns, rows) : note('No backend reports yet.');
}

export function renderBackends(metrics) {
  show('breakers', breakersTable(metrics));
  show('backends', backendsTable(metrics));
}
