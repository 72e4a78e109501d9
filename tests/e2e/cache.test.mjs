// The official `openai` SDK reads answers of the gateway's result cache
// (issue 44): a repeated temperature-0 chat is answered by the gateway,
// whole and streamed, and the SDK sees the same content, finish reason and
// usage as in the fresh answer; the engine sees the request once.

import { test, before, after } from 'node:test';
import assert from 'node:assert/strict';

import { DEFAULT_PIECES } from './fake_engine.mjs';
import { startStack, collect, withGatewayLog } from './harness.mjs';

let stack;
before(async () => {
  stack = await startStack();
});
after(async () => {
  await stack?.stop();
});
const T = { timeout: 15_000 };
const wrap = (fn) => withGatewayLog(() => stack, fn);

// The cache keeps an answer once its request has ended: poll for it.
async function untilHit(sdk, params) {
  const deadline = Date.now() + 10_000;
  for (;;) {
    const { data, response } = await sdk.chat.completions.create(params).withResponse();
    if (response.headers.get('x-arbiter-cache') === 'hit' || Date.now() > deadline) return { data, response };
    await new Promise((r) => setTimeout(r, 20));
  }
}

test('a cached answer reads as a fresh one, whole and streamed', T, wrap(async () => {
  const sdk = stack.client();
  const messages = [{ role: 'user', content: 'Cache me, please.' }];
  const n0 = stack.engine.completionRequests().length;
  const { data: fresh, response: first } = await sdk.chat.completions
    .create({ model: 'm1', messages, temperature: 0, max_tokens: 32 })
    .withResponse();
  assert.equal(first.headers.get('x-arbiter-cache'), 'miss');
  assert.equal(fresh.choices[0].message.content, DEFAULT_PIECES.join(''));

  const { data: whole, response } = await untilHit(sdk, { model: 'm1', messages, temperature: 0, max_tokens: 32 });
  assert.equal(response.headers.get('x-arbiter-cache'), 'hit');
  assert.equal(whole.object, 'chat.completion');
  assert.notEqual(whole.id, fresh.id);
  assert.equal(whole.choices[0].message.content, fresh.choices[0].message.content);
  assert.equal(whole.choices[0].finish_reason, fresh.choices[0].finish_reason);
  assert.deepEqual(whole.usage, fresh.usage);

  const { data: stream, response: streamed } = await sdk.chat.completions
    .create({ model: 'm1', messages, temperature: 0, max_tokens: 32, stream: true, stream_options: { include_usage: true } })
    .withResponse();
  assert.equal(streamed.headers.get('x-arbiter-cache'), 'hit');
  const { chunks } = await collect(stream);
  const text = chunks.map((c) => c.choices?.[0]?.delta?.content ?? '').join('');
  assert.equal(text, fresh.choices[0].message.content);
  assert.equal(chunks.find((c) => c.choices?.[0]?.finish_reason)?.choices[0].finish_reason, 'stop');
  assert.deepEqual(chunks.at(-1).usage, fresh.usage);
  assert.ok(chunks.every((c) => c.object === 'chat.completion.chunk'));

  // The engine generated it once.
  assert.equal(stack.engine.completionRequests().length - n0, 1);
}));
