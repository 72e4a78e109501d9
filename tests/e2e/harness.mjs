// Shared helpers for the end-to-end tests: start the fake engine, write a
// gateway config, spawn `$ARBITER_BINARY --config FILE --port-file FILE`,
// wait for its port, build an `openai` client against it, and tear it all
// down. Everything listens on 127.0.0.1 only.

import { spawn } from 'node:child_process';
import fs from 'node:fs';
import os from 'node:os';
import path from 'node:path';
import { setTimeout as sleep } from 'node:timers/promises';
import OpenAI from 'openai';

import { startFakeEngine } from './fake_engine.mjs';

export const API_KEY = 'sk-alpha';

// run.sh --tls: the gateway listens with TLS 1.3 (certificate and key from
// this directory, made by scripts/make_test_certs.sh) and clients use
// https://, trusting its CA through NODE_EXTRA_CA_CERTS.
const TLS_DIR = process.env.ARBITER_E2E_TLS_DIR;

// ---- a tiny YAML emitter (block style; strings double-quoted, which YAML
// reads exactly as JSON does) -------------------------------------------------
function scalar(v) {
  if (typeof v === 'number' || typeof v === 'boolean') return String(v);
  if (v === null) return 'null';
  return JSON.stringify(String(v));
}

export function toYaml(v, indent = '') {
  if (Array.isArray(v)) {
    if (v.length === 0) return '[]';
    return v
      .map((item) => {
        if (item !== null && typeof item === 'object') {
          const inner = toYaml(item, indent + '  ');
          return `${indent}- ${inner.slice(indent.length + 2)}`;
        }
        return `${indent}- ${scalar(item)}`;
      })
      .join('\n');
  }
  if (v !== null && typeof v === 'object') {
    const keys = Object.keys(v);
    if (keys.length === 0) return `${indent}{}`;
    return keys
      .map((k) => {
        const x = v[k];
        if (x !== null && typeof x === 'object' && (Array.isArray(x) ? x.length > 0 : Object.keys(x).length > 0)) {
          return `${indent}${k}:\n${toYaml(x, indent + '  ')}`;
        }
        return `${indent}${k}: ${x !== null && typeof x === 'object' ? (Array.isArray(x) ? '[]' : '{}') : scalar(x)}`;
      })
      .join('\n');
  }
  return indent + scalar(v);
}

/**
 * A loopback port that nothing listens on: 1 (tcpmux). An ephemeral port
 * bound and closed again could be handed to another test's server running
 * in parallel before the request (CI saw a "down" backend answer); the
 * kernel never hands out ports below 1024 for port 0, and no test binds one.
 */
export async function closedPort() {
  return 1;
}

export function gatewayConfig({ models, extra = {} }) {
  return {
    listener: {
      address: '127.0.0.1',
      port: 0,
      threads: 2,
      ...(TLS_DIR ? { tls: { cert_file: path.join(TLS_DIR, 'server.pem'), key_file: path.join(TLS_DIR, 'server.key') } } : {}),
    },
    timeouts: { drain_ms: 2000 },
    auth: { enabled: true },
    // The fake engine serves no /metrics: no scrapes mixed into its records.
    engine_signals: { enabled: false },
    tenants: [{ name: 'alpha', api_keys: [API_KEY] }],
    models,
    ...extra,
  };
}

// Gateways still running when this test process goes away are killed with
// it: on a normal exit, an uncaught error, or SIGINT/SIGTERM/SIGHUP.
const live = new Map(); // child process -> its temp dir
process.on('exit', () => {
  for (const [p, dir] of live) {
    p.kill('SIGKILL');
    if (!process.env.ARBITER_E2E_KEEP) fs.rmSync(dir, { recursive: true, force: true });
  }
});
for (const sig of ['SIGINT', 'SIGTERM', 'SIGHUP']) {
  process.once(sig, () => {
    process.exit(128 + (os.constants.signals[sig] ?? 0));
  });
}

/**
 * Spawn the gateway with the given config object. Resolves once it has
 * written its bound port. `stop()` ends it (SIGTERM, then SIGKILL).
 */
