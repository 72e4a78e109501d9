// deploy/monitoring against what the gateway exports (check_monitoring.sh).
//
//   node check_monitoring.mjs <scrape> <src-dir> <monitoring-dir> <deployment.md> [--self-test]
//
// Every arbiter_* name in a PromQL expression of the Grafana dashboard (panel
// targets, annotations, label_values() of its variables) and of the alert
// rules must be a family of the scrape (a histogram's _bucket, _sum, _count
// map to it), and every label of its selectors and of the by/without of an
// aggregation around it one of that family's: read off the scraped samples,
// or, for a family shown only by its # TYPE line, off its registration in
// the source. Also: the dashboard's ${datasource} variable and the variables
// it uses, each alert's severity, annotations and runbook (a heading of
// deployment.md whose text names the alert), recorded names defined.
// --self-test: a misspelled metric, a wrong label in a selector, in a by ()
// and in a variable's label_values() must each be reported.
import { readFileSync, readdirSync } from 'node:fs';
import { join } from 'node:path';
import { parser } from '@prometheus-io/lezer-promql';
import { parseDocument } from 'yaml';

const [scrapePath, srcDir, monDir, deploymentMd] = process.argv.slice(2);
const TARGET_LABELS = ['instance', 'job']; // added by Prometheus to every scraped series

