// Small DOM builders for the panels. Every figure is a cell carrying its
// exact value in data-value and its name in data-field, so a test (or a
// curious operator) reads what was drawn without parsing the text.

// An element with attributes (data-* included) and children (nodes or text).
export function el(tag, attrs = {}, ...children) {
  const node = document.createElement(tag);
  for (const [name, value] of Object.entries(attrs)) node.setAttribute(name, String(value));
  node.append(...children);
  return node;
}

// A table: a header row of `columns`, then `rows` (each a <tr>).
export function table(columns, rows) {
  const head = el('tr', {}, ...columns.map((c) => el('th', {}, c)));
  return el('table', {}, el('thead', {}, head), el('tbody', {}, ...rows));
}

// A cell showing `text` for the figure `field` whose value is `value`.
export function figure(field, value, text = String(value)) {
  return el('td', { 'data-field': field, 'data-value': value, class: 'num' }, text);
}

// A cell of text (a name, a state).
export function label(field, text) {
  return el('td', { 'data-field': field }, text);
}

// Replaces what the panel `id` shows.
export function show(id, ...nodes) {
  document.querySelector(`#${id} .body`).replaceChildren(...nodes);
}

// A line saying there is nothing to show (yet).
export function note(text) {
  return el('p', { class: 'note' }, text);
}

export function percent(share) {
  return `${(share * 100).toFixed(1)}%`;
}

// Costs in the prices' unit, whatever it is: up to 6 decimals.
export function money(value) {
  return value.toFixed(6).replace(/\.?0+$/, '');
}