export async function startGateway(config, { startTimeoutMs = 15_000 } = {}) {
  const bin = process.env.ARBITER_BINARY;
  if (!bin) throw new Error('ARBITER_BINARY is not set (run through tests/e2e/run.sh)');
  fs.accessSync(bin, fs.constants.X_OK);
  const dir = fs.mkdtempSync(path.join(os.tmpdir(), 'arbiter-e2e-'));
  const configFile = path.join(dir, 'arbiter.yaml');
  const portFile = path.join(dir, 'port');
  // The admin listener on a free port: gateways started side by side do not
  // race for its default one.
  fs.writeFileSync(configFile, toYaml({ admin: { port: 0 }, ...config }) + '\n');

  const proc = spawn(bin, ['--config', configFile, '--port-file', portFile], {
    stdio: ['ignore', 'pipe', 'pipe'],
  });
  let log = '';
  const keep = (b) => {
    log += b.toString('utf8');
    if (log.length > 200_000) log = log.slice(-100_000);
  };
  proc.stdout.on('data', keep);
  proc.stderr.on('data', keep);
  live.set(proc, dir);
  let exited = null;
  const exitP = new Promise((resolve) =>
    proc.on('exit', (code, signal) => {
      live.delete(proc);
      exited = { code, signal };
      resolve(exited);
    }),
  );
  const cleanup = () => {
    if (!process.env.ARBITER_E2E_KEEP) fs.rmSync(dir, { recursive: true, force: true });
  };

  const gw = {
    proc,
    dir,
    configFile,
    port: 0,
    baseURL: '',
    log: () => log,
    exited: () => exited, // null while running, else {code, signal}
    logTail: (n = 4000) => log.slice(-n),
    async stop() {
      if (!exited) {
        proc.kill('SIGTERM');
        const t = setTimeout(() => proc.kill('SIGKILL'), 5000);
        await exitP;
        clearTimeout(t);
      }
      cleanup();
      return exited;
    },
  };

  const deadline = Date.now() + startTimeoutMs;
  for (;;) {
    if (exited) {
      const text = fs.readFileSync(configFile, 'utf8');
      cleanup();
      throw new Error(`arbiter exited during start-up (${JSON.stringify(exited)})\nconfig:\n${text}\noutput:\n${gw.logTail()}`);
    }
    let text = '';
    try {
      text = fs.readFileSync(portFile, 'utf8').trim();
    } catch {}
    const port = Number.parseInt(text, 10);
    if (text && Number.isInteger(port) && port > 0 && port < 65536) {
      gw.port = port;
      break;
    }
    if (Date.now() > deadline) {
      await gw.stop();
      throw new Error(`arbiter wrote no port file within ${startTimeoutMs} ms\noutput:\n${gw.logTail()}`);
    }
    await sleep(20);
  }
  gw.baseURL = `${TLS_DIR ? 'https' : 'http'}://127.0.0.1:${gw.port}/v1`;
  return gw;
}

export function client(baseURL, opts = {}) {
  return new OpenAI({ apiKey: API_KEY, baseURL, maxRetries: 0, timeout: 10_000, ...opts });
}

/**
 * The usual set-up: a fake engine, and a gateway serving `m1` and `m2` from
 * it (plus any extra models from extraModels(engine)).
 */
export async function startStack({ extraModels = async () => [] } = {}) {
  const engine = await startFakeEngine();
  const models = [
    { name: 'm1', backends: [{ url: engine.url, max_concurrency: 8 }] },
    { name: 'm2', backends: [{ url: engine.url, max_concurrency: 8 }] },
    ...(await extraModels(engine)),
  ];
  return stackAround(engine, gatewayConfig({ models }));
}

/**
 * A gateway on `config` in front of the fake engine `engine` (already
 * started): the stack startStack returns; the engine is closed when the
 * gateway cannot start, and by stop().
 */
export async function stackAround(engine, config) {
  let gw;
  try {
    gw = await startGateway(config);
  } catch (e) {
    await engine.close();
    throw e;
  }
  return {
    engine,
    gw,
    client: (opts) => client(gw.baseURL, opts),
    async stop() {
      try {
        await gw.stop();
      } finally {
        await engine.close();
      }
    },
  };
}

/**
 * Wrap a test body so a failure also prints the gateway's recent output.
 * Usage: test('name', { timeout }, withGatewayLog(() => stack, async () => {...}))
 */
export function withGatewayLog(getStack, fn) {
  return async (t) => {
    try {
      await fn(t);
    } catch (e) {
      const s = getStack();
      if (s?.gw) {
        const dead = s.gw.exited();
        if (dead) t.diagnostic(`arbiter is no longer running: exited with ${JSON.stringify(dead)}`);
        t.diagnostic(`arbiter output (tail):\n${s.gw.logTail(3000)}`);
      }
      throw e;
    }
  };
}

/** Collect a stream from the SDK: the chunks and when each arrived. */
export async function collect(stream) {
  const chunks = [];
  const times = [];
  for await (const c of stream) {
    chunks.push(c);
    times.push(Date.now());
  }
  return { chunks, times };
}
