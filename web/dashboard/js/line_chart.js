// A line chart in inline SVG: one line per series over shared x positions,
// a y axis from 0 to the largest value, and a legend.
const SVG = 'http://www.w3.org/2000/svg';
const WIDTH = 960;
const HEIGHT = 220;
const PAD = { left: 64, right: 24, top: 12, bottom: 28 };
const COLORS = ['#1f77b4', '#d62728', '#2ca02c', '#ff7f0e', '#9467bd', '#8c564b', '#e377c2', '#17becf'];

function svg(tag, attrs = {}, text) {
  const node = document.createElementNS(SVG, tag);
  for (const [name, value] of Object.entries(attrs)) node.setAttribute(name, String(value));
  if (text !== undefined) node.textContent = text;
  return node;
}

// `xLabels`: one per x position (every `labelEvery`th is drawn); `series`:
// Map name -> values, one per x position; `format`: a y value as text.
export function lineChart({ xLabels, series, format, labelEvery = 6 }) {
  const max = Math.max(0, ...[...series.values()].flat()) || 1;
  const x = (i) => PAD.left + (i * (WIDTH - PAD.left - PAD.right)) / Math.max(1, xLabels.length - 1);
  const y = (v) => HEIGHT - PAD.bottom - (v / max) * (HEIGHT - PAD.top - PAD.bottom);
  const chart = svg('svg', { viewBox: `0 0 ${WIDTH} ${HEIGHT}`, class: 'chart', role: 'img' });
  for (const v of [0, max / 2, max]) {
    chart.append(svg('line', { x1: PAD.left, x2: WIDTH - PAD.right, y1: y(v), y2: y(v), class: 'grid' }));
    chart.append(svg('text', { x: PAD.left - 6, y: y(v) + 4, 'text-anchor': 'end' }, format(v)));
  }
  xLabels.forEach((text, i) => {
    if (i % labelEvery === 0 || i === xLabels.length - 1) {
      chart.append(svg('text', { x: x(i), y: HEIGHT - 8, 'text-anchor': 'middle' }, text));
    }
  });
  [...series.entries()].forEach(([name, values], n) => {
    const points = values.map((v, i) => `${x(i)},${y(v)}`).join(' ');
    chart.append(svg('polyline', { points, stroke: COLORS[n % COLORS.length], 'data-series': name, class: 'line' }));
  });
  return chart;
}

// The legend of lineChart's series, in the same colours.
export function legend(names) {
  const list = document.createElement('ul');
  list.className = 'legend';
  names.forEach((name, n) => {
    const item = document.createElement('li');
    const swatch = svg('svg', { width: 12, height: 12 });
    swatch.append(svg('rect', { width: 12, height: 12, fill: COLORS[n % COLORS.length] }));
    item.append(swatch, ` ${name}`);
    list.append(item);
  });
  return list;
}
