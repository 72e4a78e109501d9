// Per model (its pools added up) and class: requests queued, backend slots
// held, and the class's part of the slots the model's classes hold. The classes' limits
// (max_queue, min_share, max_share) are not in /metrics: the config has them.
import { el, figure, label, note, percent, show, table } from '../dom.js';
import { samples } from '../prometheus.js';

export function renderClasses(metrics) {
  const rows = new Map();  // "model\0class" -> { model, klass, queued, running }
  const row = ({ model, class: klass }) => {
    const key = `${model}\u0000${klass}`;
    if (!rows.has(key)) rows.set(key, { model, klass, queued: 0, running: 0 });
    return rows.get(key);
  };
  for (const s of samples(metrics, 'arbiter_queue_depth')) row(s.labels).queued = s.value;
  for (const s of samples(metrics, 'arbiter_class_in_flight')) row(s.labels).running = s.value;
  if (rows.size === 0) return show('classes', note('No class has a queue yet.'));

  const held = new Map();  // model -> slots its classes hold
  for (const r of rows.values()) held.set(r.model, (held.get(r.model) ?? 0) + r.running);
  const sorted = [...rows.values()].sort((a, b) => a.model.localeCompare(b.model) || a.klass.localeCompare(b.klass));
  const trs = sorted.map((r) => {
    const share = held.get(r.model) > 0 ? r.running / held.get(r.model) : 0;
    return el(
      'tr',
      { 'data-model': r.model, 'data-class': r.klass },
      label('model', r.model),
      label('class', r.klass),
      figure('queued', r.queued),
      figure('running', r.running),
      figure('share', share, percent(share)),
    );
  });
  show(
    'classes',
    table(['model', 'class', 'queued', 'slots held', 'share of held slots'], trs),
    note('Queue limits and min/max shares are not exported in /metrics: see the classes of GET /admin/config.'),
  );
}
