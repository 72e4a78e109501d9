// The Prometheus text format (version 0.0.4, what /metrics answers) read into
// samples by metric name: Map name -> [{ labels, value }].
export function parsePrometheus(text) {
  const metrics = new Map();
  for (const line of text.split('\n')) {
    if (line === '' || line.startsWith('#')) continue;
    const { name, labels, value } = parseSample(line);
    if (!metrics.has(name)) metrics.set(name, []);
    metrics.get(name).push({ labels, value });
  }
  return metrics;
}

// name{label="value",...} value [timestamp]
function parseSample(line) {
  const brace = line.indexOf('{');
  const space = line.indexOf(' ');
  if (brace === -1 || brace > space) {
    return { name: line.slice(0, space), labels: {}, value: parseValue(line.slice(space + 1)) };
  }
  const labels = {};
  let i = brace + 1;
  while (line[i] !== '}') {
    const eq = line.indexOf('="', i);
    if (eq === -1) throw new Error(`malformed metrics line: ${line}`);
    const key = line.slice(i, eq);
    let value = '';
    for (i = eq + 2; line[i] !== '"'; ++i) {
      if (i >= line.length) throw new Error(`malformed metrics line: ${line}`);
      if (line[i] === '\\') value += line[++i] === 'n' ? '\n' : line[i];
      else value += line[i];
    }
    labels[key] = value;
    i += line[i + 1] === ',' ? 2 : 1;
  }
  return { name: line.slice(0, brace), labels, value: parseValue(line.slice(i + 1)) };
}

function parseValue(text) {
  const [number] = text.trim().split(' ');  // a timestamp may follow
  if (number === '+Inf') return Infinity;
  if (number === '-Inf') return -Infinity;
  return Number(number);  // "NaN" too
}

// The samples of `name`, [] when the gateway exports none.
export function samples(metrics, name) {
  return metrics.get(name) ?? [];
}

// Sum of `name`'s samples that pass `keep`, by the values of `labels`
// (joined with '\u0000'): Map key -> sum.
export function sumBy(metrics, name, labels, keep = () => true) {
  const sums = new Map();
  for (const s of samples(metrics, name)) {
    if (!keep(s.labels)) continue;
    const key = labels.map((l) => s.labels[l]).join('\u0000');
    sums.set(key, (sums.get(key) ?? 0) + s.value);
  }
  return sums;
}
