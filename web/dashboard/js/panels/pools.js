// Per pool: its load coefficient L and degradation stage (docs/overload.md),
// and whether it is in panic mode (every backend ejected or down).
import { el, figure, label, note, percent, show, table } from '../dom.js';
import { samples } from '../prometheus.js';

const STAGES = ['normal', 'elevated', 'high', 'shedding'];

function byPool(metrics, name) {
  return new Map(samples(metrics, name).map((s) => [s.labels.pool, s.value]));
}

export function renderPools(metrics) {
  const load = byPool(metrics, 'arbiter_pool_load');
  const stage = byPool(metrics, 'arbiter_degradation_stage');
  const since = byPool(metrics, 'arbiter_degradation_stage_since_seconds');
  const panic = byPool(metrics, 'arbiter_pool_panic');
  const pools = [...new Set([...load.keys(), ...stage.keys()])].sort();
  if (pools.length === 0) return show('pools', note('No pool reports a load yet.'));
  const rows = pools.map((pool) => {
    const s = stage.get(pool) ?? 0;
    const sinceText = since.has(pool) ? new Date(since.get(pool) * 1000).toLocaleTimeString() : '';
    return el(
      'tr',
      { 'data-pool': pool, class: s > 0 || panic.get(pool) ? 'alert' : '' },
      label('pool', pool),
      figure('load', load.get(pool) ?? 0, percent(load.get(pool) ?? 0)),
      figure('stage', s, STAGES[s] ?? String(s)),
      label('since', sinceText),
      figure('panic', panic.get(pool) ?? 0, panic.get(pool) ? 'yes' : 'no'),
    );
  });
  show('pools', table(['pool', 'load L', 'stage', 'in stage since', 'panic'], rows));
}
