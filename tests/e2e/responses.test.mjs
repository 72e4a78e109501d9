// The Responses API through the official `openai` SDK: client.responses.create,
// whole and streamed, against a gateway whose model runs on a simulated
// engine inside it (type: sim), which serves /v1/responses as vLLM does. The
// SDK reads the answer's output_text and the stream's typed events; an
// engine kind that does not serve the route gets a 404 naming the model.
//
// Each test has a gateway of its own (stopped in `finally`) and its own timeout.

import { test } from 'node:test';
import assert from 'node:assert/strict';
import { NotFoundError } from 'openai';

import { gatewayConfig, startGateway, client } from './harness.mjs';

const T = { timeout: 30_000 };

async function withGateway(backend, fn) {
  const gw = await startGateway(gatewayConfig({ models: [{ name: 'm1', backends: [backend] }] }));
  try {
    await fn(client(gw.baseURL), gw);
  } catch (e) {
    throw new Error(`${e.message}\narbiter output (tail):\n${gw.logTail(3000)}`, { cause: e });
  } finally {
    await gw.stop();
  }
}

test('responses.create returns a response whose output_text the SDK reads', T, async () => {
  await withGateway({ type: 'sim', profile: 'tiny' }, async (openai) => {
    const r = await openai.responses.create({ model: 'm1', input: 'Say something.', max_output_tokens: 5 });
    assert.equal(r.object, 'response');
    assert.equal(r.model, 'm1');
    assert.ok(r.output_text.length > 0, JSON.stringify(r));
    assert.equal(r.usage.output_tokens, 5);
    assert.ok(r.usage.input_tokens > 0);
  });
});

test('a streamed response arrives as typed events ending in response.completed', T, async () => {
  await withGateway({ type: 'sim', profile: 'tiny' }, async (openai) => {
    const stream = await openai.responses.create({
      model: 'm1',
      input: [{ role: 'user', content: 'Say something.' }],
      max_output_tokens: 4,
      stream: true,
    });
    const types = [];
    let text = '';
    let completed = null;
    for await (const event of stream) {
      types.push(event.type);
      if (event.type === 'response.output_text.delta') text += event.delta;
      if (event.type === 'response.completed') completed = event.response;
    }
    assert.equal(types[0], 'response.created');
    assert.equal(types.at(-1), 'response.completed');
    assert.equal(types.filter((t) => t === 'response.output_text.delta').length, 4);
    assert.ok(completed, types.join(','));
    assert.equal(completed.output[0].content[0].text, text);
    assert.equal(completed.usage.output_tokens, 4);
  });
});

test('a model whose engines do not serve /v1/responses is a 404 naming it', T, async () => {
  await withGateway({ type: 'sim', profile: 'tiny', responses: false }, async (openai) => {
    await assert.rejects(openai.responses.create({ model: 'm1', input: 'hi' }), (e) => {
      assert.ok(e instanceof NotFoundError, String(e));
      assert.match(e.message, /'m1'/);
      return true;
    });
  });
});
