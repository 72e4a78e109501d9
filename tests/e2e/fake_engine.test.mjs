// Self-check of the test fixture: the `openai` SDK talks straight to the fake
// engine (no gateway). If these fail, the gateway tests' verdicts mean
// nothing; if they pass and a gateway test fails, the gateway is at fault.

import { test, before, after } from 'node:test';
import assert from 'node:assert/strict';
import { APIUserAbortError, RateLimitError } from 'openai';

import { startFakeEngine, DEFAULT_PIECES, piecesFor } from './fake_engine.mjs';
import { client, collect } from './harness.mjs';

let engine;
let sdk;
before(async () => {
  engine = await startFakeEngine();
  sdk = client(`${engine.url}/v1`);
});
after(async () => {
  await engine?.close();
});

test('fake engine: non-streaming chat', { timeout: 5000 }, async () => {
  const r = await sdk.chat.completions.create({ model: 'x', messages: [{ role: 'user', content: 'say hi' }] });
  assert.equal(r.choices[0].message.content, DEFAULT_PIECES.join(''));
  assert.deepEqual(r.usage, { prompt_tokens: 2, completion_tokens: DEFAULT_PIECES.length, total_tokens: 2 + DEFAULT_PIECES.length });
});

test('fake engine: streaming chat with usage, and completions', { timeout: 5000 }, async () => {
  const s = await sdk.chat.completions.create({
    model: 'x',
    messages: [{ role: 'user', content: '#engine {"chunks":5,"delayMs":5}' }],
    stream: true,
    stream_options: { include_usage: true },
  });
  const { chunks } = await collect(s);
  const pieces = chunks.flatMap((c) => (c.choices[0]?.delta?.content ? [c.choices[0].delta.content] : []));
  assert.deepEqual(pieces, piecesFor(5));
  assert.equal(chunks.at(-1).usage.completion_tokens, 5);

  const c = await sdk.completions.create({ model: 'x', prompt: 'a b c', max_tokens: 4 });
  assert.equal(c.choices[0].text, DEFAULT_PIECES.join(''));
});

test('fake engine: scripted 429 reaches the SDK as RateLimitError', { timeout: 5000 }, async () => {
  engine.enqueue({
    status: 429,
    headers: { 'retry-after': '0' },
    body: { error: { message: 'slow down', type: 'requests', param: null, code: 'rate_limit_exceeded' } },
  });
  await assert.rejects(sdk.chat.completions.create({ model: 'x', messages: [{ role: 'user', content: 'hi' }] }), (e) => {
    assert.ok(e instanceof RateLimitError);
    assert.equal(e.status, 429);
    assert.equal(e.code, 'rate_limit_exceeded');
    return true;
  });
});

test('fake engine: sees an SDK abort mid-stream as an early close', { timeout: 5000 }, async () => {
  const ac = new AbortController();
  const n0 = engine.requests.length;
  const s = await sdk.chat.completions.create(
    { model: 'x', messages: [{ role: 'user', content: '#engine {"chunks":100,"delayMs":50}' }], stream: true },
    { signal: ac.signal },
  );
  let got = 0;
  let abortedAt;
  for await (const c of s) {
    if (c.choices[0]?.delta?.content) got++;
    if (got === 3) {
      abortedAt = Date.now();
      ac.abort();
    }
  }
  assert.ok(got < 100);
  const rec = engine.requests[n0];
  await engine.waitFor(() => rec.closedAt, 2000, 'close');
  assert.equal(rec.closedEarly, true);
  assert.ok(rec.closedAt - abortedAt < 2000);
});

test('fake engine: sees an SDK abort before the response header', { timeout: 5000 }, async () => {
  const ac = new AbortController();
  const n0 = engine.requests.length;
  const p = sdk.chat.completions.create(
    { model: 'x', messages: [{ role: 'user', content: '#engine {"headerDelayMs":10000}' }] },
    { signal: ac.signal },
  );
  await engine.waitFor(() => engine.requests[n0]?.body, 2000, 'the request');
  ac.abort();
  await assert.rejects(p, APIUserAbortError);
  const rec = engine.requests[n0];
  await engine.waitFor(() => rec.closedAt, 2000, 'close');
  assert.equal(rec.closedEarly, true);
});
