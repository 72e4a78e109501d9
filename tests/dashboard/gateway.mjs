// The gateway the dashboard test looks at: simulated engines (type: sim, in
// the gateway's process), two tenants of two teams with prices, and an admin
// token; both listeners on free loopback ports, read from the port files it
// writes. Plus what the test asks of it: traffic and admin reads.
import { spawn } from 'node:child_process';
import { existsSync, mkdtempSync, readFileSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { setTimeout as sleep } from 'node:timers/promises';

export const ADMIN_TOKEN = 'dashboard-test-token';

// alpha's quota lets 20 requests a minute through, so the traffic below
// gets some refused.
const CONFIG = `
listener: {address: 127.0.0.1, port: 0, threads: 2}
admin: {address: 127.0.0.1, port: 0, token_env: ARBITER_DASHBOARD_TOKEN}
auth: {enabled: true}
tenants:
  - {name: alpha, team: red, api_keys: [sk-alpha], quotas: [{requests_per_minute: 20}]}
  - {name: beta, team: blue, api_keys: [sk-beta]}
models:
  - name: m1
    backends:
      - {type: sim, profile: llama-8b-a100, max_concurrency: 4}
  - name: m2
    backends:
      - {type: sim, profile: llama-8b-a100, max_concurrency: 4}
      - {type: sim, profile: llama-8b-a100, max_concurrency: 4}
prices:
  - {model: m1, input_per_million: 1000, output_per_million: 2000}
  - {model: m2, input_per_million: 500, output_per_million: 1500, per_gpu_second: 0.01}
`;

export async function startGateway() {
  const dir = mkdtempSync(join(tmpdir(), 'arbiter-dashboard-'));
  writeFileSync(join(dir, 'arbiter.yaml'), CONFIG);
  const portFile = join(dir, 'port');
  const adminPortFile = join(dir, 'admin_port');
  const child = spawn(
    process.env.ARBITER_BINARY,
    ['--config', join(dir, 'arbiter.yaml'), '--port-file', portFile, '--admin-port-file', adminPortFile],
    { stdio: ['ignore', 'ignore', 'pipe'], env: { ...process.env, ARBITER_DASHBOARD_TOKEN: ADMIN_TOKEN } },
  );
  let stderr = '';
  child.stderr.on('data', (b) => (stderr = (stderr + b).slice(-20000)));
  const stop = () => {
    child.kill('SIGKILL');
    rmSync(dir, { recursive: true, force: true });
  };
  const port = (file) => (existsSync(file) ? Number.parseInt(readFileSync(file, 'utf8'), 10) : NaN);
  for (let i = 0; !(port(portFile) > 0 && port(adminPortFile) > 0); ++i) {
    if (child.exitCode !== null || i === 300) {
      stop();
      throw new Error(`the gateway did not start:\n${stderr}`);
    }
    await sleep(50);
  }
  return {
    api: `http://127.0.0.1:${port(portFile)}`,
    admin: `http://127.0.0.1:${port(adminPortFile)}`,
    log: () => stderr,
    stop,
  };
}

// One chat completion for the tenant of `key`; its status.
export async function chat(gw, key, model, { stream = false } = {}) {
  const res = await fetch(`${gw.api}/v1/chat/completions`, {
    method: 'POST',
    headers: { authorization: `Bearer ${key}`, 'content-type': 'application/json' },
    body: JSON.stringify({ model, stream, max_tokens: 16, messages: [{ role: 'user', content: 'Say something short.' }] }),
  });
  await res.text();
  return res.status;
}

// GET `path` on the admin listener with the token.
export async function adminGet(gw, path) {
  return fetch(`${gw.admin}${path}`, { headers: { authorization: `Bearer ${ADMIN_TOKEN}` } });
}
