// Cancellation through the SDK's AbortController: when the client goes away,
// the gateway must close its upstream connection at once so the engine stops
// working, and must not leak the backend slot.
//
// Note on the SDK (openai v6): aborting before the response header makes the
// request promise reject with APIUserAbortError; aborting while a stream is
// being read ends the `for await` loop quietly (the SDK swallows its own
// abort there, by design), so the mid-stream tests accept either a quiet end
// or APIUserAbortError, and nothing else.

import { test, before, after } from 'node:test';
import assert from 'node:assert/strict';
import { setTimeout as sleep } from 'node:timers/promises';
import { APIUserAbortError } from 'openai';

import { startStack, withGatewayLog } from './harness.mjs';

// The engine must see its connection closed within this long of the abort.
const CLOSE_BOUND_MS = 2000;

let stack;
before(async () => {
  stack = await startStack({
    // A pool of exactly one slot: a leaked in-flight count would block it.
    extraModels: async (engine) => [{ name: 'solo', backends: [{ url: engine.url, max_concurrency: 1 }] }],
  });
});
after(async () => {
  await stack?.stop();
});
const T = { timeout: 20_000 };
const wrap = (fn) => withGatewayLog(() => stack, fn);

async function newRequestRecord(n0) {
  return stack.engine.waitFor(() => stack.engine.completionRequests()[n0], 5000, 'the request to reach the engine');
}

// After an abort, the single slot of `solo` must come free again: a
// completion on it is answered. Polled with a generous deadline (the
// gateway accounts for the closed request a moment later, and a loaded
// machine can take seconds for a whole completion); a leaked slot never
// frees, so it still fails.
async function assertSlotFree() {
  const sdk = stack.client();
  const deadline = Date.now() + 15_000;
  let lastErr;
  while (Date.now() < deadline) {
    try {
      const r = await sdk.chat.completions.create(
        { model: 'solo', messages: [{ role: 'user', content: 'after abort' }] },
        { timeout: Math.max(100, deadline - Date.now()) },
      );
      assert.equal(typeof r.choices[0].message.content, 'string');
      return;
    } catch (e) {
      lastErr = e;
      await sleep(50);
    }
  }
  assert.fail(`the 'solo' backend slot did not come free after the abort: ${lastErr}`);
}

// Read the stream, abort after `after` content chunks; returns what was seen.
async function readThenAbort(stream, ac, after) {
  let got = 0;
  let abortedAt;
  let error;
  try {
    for await (const c of stream) {
      if (c.choices?.[0]?.delta?.content) got++;
      if (got === after && abortedAt === undefined) {
        abortedAt = Date.now();
        ac.abort();
      }
    }
  } catch (e) {
    error = e;
  }
  return { got, abortedAt, error };
}

test('abort mid-stream (steady stream): the engine sees its connection closed at once', T, wrap(async () => {
  const sdk = stack.client();
  const ac = new AbortController();
  const n0 = stack.engine.completionRequests().length;
  const N = 200; // 200 x 50 ms: 10 s if nobody stops it
  const stream = await sdk.chat.completions.create(
    { model: 'solo', messages: [{ role: 'user', content: `#engine {"chunks":${N},"delayMs":50}` }], stream: true },
    { signal: ac.signal },
  );
  const { got, abortedAt, error } = await readThenAbort(stream, ac, 3);
  assert.ok(abortedAt, 'the stream ended before 3 content chunks arrived');
  if (error !== undefined) assert.ok(error instanceof APIUserAbortError, `unexpected error from the SDK: ${error}`);
  assert.ok(got < N);

  const rec = await newRequestRecord(n0);
  await stack.engine.waitFor(() => rec.closedAt, CLOSE_BOUND_MS + 500, 'the upstream connection to close');
  assert.equal(rec.closedEarly, true, 'the engine finished the whole stream: the gateway never closed upstream');
  assert.ok(rec.closedAt - abortedAt <= CLOSE_BOUND_MS, `upstream closed ${rec.closedAt - abortedAt} ms after the abort`);
  assert.ok(rec.sent.length < N / 2, `the engine produced ${rec.sent.length} of ${N} chunks`);
  await assertSlotFree();
}));

test('abort mid-stream during a quiet gap: the gateway notices without a write failing', T, wrap(async () => {
  const sdk = stack.client();
  const ac = new AbortController();
  const n0 = stack.engine.completionRequests().length;
  // 3 chunks, then 10 s of silence (a long prefill or a slow token), then more.
  const stream = await sdk.chat.completions.create(
    {
      model: 'solo',
      messages: [{ role: 'user', content: '#engine {"chunks":10,"delayMs":20,"gapAfter":3,"gapMs":10000}' }],
      stream: true,
    },
    { signal: ac.signal },
  );
  const { abortedAt, error } = await readThenAbort(stream, ac, 3);
  assert.ok(abortedAt, 'the stream ended before 3 content chunks arrived');
  if (error !== undefined) assert.ok(error instanceof APIUserAbortError, `unexpected error from the SDK: ${error}`);

  const rec = await newRequestRecord(n0);
  await stack.engine.waitFor(() => rec.closedAt, CLOSE_BOUND_MS + 500, 'the upstream connection to close');
  assert.equal(rec.closedEarly, true);
  assert.ok(rec.closedAt - abortedAt <= CLOSE_BOUND_MS, `upstream closed ${rec.closedAt - abortedAt} ms after the abort`);
  assert.equal(rec.sent.length, 3);
  await assertSlotFree();
}));

test('abort before the response header: APIUserAbortError, and the upstream connection closes', T, wrap(async () => {
  const sdk = stack.client();
  const ac = new AbortController();
  const n0 = stack.engine.completionRequests().length;
  const p = sdk.chat.completions.create(
    { model: 'solo', messages: [{ role: 'user', content: '#engine {"headerDelayMs":10000}' }], stream: true },
    { signal: ac.signal },
  );
  p.catch(() => {}); // observed below
  const rec = await newRequestRecord(n0);
  await sleep(100); // the gateway is now waiting on the engine's header
  const abortedAt = Date.now();
  ac.abort();
  await assert.rejects(p, (e) => {
    assert.ok(e instanceof APIUserAbortError, `expected APIUserAbortError, got ${e?.constructor?.name}: ${e}`);
    return true;
  });
  await stack.engine.waitFor(() => rec.closedAt, CLOSE_BOUND_MS + 500, 'the upstream connection to close');
  assert.equal(rec.closedEarly, true);
  assert.ok(rec.closedAt - abortedAt <= CLOSE_BOUND_MS, `upstream closed ${rec.closedAt - abortedAt} ms after the abort`);
  await assertSlotFree();
}));
