// Error types as the official SDK sees them: the gateway's own errors
// (401, 404, 502) and an upstream 429 passed through, each mapped by the SDK
// to its error class; and an upstream crash mid-stream surfacing as an
// APIError rather than a hang or a bare socket error.

import { test, before, after } from 'node:test';
import assert from 'node:assert/strict';
import {
  APIError,
  APIConnectionError,
  AuthenticationError,
  BadRequestError,
  InternalServerError,
  NotFoundError,
  RateLimitError,
} from 'openai';

import { piecesFor } from './fake_engine.mjs';
import { startStack, closedPort, withGatewayLog } from './harness.mjs';

let stack;
before(async () => {
  stack = await startStack();
});
after(async () => {
  await stack?.stop();
});
const T = { timeout: 15_000 };
const wrap = (fn) => withGatewayLog(() => stack, fn);
const hi = [{ role: 'user', content: 'hi' }];

// The gateway's own errors carry the OpenAI error body.
function assertOpenAIErrorBody(e) {
  assert.ok(e.error && typeof e.error === 'object', `no OpenAI "error" object in the body (got ${JSON.stringify(e.error)})`);
  assert.equal(typeof e.error.message, 'string');
  assert.ok(e.error.message.length > 0);
  assert.equal(typeof e.error.type, 'string');
  assert.ok('param' in e.error, 'error.param is missing');
  assert.ok('code' in e.error, 'error.code is missing');
}

test('AuthenticationError for a bad API key (plain and streaming), nothing reaches the engine', T, wrap(async () => {
  const sdk = stack.client({ apiKey: 'sk-wrong' });
  const n0 = stack.engine.completionRequests().length;
  await assert.rejects(sdk.chat.completions.create({ model: 'm1', messages: hi }), (e) => {
    assert.ok(e instanceof AuthenticationError, `expected AuthenticationError, got ${e?.constructor?.name}: ${e}`);
    assert.equal(e.status, 401);
    assertOpenAIErrorBody(e);
    return true;
  });
  await assert.rejects(sdk.chat.completions.create({ model: 'm1', messages: hi, stream: true }), AuthenticationError);
  await assert.rejects(sdk.completions.create({ model: 'm1', prompt: 'x' }), AuthenticationError);
  assert.equal(stack.engine.completionRequests().length, n0, 'an unauthenticated request was forwarded to the engine');
  // The right key still works on the same gateway.
  const ok = await stack.client().chat.completions.create({ model: 'm1', messages: hi });
  assert.equal(ok.choices[0].finish_reason, 'stop');
}));

test('NotFoundError with code model_not_found for an unknown model', T, wrap(async () => {
  const sdk = stack.client();
  const n0 = stack.engine.completionRequests().length;
  await assert.rejects(sdk.chat.completions.create({ model: 'no-such-model', messages: hi }), (e) => {
    assert.ok(e instanceof NotFoundError, `expected NotFoundError, got ${e?.constructor?.name}: ${e}`);
    assert.equal(e.status, 404);
    assert.equal(e.code, 'model_not_found');
    assertOpenAIErrorBody(e);
    return true;
  });
  await assert.rejects(sdk.completions.create({ model: 'no-such-model', prompt: 'x', stream: true }), (e) => {
    assert.ok(e instanceof NotFoundError);
    assert.equal(e.code, 'model_not_found');
    return true;
  });
  assert.equal(stack.engine.completionRequests().length, n0);
}));

test('RateLimitError: an upstream 429 passes through to the SDK', T, wrap(async () => {
  const sdk = stack.client();
  const n0 = stack.engine.completionRequests().length;
  const upstreamError = {
    message: 'Rate limit reached for m1 on the fake engine',
    type: 'requests',
    param: null,
    code: 'rate_limit_exceeded',
  };
  stack.engine.enqueue({ status: 429, headers: { 'retry-after': '0' }, body: { error: upstreamError } });
  await assert.rejects(sdk.chat.completions.create({ model: 'm1', messages: hi }), (e) => {
    assert.ok(e instanceof RateLimitError, `expected RateLimitError, got ${e?.constructor?.name}: ${e}`);
    assert.equal(e.status, 429);
    assert.equal(e.code, 'rate_limit_exceeded');
    assert.deepEqual(e.error, upstreamError);
    return true;
  });
  assert.equal(stack.engine.completionRequests().length, n0 + 1, 'maxRetries is 0: exactly one request should reach the engine');
  // The engine is fine again afterwards.
  const ok = await sdk.chat.completions.create({ model: 'm1', messages: hi });
  assert.equal(ok.choices[0].finish_reason, 'stop');
}));

