// The official `openai` SDK as a client of the gateway: chat (plain and
// streaming), legacy completions, the model list, and the class caps.

import { test, before, after } from 'node:test';
import assert from 'node:assert/strict';

import { piecesFor, DEFAULT_PIECES } from './fake_engine.mjs';
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

// The engine's record of the one request a test made (after n0 requests).
function onlyRequestSince(n0) {
  const reqs = stack.engine.completionRequests().slice(n0);
  assert.equal(reqs.length, 1, `the engine should have seen exactly one request, saw ${reqs.length}`);
  return reqs[0];
}

function contentPieces(chunks) {
  return chunks.flatMap((c) => {
    const d = c.choices?.[0]?.delta?.content;
    return typeof d === 'string' && d.length > 0 ? [d] : [];
  });
}

test('chat completion (non-streaming): content and usage come through unchanged', T, wrap(async () => {
  const sdk = stack.client();
  const n0 = stack.engine.completionRequests().length;
  const messages = [
    { role: 'system', content: 'You are terse.' },
    { role: 'user', content: 'Say hello to the gateway' },
  ];
  const r = await sdk.chat.completions.create({ model: 'm1', messages, max_tokens: 32 });
  const rec = onlyRequestSince(n0);

  // What reached the engine.
  assert.equal(rec.path, '/v1/chat/completions');
  assert.equal(rec.body.model, 'm1');
  assert.deepEqual(rec.body.messages, messages);
  assert.equal(rec.body.max_tokens, 32);

  // What came back to the client.
  assert.equal(r.object, 'chat.completion');
  assert.equal(r.id, rec.responseBody.id);
  assert.equal(r.model, 'm1');
  assert.equal(r.choices.length, 1);
  assert.equal(r.choices[0].message.role, 'assistant');
  assert.equal(r.choices[0].message.content, DEFAULT_PIECES.join(''));
  assert.equal(r.choices[0].finish_reason, 'stop');
  assert.deepEqual(r.usage, rec.usage);
  assert.deepEqual(r.usage, { prompt_tokens: 8, completion_tokens: DEFAULT_PIECES.length, total_tokens: 8 + DEFAULT_PIECES.length });
  // A non-streaming answer passes through unchanged.
  assert.deepEqual(JSON.parse(JSON.stringify(r)), rec.responseBody);
}));

test('streaming chat: every chunk arrives, in order, as it is produced', T, wrap(async () => {
  const sdk = stack.client();
  const n0 = stack.engine.completionRequests().length;
  const N = 12;
  const stream = await sdk.chat.completions.create({
    model: 'm1',
    messages: [{ role: 'user', content: `#engine {"chunks":${N},"delayMs":40}` }],
    stream: true,
  });
  const { chunks, times } = await collect(stream);
  const rec = onlyRequestSince(n0);

  assert.equal(rec.body.stream, true);
  assert.deepEqual(rec.sent, piecesFor(N));
  // Every content chunk, in order, none merged, none lost.
  assert.deepEqual(contentPieces(chunks), piecesFor(N));
  assert.equal(contentPieces(chunks).join(''), rec.sent.join(''));
  // role chunk + N content chunks + finish chunk
  assert.equal(chunks.length, N + 2);
  assert.equal(chunks[0].choices[0].delta.role, 'assistant');
  assert.equal(chunks.at(-1).choices[0].finish_reason, 'stop');
  for (const c of chunks) {
    assert.equal(c.object, 'chat.completion.chunk');
    assert.equal(c.id, chunks[0].id);
    assert.equal(c.model, 'm1');
  }
  // Relayed as produced, not buffered: the first content chunk reached the
  // client before the engine had even written its last one (~440 ms later).
  const firstContentAt = times[chunks.findIndex((c) => c.choices?.[0]?.delta?.content)];
  assert.ok(
    firstContentAt < rec.lastChunkAt,
    `first chunk reached the client ${firstContentAt - rec.firstChunkAt} ms after the engine sent it; ` +
      `the engine sent its last chunk ${rec.lastChunkAt - rec.firstChunkAt} ms after its first`,
  );
}));

