// Checks deploy/kubernetes: every document against the Kubernetes schemas
// (kubernetes-models, and the Prometheus Operator's for the ServiceMonitor),
// unknown fields included, then what a schema cannot see: the probes hit
// paths the gateway serves, the ConfigMap's config passes `arbiter --check`,
// ports, selectors, secrets and mounts agree, the grace period covers the
// preStop sleep and the drain.
//
//   node check_manifests.mjs <arbiter-binary> <deploy/kubernetes> [--self-test]
//
// --self-test also checks that each of a list of broken variants of the
// manifests fails, with the expected complaint (the check can fail).
import { spawn, spawnSync } from "node:child_process";
import { mkdtempSync, readdirSync, readFileSync, rmSync, writeFileSync, existsSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { setTimeout as sleep } from "node:timers/promises";
import YAML from "yaml";
import { Namespace } from "kubernetes-models/v1/Namespace";
import { ConfigMap } from "kubernetes-models/v1/ConfigMap";
import { Secret } from "kubernetes-models/v1/Secret";
import { Service } from "kubernetes-models/v1/Service";
import { Deployment } from "kubernetes-models/apps/v1/Deployment";
import { PodDisruptionBudget } from "kubernetes-models/policy/v1/PodDisruptionBudget";
import { ServiceMonitor } from "@kubernetes-models/prometheus-operator/monitoring.coreos.com/v1/ServiceMonitor";

const MODELS = new Map(
  [Namespace, ConfigMap, Secret, Service, Deployment, PodDisruptionBudget, ServiceMonitor].map((m) => [
    `${m.apiVersion}/${m.kind}`,
    m,
  ]),
);
const KUSTOMIZATION_KEYS = new Set(["apiVersion", "kind", "namespace", "labels", "resources"]);
const CONFIG_PATH = "/etc/arbiter/arbiter.yaml";

// Validates `doc` with the model's compiled schema, and finds the fields the
// schema does not know: the validator reads every property its schema names
// and enumerates the keys of maps (labels, data), so a key it never touched
// is one the API server would drop or refuse (a typo).
function schemaCheck(model, doc, where) {
  const read = new Map();
  const wrap = (value, path) => {
    if (value === null || typeof value !== "object") return value;
    const keys = new Set();
    read.set(path, keys);
    return new Proxy(value, {
      get(target, key, receiver) {
        const v = Reflect.get(target, key, receiver);
        if (typeof key !== "string") return v;
        keys.add(key);
        return Object.hasOwn(target, key) ? wrap(v, `${path}/${key}`) : v;
      },
      has(target, key) {
        keys.add(key);
        return Reflect.has(target, key);
      },
      ownKeys(target) {
        keys.add("*");
        return Reflect.ownKeys(target);
      },
    });
  };
  const errors = [];
  try {
    model.prototype.validate.call(wrap(doc, ""));
  } catch (e) {
    errors.push(`${where}: schema: ${e.message}`);
  }
  const walk = (value, path) => {
    if (value === null || typeof value !== "object") return;
    const keys = read.get(path);
    for (const k of Object.keys(value)) {
      if (!keys || (!keys.has("*") && !keys.has(k))) errors.push(`${where}: unknown field ${path}/${k}`);
      else walk(value[k], `${path}/${k}`);
    }
  };
  walk(doc, "");
  return errors;
}

function parseFiles(files) {
  const errors = [];
  const docs = [];
  const kust = files.get("kustomization.yaml");
  if (kust === undefined) return { errors: ["kustomization.yaml: missing"], docs };
  const k = YAML.parse(kust);
  for (const key of Object.keys(k)) if (!KUSTOMIZATION_KEYS.has(key)) errors.push(`kustomization.yaml: unexpected key ${key}`);
  const listed = new Set(k.resources ?? []);
  for (const name of files.keys()) {
    if (name !== "kustomization.yaml" && !listed.has(name)) errors.push(`${name}: not listed in kustomization.yaml`);
  }
  for (const name of listed) {
    if (!files.has(name)) {
      errors.push(`kustomization.yaml: lists ${name}, which does not exist`);
      continue;
    }
    YAML.parseAllDocuments(files.get(name), { uniqueKeys: true }).forEach((d, i) => {
      const where = `${name}#${i}`;
      if (d.errors.length) return errors.push(...d.errors.map((e) => `${where}: ${e.message}`));
      const doc = d.toJS();
      if (!doc) return;
      const model = MODELS.get(`${doc.apiVersion}/${doc.kind}`);
      if (!model) return errors.push(`${where}: no schema for ${doc.apiVersion} ${doc.kind}`);
      errors.push(...schemaCheck(model, doc, where));
      docs.push({ where, doc });
    });
  }
  return { errors, docs, namespace: k.namespace };
}

const byKind = (docs, kind) => docs.filter((d) => d.doc.kind === kind);
const matches = (selector, labels) =>
  Object.entries(selector ?? {}).every(([k, v]) => labels?.[k] === v) && Object.keys(selector ?? {}).length > 0;

// Rules every workload follows (the "restricted" Pod Security Standard and
// our own: resources set, probes on paths the gateway serves).
function checkWorkload({ where, doc }, errors) {
  const pod = doc.spec.template.spec;
  if (!matches(doc.spec.selector.matchLabels, doc.spec.template.metadata?.labels))
    errors.push(`${where}: selector does not match the pod template's labels`);
  if (pod.securityContext?.runAsNonRoot !== true) errors.push(`${where}: pod runAsNonRoot is not true`);
  if (pod.securityContext?.seccompProfile?.type !== "RuntimeDefault") errors.push(`${where}: seccomp is not RuntimeDefault`);
  if (pod.automountServiceAccountToken !== false) errors.push(`${where}: automountServiceAccountToken is not false`);
  for (const c of pod.containers) {
    const sc = c.securityContext ?? {};
    const at = `${where}: container ${c.name}`;
    if (sc.readOnlyRootFilesystem !== true) errors.push(`${at}: readOnlyRootFilesystem is not true`);
    if (sc.allowPrivilegeEscalation !== false) errors.push(`${at}: allowPrivilegeEscalation is not false`);
    if (JSON.stringify(sc.capabilities?.drop) !== '["ALL"]') errors.push(`${at}: capabilities not dropped (drop: [ALL])`);
    for (const r of ["cpu", "memory"]) {
      if (!c.resources?.requests?.[r]) errors.push(`${at}: no ${r} request`);
      if (!c.resources?.limits?.[r]) errors.push(`${at}: no ${r} limit`);
    }
  }
}

// Starts the gateway on the config (on free loopback ports, without the
// shared quota store, whose host only resolves in the cluster; every
// variable the container sets holds "test") and asks each probe path on the
// API port and each scrape on its port (`admin`: the admin listener, with
// the token when the ServiceMonitor sends one, and once without it, which
// must be refused); returns the statuses.
async function askGateway(binary, configText, envNames, probes, scrapes) {
  const dir = mkdtempSync(join(tmpdir(), "arbiter-deploy-"));
  const config = YAML.parse(configText);
  config.listener = { ...config.listener, address: "127.0.0.1", port: 0 };
  // The admin listener is on by default: a variant without the section still
  // gets a free port, so checks side by side do not race for 9090.
  config.admin = { ...(config.admin ?? {}), address: "127.0.0.1", port: 0 };
  delete config.quota_store;
  // The pod's store volume is the test's folder.
  if (config.store) config.store = { ...config.store, path: join(dir, "arbiter.db") };
  writeFileSync(join(dir, "arbiter.yaml"), YAML.stringify(config));
  const portFile = join(dir, "port");
  const adminPortFile = join(dir, "admin_port");
  const child = spawn(binary, ["--config", join(dir, "arbiter.yaml"), "--port-file", portFile,
                               "--admin-port-file", adminPortFile], {
    stdio: ["ignore", "ignore", "pipe"],
    env: { ...process.env, ...Object.fromEntries(envNames.map((n) => [n, "test"])) },
  });
  let stderr = "";
  child.stderr.on("data", (b) => (stderr += b));
  try {
    for (let i = 0; i < 200 && !existsSync(portFile); ++i) {
      if (child.exitCode !== null) throw new Error(`gateway exited: ${stderr}`);
      await sleep(50);
    }
    const ports = { http: readFileSync(portFile, "utf8").trim() };
    if (existsSync(adminPortFile)) ports.admin = readFileSync(adminPortFile, "utf8").trim();
    const statuses = {};
    for (const p of probes) statuses[`GET ${p}`] = (await fetch(`http://127.0.0.1:${ports.http}${p}`)).status;
    for (const { port, path, token } of scrapes) {
      const url = `http://127.0.0.1:${ports[port]}${path}`;
      if (ports[port] === undefined) {
        statuses[`GET ${path} on port ${port}`] = "no such listener";
        continue;
      }
      const headers = token ? { authorization: `Bearer test` } : {};
      statuses[`GET ${path} on port ${port}`] = (await fetch(url, { headers })).status;
      if (token) {
        const refused = (await fetch(url)).status;
        if (refused !== 401) statuses[`GET ${path} on port ${port} without the token (expected 401)`] = refused;
      }
    }
    return statuses;
  } finally {
    child.kill("SIGKILL");
    rmSync(dir, { recursive: true, force: true });
  }
}

async function check(files, binary) {
  const { errors, docs } = parseFiles(files);
  if (errors.length) return errors;

  const [dep, ...moreDeps] = byKind(docs, "Deployment").filter((d) => d.doc.metadata.name === "arbiter");
  if (!dep || moreDeps.length) return ["deployment 'arbiter': expected exactly one"];
  for (const w of byKind(docs, "Deployment")) checkWorkload(w, errors);
  const pod = dep.doc.spec.template.spec;
  const podLabels = dep.doc.spec.template.metadata.labels;
  const c = pod.containers.find((x) => x.name === "arbiter");
  if (!c) return [...errors, `${dep.where}: no container 'arbiter'`];
  const at = `${dep.where}: container arbiter`;

  // The config the container reads, and the gateway's verdict on it.
  const cms = byKind(docs, "ConfigMap");
  const args = [...(c.command ?? []), ...(c.args ?? [])];
  if (args[args.indexOf("--config") + 1] !== CONFIG_PATH) errors.push(`${at}: not started with --config ${CONFIG_PATH}`);
  const mount = c.volumeMounts?.find((m) => m.mountPath === CONFIG_PATH);
  const vol = pod.volumes?.find((v) => v.name === mount?.name);
  const cm = cms.find((x) => x.doc.metadata.name === vol?.configMap?.name);
  const configText = cm?.doc.data?.[mount?.subPath];
  if (configText === undefined) return [...errors, `${at}: ${CONFIG_PATH} is not mounted from a ConfigMap key`];
  const env = Object.fromEntries((c.env ?? []).map((e) => [e.name, "from-the-deployment"]));
  const dir = mkdtempSync(join(tmpdir(), "arbiter-deploy-"));
  writeFileSync(join(dir, "arbiter.yaml"), configText);
  // Only the container's own variables: a config naming an api_key_env the
  // Deployment does not set fails here as it would in the pod.
  const checked = spawnSync(binary, ["--config", join(dir, "arbiter.yaml"), "--check"], {
    env: { PATH: process.env.PATH, ...env },
    encoding: "utf8",
  });
  rmSync(dir, { recursive: true, force: true });
  if (checked.status !== 0) errors.push(`${cm.where}: arbiter --check failed: ${checked.stderr}${checked.stdout}`);
  const config = YAML.parse(configText);

  // Ports: the container's `http` port is the listener's; Services and the
  // ServiceMonitor name ports that exist.
  const listenerPort = config.listener?.port ?? 8080;
  const httpPort = c.ports?.find((p) => p.name === "http");
  if (httpPort?.containerPort !== listenerPort)
    errors.push(`${at}: port 'http' is ${httpPort?.containerPort}, the config's listener.port is ${listenerPort}`);
  if (config.admin?.port !== undefined && c.ports?.find((p) => p.name === "admin")?.containerPort !== config.admin.port)
    errors.push(`${at}: port 'admin' does not match the config's admin.port ${config.admin.port}`);
  const cpuLimit = Number(c.resources?.limits?.cpu);
  if (config.listener?.threads !== cpuLimit)
    errors.push(`${at}: listener.threads (${config.listener?.threads}) is not the CPU limit (${c.resources?.limits?.cpu})`);

  for (const svc of byKind(docs, "Service")) {
    const target = byKind(docs, "Deployment").find((d) => matches(svc.doc.spec.selector, d.doc.spec.template.metadata.labels));
    if (!target) {
      errors.push(`${svc.where}: selector matches no Deployment's pods`);
      continue;
    }
    const ports = target.doc.spec.template.spec.containers.flatMap((x) => x.ports ?? []);
    for (const p of svc.doc.spec.ports) {
      const ok = typeof p.targetPort === "string"
        ? ports.some((q) => q.name === p.targetPort)
        : ports.some((q) => q.containerPort === (p.targetPort ?? p.port));
      if (!ok) errors.push(`${svc.where}: port ${p.name} targets ${p.targetPort}, which no container exposes`);
    }
  }
  const apiSvc = byKind(docs, "Service").find((s) => matches(s.doc.spec.selector, podLabels));
  for (const sm of byKind(docs, "ServiceMonitor")) {
    if (!apiSvc || !matches(sm.doc.spec.selector.matchLabels, apiSvc.doc.metadata.labels))
      errors.push(`${sm.where}: selects no Service of the gateway`);
    for (const e of sm.doc.spec.endpoints) {
      if (!apiSvc?.doc.spec.ports.some((p) => p.name === e.port)) errors.push(`${sm.where}: port ${e.port} is not a port of the Service`);
    }
  }
  for (const pdb of byKind(docs, "PodDisruptionBudget")) {
    if (!matches(pdb.doc.spec.selector.matchLabels, podLabels)) errors.push(`${pdb.where}: selects no gateway pod`);
    if (pdb.doc.spec.maxUnavailable === undefined && pdb.doc.spec.minAvailable === undefined)
      errors.push(`${pdb.where}: neither maxUnavailable nor minAvailable`);
  }
  if (dep.doc.spec.replicas < 2) errors.push(`${dep.where}: fewer than 2 replicas: a disruption takes the gateway down`);

  // Shutdown: preStop sleep + drain_ms inside the grace period.
  const drainS = (config.timeouts?.drain_ms ?? 30000) / 1000;
  const preStop = c.lifecycle?.preStop;
  const preStopS = preStop?.sleep?.seconds ?? Number(preStop?.exec?.command?.at(-1) ?? NaN);
  const grace = pod.terminationGracePeriodSeconds ?? 30;
  if (!(preStopS > 0)) errors.push(`${at}: no preStop sleep (the pod would stop accepting before it leaves the endpoints)`);
  else if (!(grace > preStopS + drainS))
    errors.push(`${dep.where}: terminationGracePeriodSeconds ${grace} is not more than preStop ${preStopS} s + drain_ms ${drainS} s`);

  // Probes on the gateway's own paths.
  if (c.readinessProbe?.httpGet?.path !== "/readyz") errors.push(`${at}: readinessProbe is not GET /readyz`);
  if (c.livenessProbe?.httpGet?.path !== "/healthz") errors.push(`${at}: livenessProbe is not GET /healthz`);
  for (const probe of [c.readinessProbe, c.livenessProbe, c.startupProbe].filter(Boolean)) {
    const port = probe.httpGet?.port;
    if (port !== undefined && !c.ports?.some((p) => p.name === port || p.containerPort === port))
      errors.push(`${at}: a probe's port ${port} is not a container port`);
  }

  // Shared quotas: a Redis named by Service is one of ours, on its port;
  // replicas as many as the Deployment's.
  const redis = config.quota_store?.redis;
  if (redis) {
    const [host, port] = [redis.slice(0, redis.lastIndexOf(":")), Number(redis.slice(redis.lastIndexOf(":") + 1))];
    const svc = byKind(docs, "Service").find((s) => s.doc.metadata.name === host.split(".")[0]);
    if (!host.includes(".") && !svc?.doc.spec.ports.some((p) => p.port === port))
      errors.push(`${cm.where}: quota_store.redis ${redis} is no Service port here`);
    if ((config.quota_store.replicas ?? 1) !== dep.doc.spec.replicas)
      errors.push(`${cm.where}: quota_store.replicas ${config.quota_store.replicas} is not the Deployment's replicas ${dep.doc.spec.replicas}`);
  }

  // Secrets: every key the pod reads exists; the config's (commented) TLS
  // files are in the volume mounted where it says.
  const secrets = new Map(byKind(docs, "Secret").map((s) => [s.doc.metadata.name, { ...s.doc.data, ...s.doc.stringData }]));
  for (const e of c.env ?? []) {
    const ref = e.valueFrom?.secretKeyRef;
    if (ref && !(ref.key in (secrets.get(ref.name) ?? {}))) errors.push(`${at}: env ${e.name} reads ${ref.name}/${ref.key}, which does not exist`);
  }
  for (const v of pod.volumes ?? []) {
    if (!v.secret) continue;
    // Root owns the files: the (non-root) gateway reads them through the
    // pod's fsGroup, and no one else may.
    const mode = v.secret.defaultMode ?? 0o644;
    if (mode & 0o004) errors.push(`${dep.where}: volume ${v.name}: Secret files readable by everyone (defaultMode)`);
    else if (!(mode & 0o040) || pod.securityContext?.fsGroup === undefined)
      errors.push(`${dep.where}: volume ${v.name}: the gateway cannot read its files (needs a group-readable defaultMode and a pod fsGroup)`);
    for (const item of v.secret.items ?? []) {
      if (!(item.key in (secrets.get(v.secret.secretName) ?? {}))) errors.push(`${dep.where}: volume ${v.name} reads missing key ${item.key}`);
    }
  }
  for (const [, file] of configText.matchAll(/(?:cert|key)_file:\s*(\S+)/g)) {
    const m = c.volumeMounts?.find((x) => file.startsWith(`${x.mountPath}/`));
    const v = pod.volumes?.find((x) => x.name === m?.name);
    const name = file.slice((m?.mountPath.length ?? 0) + 1);
    if (!v?.secret?.items?.some((i) => i.path === name)) errors.push(`${cm.where}: ${file} is in no mounted Secret`);
  }

  // The probes' and the ServiceMonitor's paths answer on the gateway.
  const probes = [...new Set([c.readinessProbe?.httpGet?.path, c.livenessProbe?.httpGet?.path])].filter(Boolean);
  const scrapes = byKind(docs, "ServiceMonitor").flatMap((s) =>
    s.doc.spec.endpoints.map((e) => ({ port: e.port, path: e.path ?? "/metrics", token: e.authorization?.credentials?.key })));
  for (const s of scrapes) {
    if (s.token && !(s.token in (secrets.get("arbiter-secrets") ?? {})))
      errors.push(`servicemonitor: the scrape's token ${s.token} is not in the Secret`);
  }
  if (!errors.length) {
    const statuses = await askGateway(binary, configText, (c.env ?? []).map((e) => e.name), probes, scrapes);
    for (const [p, s] of Object.entries(statuses)) if (s !== 200) errors.push(`${at}: the gateway answers ${s} to ${p}`);
  }
  return errors;
}

// Broken variants: each must fail with the complaint named.
const MUTATIONS = [
  ["a typo in a field name", "deployment.yaml", "readinessProbe:", "readinesProbe:", "unknown field /spec/template/spec/containers/0/readinesProbe"],
  ["a typo in the ServiceMonitor", "servicemonitor.yaml", "interval: 15s", "intervall: 15s", "unknown field /spec/endpoints/0/intervall"],
  ["a port as a string", "deployment.yaml", "containerPort: 8080", 'containerPort: "8080"', "must be integer"],
  ["a container port that is not the listener's", "deployment.yaml", "containerPort: 8080", "containerPort: 8081", "the config's listener.port is 8080"],
  ["a grace period shorter than the drain", "deployment.yaml", "terminationGracePeriodSeconds: 75", "terminationGracePeriodSeconds: 60", "is not more than preStop"],
  ["a probe on a path the gateway does not serve", "deployment.yaml", "path: /healthz", "path: /health", "livenessProbe is not GET /healthz"],
  ["a scrape path the gateway does not serve", "servicemonitor.yaml", "path: /metrics", "path: /stats", "the gateway answers 404 to GET /stats on port admin"],
  ["a scrape on the API port, where the admin listener takes /metrics away", "servicemonitor.yaml", "port: admin", "port: http", "the gateway answers 404 to GET /metrics on port http"],
  ["a scrape without the admin token", "servicemonitor.yaml", "      authorization:\n        type: Bearer\n        credentials:\n          name: arbiter-secrets\n          key: admin-token\n", "", "the gateway answers 401 to GET /metrics on port admin"],
  ["an admin listener the pod does not expose", "deployment.yaml", "containerPort: 9090", "containerPort: 9091", "port 'admin' does not match the config's admin.port 9090"],
  ["a config the gateway refuses", "configmap.yaml", "max_tokens_cap: 128", "max_token_cap: 128", "arbiter --check failed"],
  ["an engine key the Deployment does not set", "deployment.yaml", "name: ENGINE_API_KEY", "name: ENGINE_KEY", "ENGINE_API_KEY is not set"],
  ["a writable root filesystem", "deployment.yaml", "readOnlyRootFilesystem: true", "readOnlyRootFilesystem: false", "readOnlyRootFilesystem is not true"],
  ["a Secret whose files only root can read", "deployment.yaml", "fsGroup: 65532", "supplementalGroups: [65532]", "the gateway cannot read its files"],
  ["Secret files readable by everyone", "deployment.yaml", "defaultMode: 0440", "defaultMode: 0444", "readable by everyone"],
  ["a Service targeting a missing port", "service.yaml", "targetPort: http", "targetPort: web", "which no container exposes"],
  ["a key repeated in a mapping", "poddisruptionbudget.yaml", "maxUnavailable: 1", "maxUnavailable: 1\n  maxUnavailable: 2", "Map keys must be unique"],
  ["a file left out of kustomization.yaml", "kustomization.yaml", "  - redis.yaml\n", "", "redis.yaml: not listed"],
];

const [binary, dir, flag] = process.argv.slice(2);
if (!binary || !dir) {
  console.error("usage: node check_manifests.mjs <arbiter-binary> <deploy/kubernetes> [--self-test]");
  process.exit(2);
}
const files = new Map(readdirSync(dir).filter((f) => f.endsWith(".yaml")).map((f) => [f, readFileSync(join(dir, f), "utf8")]));
let failed = 0;
let passed = 0;
const errors = await check(files, binary);
if (errors.length) {
  failed++;
  console.log(`FAIL deploy/kubernetes:\n  ${errors.join("\n  ")}`);
} else {
  passed++;
  console.log(`ok   deploy/kubernetes: ${files.size} files valid and consistent`);
}
if (flag === "--self-test") {
  for (const [what, file, from, to, expected] of MUTATIONS) {
    const text = files.get(file);
    const broken = new Map(files);
    broken.set(file, text.replace(from, to));
    const errs = text.includes(from) ? await check(broken, binary) : [`'${from}' not found in ${file}`];
    if (errs.some((e) => e.includes(expected))) {
      passed++;
      console.log(`ok   fails on ${what}`);
    } else {
      failed++;
      console.log(`FAIL does not fail as expected on ${what} (wanted "${expected}"):\n  ${errs.join("\n  ") || "no error"}`);
    }
  }
}
console.log(`${passed} passed, ${failed} failed`);
process.exit(failed ? 1 : 0);