// name -> {type, labels}: the labels off the scrape's samples, else off the source.
function exportedFamilies() {
  const types = new Map();
  const labels = new Map();
  for (const line of readFileSync(scrapePath, 'utf8').split('\n')) {
    const type = line.match(/^# TYPE (\S+) (\S+)$/);
    if (type) types.set(type[1], type[2]);
    const sample = line.match(/^([a-zA-Z_:][\w:]*)(?:\{(.*)\})? \S+$/);
    if (!sample) continue;
    let name = sample[1];
    if (!types.has(name)) name = name.replace(/_(bucket|sum|count)$/, '');
    if (!labels.has(name)) labels.set(name, new Set());
    for (const m of (sample[2] ?? '').matchAll(/(\w+)="(?:[^"\\]|\\.)*"/g)) if (m[1] !== 'le') labels.get(name).add(m[1]);
  }
  const registered = new Map();
  for (const file of readdirSync(srcDir, { recursive: true })) {
    if (!/\.(hpp|cpp)$/.test(file)) continue;
    const text = readFileSync(join(srcDir, file), 'utf8');
    for (const m of text.matchAll(/"(arbiter_\w+)",\s*(?:"(?:[^"\\]|\\.)*"\s*)+,\s*\{([^}]*)\}/g)) {
      registered.set(m[1], new Set([...m[2].matchAll(/"(\w+)"/g)].map((l) => l[1])));
    }
  }
  // labels: null for a family with neither samples nor a registration found.
  return new Map([...types].map(([name, type]) => [name, { type, labels: labels.get(name) ?? registered.get(name) ?? null }]));
}
const families = exportedFamilies();

// The family a selector of `name` reads, with the labels it may use; undefined
// when the gateway exports none of that name.
function familyOf(name) {
  if (families.has(name)) return families.get(name);
  const m = name.match(/^(.*)_(bucket|sum|count)$/);
  const family = m && families.get(m[1]);
  if (!family || family.type !== 'histogram') return undefined;
  return m[2] === 'bucket' && family.labels ? { ...family, labels: new Set([...family.labels, 'le']) } : family;
}

function* descendants(node) {
  for (let c = node.firstChild; c; c = c.nextSibling) {
    yield c;
    yield* descendants(c);
  }
}

// Problems of one PromQL expression; grafana's $__interval-style variables
// stand for a duration.
function checkPromql(expr, where, recorded) {
  const q = expr.replace(/\$\{?__(rate_interval|interval|range)\}?/g, '5m');
  const tree = parser.parse(q);
  const text = (n) => q.slice(n.from, n.to);
  const problems = [];
  const top = tree.topNode;
  if ([top, ...descendants(top)].some((n) => n.type.isError)) return [`${where}: PromQL syntax error in ${expr}`];
  const selectors = (node) =>
    [...descendants(node)].filter((n) => n.name === 'VectorSelector').map((n) => ({
      name: n.getChild('Identifier') ? text(n.getChild('Identifier')) : '',
      labels: [...descendants(n)].filter((c) => c.name === 'LabelName').map(text),
    }));
  for (const { name, labels } of selectors(top)) {
    if (name.includes(':') && !recorded.has(name)) problems.push(`${where}: ${name} is not recorded by a rule`);
    if (!name.startsWith('arbiter_')) continue;
    const family = familyOf(name);
    if (!family) problems.push(`${where}: ${name} is not exported by the gateway`);
    else if (!family.labels) problems.push(`${where}: ${name} has no samples and no registration in ${srcDir}: its labels are unknown`);
    else for (const l of labels) if (!family.labels.has(l) && !TARGET_LABELS.includes(l)) problems.push(`${where}: ${name} has no label ${l}`);
  }
  for (const agg of descendants(top)) {
    const modifier = agg.name === 'AggregateExpr' && agg.getChild('AggregateModifier');
    if (!modifier) continue;
    const grouping = [...descendants(modifier)].filter((n) => n.name === 'LabelName').map(text);
    for (const { name } of selectors(agg.getChild('FunctionCallBody'))) {
      const allowed = name.startsWith('arbiter_') && familyOf(name)?.labels;
      if (!allowed) continue;
      for (const l of grouping) {
        if (!allowed.has(l) && !TARGET_LABELS.includes(l)) problems.push(`${where}: ${text(modifier)} over ${name}, which has no label ${l}`);
      }
    }
  }
  return problems;
}

function checkDashboard(json) {
  const dash = JSON.parse(json);
  const problems = [];
  const vars = dash.templating?.list ?? [];
  if (dash.schemaVersion !== 39) problems.push(`dashboard: schemaVersion ${dash.schemaVersion}, not 39`);
  if (!vars.some((v) => v.name === 'datasource' && v.type === 'datasource' && v.query === 'prometheus')) {
    problems.push('dashboard: no ${datasource} variable of type datasource for prometheus');
  }
  for (const v of vars.filter((v) => v.type === 'query')) {
    const query = typeof v.query === 'string' ? v.query : v.query?.query;
    const m = query?.match(/^label_values\((.+),\s*(\w+)\)$/);
    if (!m) {
      problems.push(`dashboard variable ${v.name}: not label_values(selector, label): ${query}`);
      continue;
    }
    problems.push(...checkPromql(`count by (${m[2]}) (${m[1]})`, `dashboard variable ${v.name}`, new Set()));
  }
  const names = new Set(vars.map((v) => v.name));
  const walk = (value, where) => {
    if (Array.isArray(value)) return value.forEach((v) => walk(v, where));
    if (typeof value !== 'object' || value === null) return;
    const here = value.title ?? value.name ?? where;
    if (typeof value.expr === 'string') {
      problems.push(...checkPromql(value.expr, `dashboard "${here}"`, new Set()));
      for (const [, name] of value.expr.matchAll(/\$\{?(\w+)/g)) {
        if (!name.startsWith('__') && !names.has(name)) problems.push(`dashboard "${here}": variable $${name} is not defined`);
      }
    }
    if (value.type && value.type !== 'row' && value.gridPos) {
      if (value.datasource?.uid !== '${datasource}') problems.push(`dashboard "${here}": datasource is not \${datasource}`);
      if (!value.targets?.length) problems.push(`dashboard "${here}": no query`);
    }
    Object.values(value).forEach((v) => walk(v, here));
  };
  walk(dash.panels, 'panels');
  walk(dash.annotations, 'annotations');
  return problems;
}

// GitHub's anchor of a markdown heading.
const slug = (heading) => heading.trim().toLowerCase().replace(/[^\w\- ]/g, '').replace(/ /g, '-');
const docs = readFileSync(deploymentMd, 'utf8');
const anchors = new Set([...docs.matchAll(/^#+ (.*)$/gm)].map((m) => slug(m[1])));

function checkRules(text) {
  const doc = parseDocument(text, { uniqueKeys: true });
  if (doc.errors.length) return doc.errors.map((e) => `alerts.yaml: ${e.message}`);
  const rules = (doc.toJS().groups ?? []).flatMap((g) => g.rules ?? []);
  const recorded = new Set(rules.filter((r) => r.record).map((r) => r.record));
  const problems = [];
  for (const rule of rules) {
    const where = `rule ${rule.alert ?? rule.record}`;
    problems.push(...checkPromql(String(rule.expr ?? ''), where, recorded));
    if (!rule.alert) continue;
    if (!['critical', 'warning', 'info'].includes(rule.labels?.severity)) problems.push(`${where}: no severity label`);
    for (const key of ['summary', 'description', 'runbook_url']) {
      if (!rule.annotations?.[key]) problems.push(`${where}: no ${key} annotation`);
    }
    const runbook = String(rule.annotations?.runbook_url ?? '').match(/^docs\/deployment\.md#(.+)$/);
    if (!runbook || !anchors.has(runbook[1])) problems.push(`${where}: runbook_url is not a section of docs/deployment.md`);
    if (!docs.includes(rule.alert)) problems.push(`${where}: not described in docs/deployment.md`);
  }
  return problems;
}

const dashboard = readFileSync(join(monDir, 'grafana-dashboard.json'), 'utf8');
const alerts = readFileSync(join(monDir, 'alerts.yaml'), 'utf8');
const problems = [...checkDashboard(dashboard), ...checkRules(alerts)];
for (const p of problems) console.log(`FAIL ${p}`);
if (problems.length) process.exit(1);
console.log(`ok   ${families.size} families exported; every name and label in the dashboard and the rules is one of them`);

if (process.argv.includes('--self-test')) {
  const mutants = [
    ['a misspelled metric', () => checkDashboard(dashboard.replace('arbiter_pool_load{', 'arbiter_pool_loads{')), 'arbiter_pool_loads is not exported'],
    ['a wrong label in a selector', () => checkRules(alerts.replace('{stage="isolated"}', '{state="isolated"}')), 'has no label state'],
    ['a wrong label in by ()', () => checkRules(alerts.replace('sum by (model)', 'sum by (pool)')), 'which has no label pool'],
    ['a wrong label in label_values()', () => checkDashboard(dashboard.replace('arbiter_pool_load, pool)', 'arbiter_pool_load, model)')), 'which has no label model'],
  ];
  for (const [what, run, expected] of mutants) {
    const found = run();
    const reported = found.find((p) => p.includes(expected));
    if (!reported) {
      console.log(`FAIL self-test: ${what} was not reported (${found.join('; ') || 'no problem found'})`);
      process.exit(1);
    }
    console.log(`ok   self-test: ${what} is reported: ${reported}`);
  }
}