test('streaming chat with stream_options.include_usage: the final usage chunk arrives', T, wrap(async () => {
  const sdk = stack.client();
  const n0 = stack.engine.completionRequests().length;
  const N = 6;
  const stream = await sdk.chat.completions.create({
    model: 'm1',
    messages: [{ role: 'user', content: `#engine {"chunks":${N},"delayMs":10}` }],
    stream: true,
    stream_options: { include_usage: true },
  });
  const { chunks } = await collect(stream);
  const rec = onlyRequestSince(n0);

  assert.deepEqual(rec.body.stream_options, { include_usage: true });
  assert.deepEqual(contentPieces(chunks), piecesFor(N));
  const last = chunks.at(-1);
  assert.deepEqual(last.choices, []);
  assert.deepEqual(last.usage, rec.usage);
  assert.equal(last.usage.completion_tokens, N);
  // Only the final chunk carries usage.
  for (const c of chunks.slice(0, -1)) assert.equal(c.usage ?? null, null);
}));

test('legacy completions endpoint: client.completions.create, plain and streaming', T, wrap(async () => {
  const sdk = stack.client();
  let n0 = stack.engine.completionRequests().length;
  const r = await sdk.completions.create({ model: 'm2', prompt: 'def fib(n):', max_tokens: 16 });
  let rec = onlyRequestSince(n0);
  assert.equal(rec.path, '/v1/completions');
  assert.equal(rec.body.prompt, 'def fib(n):');
  assert.equal(rec.body.model, 'm2');
  assert.equal(r.object, 'text_completion');
  assert.equal(r.model, 'm2');
  assert.equal(r.choices[0].text, DEFAULT_PIECES.join(''));
  assert.equal(r.choices[0].finish_reason, 'stop');
  assert.deepEqual(r.usage, rec.usage);

  n0 = stack.engine.completionRequests().length;
  const N = 5;
  const stream = await sdk.completions.create({
    model: 'm2',
    prompt: `#engine {"chunks":${N},"delayMs":10}`,
    max_tokens: 16,
    stream: true,
    stream_options: { include_usage: true },
  });
  const { chunks } = await collect(stream);
  rec = onlyRequestSince(n0);
  const texts = chunks.flatMap((c) => (c.choices?.[0]?.text ? [c.choices[0].text] : []));
  assert.deepEqual(texts, piecesFor(N));
  assert.equal(chunks.at(-2).choices[0].finish_reason, 'stop');
  assert.deepEqual(chunks.at(-1).usage, rec.usage);
}));

test('class caps: completions max_tokens above 128 is rewritten to 128; chat is not capped', T, wrap(async () => {
  const sdk = stack.client();
  let n0 = stack.engine.completionRequests().length;
  await sdk.completions.create({ model: 'm1', prompt: 'x', max_tokens: 1000 });
  assert.equal(onlyRequestSince(n0).body.max_tokens, 128);

  n0 = stack.engine.completionRequests().length;
  await sdk.completions.create({ model: 'm1', prompt: 'x', max_tokens: 100 });
  assert.equal(onlyRequestSince(n0).body.max_tokens, 100);

  n0 = stack.engine.completionRequests().length;
  await sdk.chat.completions.create({ model: 'm1', messages: [{ role: 'user', content: 'x' }], max_tokens: 1000 });
  assert.equal(onlyRequestSince(n0).body.max_tokens, 1000);
}));

test('models.list returns the configured models', T, wrap(async () => {
  const sdk = stack.client();
  const ids = [];
  for await (const m of sdk.models.list()) {
    assert.equal(m.object, 'model');
    ids.push(m.id);
  }
  // Served by the gateway from its config (the engine itself would list
  // only 'fake-model').
  assert.deepEqual(ids.sort(), ['m1', 'm2']);
}));