// An engine's error in another shape (an empty 404, a text/plain 400) reaches
// the SDK as an OpenAI error object, so it raises the class its status says
// with the engine's words as the message (issue 40, defect 9).
test('An engine error that is not an OpenAI object still raises the right SDK error', T, wrap(async () => {
  const sdk = stack.client();
  stack.engine.enqueue({ status: 404, raw: '' });
  await assert.rejects(sdk.chat.completions.create({ model: 'm1', messages: hi }), (e) => {
    assert.ok(e instanceof NotFoundError, `expected NotFoundError, got ${e?.constructor?.name}: ${e}`);
    assertOpenAIErrorBody(e);
    assert.match(e.error.message, /404/);
    return true;
  });
  stack.engine.enqueue({ status: 400, raw: 'prompt too long for this engine', contentType: 'text/plain' });
  await assert.rejects(sdk.chat.completions.create({ model: 'm1', messages: hi }), (e) => {
    assert.ok(e instanceof BadRequestError, `expected BadRequestError, got ${e?.constructor?.name}: ${e}`);
    assertOpenAIErrorBody(e);
    assert.equal(e.error.message, 'prompt too long for this engine');
    return true;
  });
}));

// On a gateway of its own, so that whatever happens here cannot spill into
// the other tests.
test('InternalServerError (an APIError) with status 502 when the backend is down', T, async (t) => {
  const downPort = await closedPort();
  const own = await startStack({
    extraModels: async () => [{ name: 'down', backends: [{ url: `http://127.0.0.1:${downPort}`, max_concurrency: 8 }] }],
  });
  t.after(() => own.stop());
  await withGatewayLog(() => own, async () => {
    const sdk = own.client();
    const check = (e) => {
      assert.ok(e instanceof InternalServerError, `expected InternalServerError, got ${e?.constructor?.name}: ${e}`);
      assert.ok(e instanceof APIError);
      assert.equal(e.status, 502);
      assertOpenAIErrorBody(e);
      return true;
    };
    await assert.rejects(sdk.chat.completions.create({ model: 'down', messages: hi }), check);
    await assert.rejects(sdk.chat.completions.create({ model: 'down', messages: hi, stream: true }), check);
    await assert.rejects(sdk.completions.create({ model: 'down', prompt: 'x' }), check);
    // The gateway is still serving after the failures.
    const ok = await sdk.chat.completions.create({ model: 'm1', messages: hi });
    assert.equal(ok.choices[0].finish_reason, 'stop');
  })(t);
});

test('upstream crash mid-stream: the SDK raises an APIError after the chunks so far', T, wrap(async () => {
  const sdk = stack.client();
  const stream = await sdk.chat.completions.create({
    model: 'm1',
    messages: [{ role: 'user', content: '#engine {"chunks":50,"delayMs":20,"crashAfter":3}' }],
    stream: true,
  });
  const pieces = [];
  let error;
  try {
    for await (const c of stream) {
      const d = c.choices?.[0]?.delta?.content;
      if (d) pieces.push(d);
    }
  } catch (e) {
    error = e;
  }
  assert.deepEqual(pieces, piecesFor(3));
  assert.ok(error !== undefined, 'the stream ended as if complete: the crash was hidden from the client');
  // The gateway ends the stream with a `data: {"error":...}` event, which the
  // SDK raises as an APIError (not a connection error, not a bare TypeError).
  assert.ok(error instanceof APIError && !(error instanceof APIConnectionError), `expected an APIError, got ${error?.constructor?.name}: ${error}`);
  assert.equal(typeof error.error?.message, 'string');
}));
