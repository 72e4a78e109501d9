// The Batch API through the official `openai` SDK: a JSONL input file
// uploaded with client.files.create (purpose 'batch'), a batch made of it
// with client.batches.create, polled with client.batches.retrieve until it
// ends, and its output and error files read back with
// client.files.content(...).text(), in OpenAI's shapes. Each line runs as a
// request through the gateway to the fake engine, whose records show what
// reached it (one request per line, the line's own body) and what it
// answered, so every output line can be matched to its input line.
//
// Each test has a gateway and an engine of its own (stopped in `finally`),
// carries its own timeout, and waits for conditions by polling them with a
// deadline, never by sleeping a fixed time before asserting.

import { test } from 'node:test';
import assert from 'node:assert/strict';
import fs from 'node:fs';
import os from 'node:os';
import path from 'node:path';
import { setTimeout as sleep } from 'node:timers/promises';
import { toFile, AuthenticationError, BadRequestError, NotFoundError } from 'openai';

import { startFakeEngine, piecesFor } from './fake_engine.mjs';
import { API_KEY, gatewayConfig, startGateway, stackAround, client, withGatewayLog } from './harness.mjs';

const OTHER_KEY = 'sk-beta';
const CHAT = '/v1/chat/completions';
const T = { timeout: 30_000 };
// Under the test's timeout, so that a stuck batch reports its last state.
const POLL_DEADLINE_MS = 20_000;
const TERMINAL = ['completed', 'failed', 'expired', 'cancelled'];

// A fake engine and a gateway with two tenants (alpha: API_KEY, beta:
// OTHER_KEY) serving `m1` from it; `batches` goes into the gateway's config.
async function startBatchStack({ batches = {} } = {}) {
  const engine = await startFakeEngine();
  const config = gatewayConfig({
    models: [{ name: 'm1', backends: [{ url: engine.url, max_concurrency: 8 }] }],
    extra: {
      tenants: [
        { name: 'alpha', api_keys: [API_KEY] },
        { name: 'beta', api_keys: [OTHER_KEY] },
      ],
      batches: { enabled: true, ...batches },
    },
  });
  return stackAround(engine, config);
}

// A test with a stack of its own, torn down whatever happens; a failure
// also prints the gateway's recent output.
function batchTest(name, opts, fn) {
  test(name, T, async (t) => {
    const stack = await startBatchStack(opts);
    try {
      await withGatewayLog(() => stack, () => fn(stack))(t);
    } finally {
      await stack.stop();
    }
  });
}

// One input line: a chat request whose prompt is a fake-engine directive
// that also names the line (the engine ignores keys it does not know), so
// the engine's record of a request says which line it came from.
function chatLine(customId, { model = 'm1', chunks, headerDelayMs, maxTokens } = {}) {
  const directive = { line: customId };
  if (chunks !== undefined) directive.chunks = chunks;
  if (headerDelayMs !== undefined) directive.headerDelayMs = headerDelayMs;
  const body = { model, messages: [{ role: 'user', content: `#engine ${JSON.stringify(directive)}` }] };
  if (maxTokens !== undefined) body.max_tokens = maxTokens;
  return { custom_id: customId, method: 'POST', url: CHAT, body };
}

// The line an engine request came from (the `line` of its directive).
function lineOf(rec) {
  const text = rec.body?.messages?.at(-1)?.content ?? '';
  return text.startsWith('#engine ') ? JSON.parse(text.slice('#engine '.length)).line : undefined;
}

const jsonl = (lines) => lines.map((l) => (typeof l === 'string' ? l : JSON.stringify(l))).join('\n') + '\n';

async function upload(sdk, lines, name = 'input.jsonl') {
  return sdk.files.create({ file: await toFile(Buffer.from(jsonl(lines)), name), purpose: 'batch' });
}

async function createBatch(sdk, lines, extra = {}) {
  const file = await upload(sdk, lines);
  const batch = await sdk.batches.create({ input_file_id: file.id, endpoint: CHAT, completion_window: '24h', ...extra });
  return { file, batch };
}

// Polls the batch until done(batch); returns it and every status seen, in
// order (the one before the first poll included when given).
async function pollBatch(sdk, id, done, { seen = [], timeoutMs = POLL_DEADLINE_MS } = {}) {
  const deadline = Date.now() + timeoutMs;
  for (;;) {
    const b = await sdk.batches.retrieve(id);
    if (seen.at(-1) !== b.status) seen.push(b.status);
    if (done(b)) return { batch: b, seen };
    if (Date.now() > deadline) {
      assert.fail(`batch ${id} did not reach the awaited state in ${timeoutMs} ms; statuses seen: ${seen.join(' -> ')}; ` +
        `last: ${JSON.stringify(b)}`);
    }
    await sleep(20);
  }
}

const untilEnded = (sdk, id, opts) => pollBatch(sdk, id, (b) => TERMINAL.includes(b.status), opts);

// Every status seen follows the order given (a status may be missed
// between two polls, none may come back or come out of order).
function assertInOrder(seen, order) {
  let at = -1;
  for (const s of seen) {
    const i = order.indexOf(s);
    assert.ok(i > at, `statuses seen ${seen.join(' -> ')} do not follow ${order.join(' -> ')}`);
    at = i;
  }
}

async function readJsonl(sdk, fileId) {
  const text = await (await sdk.files.content(fileId)).text();
  assert.ok(text.endsWith('\n'), 'a JSONL file ends with a newline');
  return text.split('\n').filter((l) => l.length > 0).map((l) => JSON.parse(l));
}

async function rejectsWith(promise, ErrorClass, status, check = () => {}) {
  await assert.rejects(promise, (e) => {
    assert.ok(e instanceof ErrorClass, `expected ${ErrorClass.name}, got ${e?.constructor?.name}: ${e}`);
    assert.equal(e.status, status);
    check(e);
    return true;
  });
}

async function listAll(page) {
  const out = [];
  for await (const x of page) out.push(x);
  return out;
}

batchTest('a whole batch: every line answered once, by its own request, in OpenAI shapes', {}, async (stack) => {
  const sdk = stack.client();
  const N = 12;
  const lines = Array.from({ length: N }, (_, i) => chatLine(`req-${i}`, { chunks: i + 1, maxTokens: 16 + i }));
  const byId = new Map(lines.map((l, i) => [l.custom_id, { line: l, chunks: i + 1 }]));

  const file = await upload(sdk, lines, 'twelve.jsonl');
  assert.equal(file.object, 'file');
  assert.equal(file.purpose, 'batch');
  assert.equal(file.filename, 'twelve.jsonl');
  assert.equal(file.bytes, Buffer.byteLength(jsonl(lines)));
  assert.match(file.id, /^file-/);
  // batches.dir defaults to arbiter-batches, next to the config file.
  assert.ok(fs.existsSync(path.join(stack.gw.dir, 'arbiter-batches')), 'no arbiter-batches folder next to the config file');
  // The upload is kept whole.
  assert.equal(await (await sdk.files.content(file.id)).text(), jsonl(lines));
  assert.equal((await sdk.files.retrieve(file.id)).id, file.id);
  assert.ok((await listAll(sdk.files.list({ purpose: 'batch' }))).some((f) => f.id === file.id));

  const created = await sdk.batches.create({
    input_file_id: file.id,
    endpoint: CHAT,
    completion_window: '24h',
    metadata: { job: 'twelve' },
  });
  assert.equal(created.object, 'batch');
  assert.match(created.id, /^batch_/);
  assert.equal(created.endpoint, CHAT);
  assert.equal(created.input_file_id, file.id);
  assert.equal(created.completion_window, '24h');
  assert.deepEqual(created.metadata, { job: 'twelve' });
  assert.equal(created.request_counts.total, N);
  assert.ok(['validating', 'in_progress', 'finalizing', 'completed'].includes(created.status), created.status);
  assert.ok(created.expires_at - created.created_at === 24 * 3600, 'expires_at is the completion window after created_at');

  const { batch: done, seen } = await untilEnded(sdk, created.id, { seen: [created.status] });
  assertInOrder(seen, ['validating', 'in_progress', 'finalizing', 'completed']);
  assert.equal(done.status, 'completed', `the batch ended ${done.status}: ${JSON.stringify(done)}`);
  assert.deepEqual(done.request_counts, { total: N, completed: N, failed: 0 });
  assert.equal(done.errors, null);
  assert.equal(done.error_file_id, null, 'no line failed: there is no error file');
  assert.equal(typeof done.output_file_id, 'string');
  assert.equal(typeof done.completed_at, 'number');
  assert.equal(typeof done.finalizing_at, 'number');
  assert.ok(done.completed_at >= done.in_progress_at);

  // The output file: a file of its own, purpose batch_output.
  const outInfo = await sdk.files.retrieve(done.output_file_id);
  assert.equal(outInfo.purpose, 'batch_output');
  const outText = await (await sdk.files.content(done.output_file_id)).text();
  assert.equal(outInfo.bytes, Buffer.byteLength(outText));
  const out = await readJsonl(sdk, done.output_file_id);
  assert.equal(out.length, N);

  // The engine saw exactly one request per line.
  const recs = stack.engine.completionRequests();
  assert.equal(recs.length, N, `the engine saw ${recs.length} requests for ${N} lines`);
  assert.deepEqual(recs.map(lineOf).sort(), [...byId.keys()].sort());

  // Every custom_id exactly once, each answered 200 by the request of its line.
  assert.deepEqual(out.map((o) => o.custom_id).sort(), [...byId.keys()].sort());
  assert.equal(new Set(out.map((o) => o.id)).size, N, 'result ids are unique');
  assert.equal(new Set(out.map((o) => o.response.request_id)).size, N, 'request ids are unique');
  for (const o of out) {
    const { line, chunks } = byId.get(o.custom_id);
    assert.match(o.id, /^batch_req_/);
    assert.equal(o.error, null);
    assert.equal(o.response.status_code, 200, `${o.custom_id}: ${JSON.stringify(o.response)}`);
    assert.equal(typeof o.response.request_id, 'string');
    assert.ok(o.response.request_id.length > 0);
    const body = o.response.body;
    assert.equal(body.object, 'chat.completion');
    assert.equal(body.model, 'm1');
    assert.equal(body.choices[0].message.content, piecesFor(chunks).join(''), `${o.custom_id} got another line's answer`);
    assert.equal(body.choices[0].finish_reason, 'stop');
    // The engine's record of the request that produced this answer is the
    // line's own request, and the answer is the engine's, unchanged.
    const rec = recs.find((r) => r.responseBody?.id === body.id);
    assert.ok(rec, `${o.custom_id}: no engine request answered ${body.id}`);
    assert.equal(lineOf(rec), o.custom_id);
    assert.equal(rec.body.model, 'm1');
    assert.deepEqual(rec.body.messages, line.body.messages);
    assert.equal(rec.body.max_tokens, line.body.max_tokens);
    assert.deepEqual(body, rec.responseBody);
    assert.equal(rec.headers['x-request-id'], o.response.request_id);
  }

  // The list shows it; an ended batch cannot be cancelled.
  const listed = await listAll(sdk.batches.list({ limit: 10 }));
  const mine = listed.find((b) => b.id === created.id);
  assert.ok(mine, 'batches.list does not show the batch');
  assert.equal(mine.status, 'completed');
  await rejectsWith(sdk.batches.cancel(created.id), BadRequestError, 400);
  assert.equal((await sdk.batches.retrieve(created.id)).status, 'completed');

  // Deleting the files: gone from retrieve and content, the batch's record stays.
  for (const id of [file.id, done.output_file_id]) {
    const del = await sdk.files.delete(id);
    assert.deepEqual(del, { id, object: 'file', deleted: true });
    await rejectsWith(sdk.files.retrieve(id), NotFoundError, 404);
    await rejectsWith(sdk.files.content(id), NotFoundError, 404);
    await rejectsWith(sdk.files.delete(id), NotFoundError, 404);
  }
  assert.equal((await sdk.batches.retrieve(created.id)).status, 'completed');
});

batchTest('a bad input file is refused at upload with a 400 naming each bad line', {}, async (stack) => {
  const sdk = stack.client();
  const before = (await listAll(sdk.files.list())).length;
  const good = chatLine('first');
  const noId = chatLine('x');
  delete noId.custom_id;
  const lines = [
    good, // line 1: fine
    '{"custom_id": "second", "method": "POST", not json', // line 2
    noId, // line 3: no custom_id
    chatLine('fourth'), // line 4: fine
    chatLine('first'), // line 5: the custom_id of line 1 again
  ];
  await rejectsWith(upload(sdk, lines), BadRequestError, 400, (e) => {
    const msg = e.error?.message ?? e.message;
    assert.match(msg, /\bline 2\b/, msg);
    assert.match(msg, /\bline 3\b/, msg);
    assert.match(msg, /\bline 5\b/, msg);
    assert.doesNotMatch(msg, /\bline [14]\b/, `a good line is blamed: ${msg}`);
    assert.match(msg, /custom_id/, msg);
  });
  assert.equal((await listAll(sdk.files.list())).length, before, 'a refused upload was kept');

  // A file that is not for the batch endpoint named, and windows out of range, are refused at create.
  const file = await upload(sdk, [chatLine('a'), chatLine('b')]);
  await rejectsWith(
    sdk.batches.create({ input_file_id: file.id, endpoint: '/v1/completions', completion_window: '24h' }),
    BadRequestError,
    400,
  );
  for (const window of ['0h', '24', '1d', '100000h']) {
    await rejectsWith(
      sdk.batches.create({ input_file_id: file.id, endpoint: CHAT, completion_window: window }),
      BadRequestError,
      400,
    );
  }
  await rejectsWith(
    sdk.batches.create({ input_file_id: 'file-does-not-exist', endpoint: CHAT, completion_window: '24h' }),
    NotFoundError,
    404,
  );
  // No batch was made, nothing reached the engine.
  assert.deepEqual(await listAll(sdk.batches.list()), []);
  assert.equal(stack.engine.completionRequests().length, 0);
});

batchTest('a line for an unknown model ends in the error file with its 404, counted as failed', {}, async (stack) => {
  const sdk = stack.client();
  const lines = [chatLine('ok-1', { chunks: 2 }), chatLine('ghost', { model: 'no-such-model' }), chatLine('ok-2', { chunks: 3 })];
  const { batch } = await createBatch(sdk, lines);
  const { batch: done } = await untilEnded(sdk, batch.id);
  assert.equal(done.status, 'completed', JSON.stringify(done));
  assert.deepEqual(done.request_counts, { total: 3, completed: 2, failed: 1 });
  assert.equal(typeof done.output_file_id, 'string');
  assert.equal(typeof done.error_file_id, 'string');
  assert.equal((await sdk.files.retrieve(done.error_file_id)).purpose, 'batch_output');

  const errors = await readJsonl(sdk, done.error_file_id);
  assert.equal(errors.length, 1, JSON.stringify(errors));
  const [bad] = errors;
  assert.equal(bad.custom_id, 'ghost');
  assert.match(bad.id, /^batch_req_/);
  assert.equal(bad.response.status_code, 404);
  assert.equal(bad.response.body.error.code, 'model_not_found');
  assert.match(bad.response.body.error.message, /no-such-model/);

  const out = await readJsonl(sdk, done.output_file_id);
  assert.deepEqual(out.map((o) => o.custom_id).sort(), ['ok-1', 'ok-2']);
  for (const o of out) {
    assert.equal(o.response.status_code, 200);
    assert.equal(o.response.body.choices[0].message.content, piecesFor(o.custom_id === 'ok-1' ? 2 : 3).join(''));
  }
  // The unknown model never reached the engine.
  assert.deepEqual(stack.engine.completionRequests().map(lineOf).sort(), ['ok-1', 'ok-2']);
});

batchTest(
  'cancel a batch in progress: cancelling, then cancelled, the engine sees its running requests aborted',
  { batches: { max_in_flight: 2 } },
  async (stack) => {
    const sdk = stack.client();
    const LIVE = 2; // batches.max_in_flight
    // Two quick lines, then slow ones whose answers are held 60 s: the
    // quick ones end, two slow ones are running when the cancel comes, the
    // rest never start.
    const lines = [
      chatLine('fast-0', { chunks: 1 }),
      chatLine('fast-1', { chunks: 2 }),
      ...Array.from({ length: 4 }, (_, i) => chatLine(`slow-${i}`, { headerDelayMs: 60_000 })),
    ];
    const { batch } = await createBatch(sdk, lines);

    await stack.engine.waitFor(() => stack.engine.completionRequests().length >= 2 + LIVE, 10_000, 'two slow lines to reach the engine');
    const running = stack.engine.completionRequests().filter((r) => lineOf(r).startsWith('slow-'));
    assert.deepEqual(running.map(lineOf).sort(), ['slow-0', 'slow-1'], 'more lines ran at once than batches.max_in_flight');
    assert.ok(running.every((r) => r.closedAt === undefined));
    const before = await sdk.batches.retrieve(batch.id);
    assert.equal(before.status, 'in_progress');
    assert.deepEqual(before.request_counts, { total: lines.length, completed: 2, failed: 0 });

    const cancelAt = Date.now();
    const cancelling = await sdk.batches.cancel(batch.id);
    assert.equal(cancelling.id, batch.id);
    assert.equal(cancelling.status, 'cancelling');
    assert.equal(typeof cancelling.cancelling_at, 'number');
    assert.equal(cancelling.cancelled_at, null);

    const { batch: done, seen } = await untilEnded(sdk, batch.id, { seen: ['cancelling'] });
    assertInOrder(seen, ['cancelling', 'cancelled']);
    assert.equal(done.status, 'cancelled', JSON.stringify(done));
    assert.equal(typeof done.cancelled_at, 'number');
    assert.equal(done.cancelling_at, cancelling.cancelling_at);
    // The lines answered before the cancel are kept; the stopped ones are neither completed nor failed.
    assert.deepEqual(done.request_counts, { total: lines.length, completed: 2, failed: 0 });
    assert.equal(done.error_file_id, null);
    const out = await readJsonl(sdk, done.output_file_id);
    assert.deepEqual(out.map((o) => o.custom_id).sort(), ['fast-0', 'fast-1']);
    assert.ok(out.every((o) => o.response.status_code === 200));

    // The engine's running requests were aborted: their connections closed
    // long before the 60 s answers, and no waiting line was started.
    for (const rec of running) {
      await stack.engine.waitFor(() => rec.closedAt, 5_000, `the request of ${lineOf(rec)} to be closed`);
      assert.equal(rec.closedEarly, true, `${lineOf(rec)} was answered, not aborted`);
      assert.ok(rec.closedAt - cancelAt <= 2_000, `${lineOf(rec)} closed ${rec.closedAt - cancelAt} ms after the cancel`);
      assert.equal(rec.finishedAt, undefined);
    }
    assert.deepEqual(stack.engine.completionRequests().map(lineOf).sort(), ['fast-0', 'fast-1', 'slow-0', 'slow-1'],
      'a line was started after the cancel');

    // Cancelling again answers the cancelled batch; the list agrees.
    assert.equal((await sdk.batches.cancel(batch.id)).status, 'cancelled');
    const listed = (await listAll(sdk.batches.list())).find((b) => b.id === batch.id);
    assert.equal(listed?.status, 'cancelled');
  },
);

batchTest("another tenant can neither see nor touch a tenant's batch and files (404)", {}, async (stack) => {
  const alpha = stack.client();
  const beta = stack.client({ apiKey: OTHER_KEY });
  const { file, batch } = await createBatch(alpha, [chatLine('mine-1'), chatLine('mine-2')]);
  const { batch: done } = await untilEnded(alpha, batch.id);
  assert.equal(done.status, 'completed', JSON.stringify(done));
  const outId = done.output_file_id;
  assert.equal(typeof outId, 'string');

  // Beta: every route answers 404 for alpha's ids, as for ids that do not exist.
  await rejectsWith(beta.batches.retrieve(batch.id), NotFoundError, 404);
  await rejectsWith(beta.batches.cancel(batch.id), NotFoundError, 404);
  for (const id of [file.id, outId]) {
    await rejectsWith(beta.files.retrieve(id), NotFoundError, 404);
    await rejectsWith(beta.files.content(id), NotFoundError, 404);
    await rejectsWith(beta.files.delete(id), NotFoundError, 404);
  }
  await rejectsWith(
    beta.batches.create({ input_file_id: file.id, endpoint: CHAT, completion_window: '24h' }),
    NotFoundError,
    404,
  );
  assert.deepEqual(await listAll(beta.batches.list()), []);
  assert.deepEqual(await listAll(beta.files.list()), []);

  // Beta's own file is beta's alone.
  const betaFile = await upload(beta, [chatLine('theirs')]);
  assert.deepEqual((await listAll(beta.files.list())).map((f) => f.id), [betaFile.id]);
  await rejectsWith(alpha.files.retrieve(betaFile.id), NotFoundError, 404);
  assert.ok(!(await listAll(alpha.files.list())).some((f) => f.id === betaFile.id));

  // Nothing of alpha's was touched by beta's tries.
  assert.equal((await alpha.batches.retrieve(batch.id)).status, 'completed');
  assert.equal((await alpha.files.retrieve(file.id)).id, file.id);
  assert.equal((await readJsonl(alpha, outId)).length, 2);
  // Without a valid key: 401.
  await rejectsWith(stack.client({ apiKey: 'sk-wrong' }).batches.retrieve(batch.id), AuthenticationError, 401);
  await rejectsWith(stack.client({ apiKey: 'sk-wrong' }).files.list().then(() => {}), AuthenticationError, 401);
});

batchTest('batches.list pages through every batch once, files.list shows every file', {}, async (stack) => {
  const sdk = stack.client();
  const ids = [];
  const fileIds = [];
  for (let i = 0; i < 3; i++) {
    const { file, batch } = await createBatch(sdk, [chatLine(`page-${i}`)]);
    ids.push(batch.id);
    fileIds.push(file.id);
  }
  // limit 1: the SDK follows has_more and last_id (`after`) page by page.
  const paged = await listAll(sdk.batches.list({ limit: 1 }));
  assert.deepEqual(paged.map((b) => b.id).sort(), [...ids].sort(), 'a page was repeated or skipped');
  const first = await sdk.batches.list({ limit: 2 });
  assert.equal(first.data.length, 2);
  assert.equal(first.has_more, true);
  // Every one ends; the input files are all listed.
  for (const id of ids) assert.equal((await untilEnded(sdk, id)).batch.status, 'completed');
  const files = (await listAll(sdk.files.list({ purpose: 'batch' }))).map((f) => f.id);
  assert.deepEqual(files.sort(), [...fileIds].sort());
});

batchTest("files and a batch's output expire as OpenAI's do: 30 days by default, or the client's policy", {}, async (stack) => {
  const sdk = stack.client();
  const byDefault = await upload(sdk, [chatLine('a')]);
  assert.equal(byDefault.expires_at - byDefault.created_at, 30 * 24 * 3600, 'purpose batch: 30 days');
  const hour = await sdk.files.create({
    file: await toFile(Buffer.from(jsonl([chatLine('b')])), 'hour.jsonl'),
    purpose: 'batch',
    expires_after: { anchor: 'created_at', seconds: 3600 },
  });
  assert.equal(hour.expires_at - hour.created_at, 3600);
  assert.equal((await sdk.files.retrieve(hour.id)).expires_at, hour.expires_at);
  await rejectsWith(
    sdk.files.create({
      file: await toFile(Buffer.from(jsonl([chatLine('c')])), 'short.jsonl'),
      purpose: 'batch',
      expires_after: { anchor: 'created_at', seconds: 60 },
    }),
    BadRequestError,
    400,
    (e) => assert.match(e.message, /3600/),
  );
  const batch = await sdk.batches.create({
    input_file_id: hour.id,
    endpoint: CHAT,
    completion_window: '24h',
    output_expires_after: { anchor: 'created_at', seconds: 7200 },
  });
  const { batch: done } = await untilEnded(sdk, batch.id);
  assert.equal(done.status, 'completed');
  const output = await sdk.files.retrieve(done.output_file_id);
  assert.equal(output.expires_at - output.created_at, 7200);
  await rejectsWith(
    sdk.batches.create({
      input_file_id: hour.id,
      endpoint: CHAT,
      completion_window: '24h',
      output_expires_after: { anchor: 'last_active_at', seconds: 7200 },
    }),
    BadRequestError,
    400,
    (e) => assert.match(e.message, /created_at/),
  );
});

// Two gateways, one after the other, on one batches.dir and one usage store
// (absolute: the jobs' and files' records) and one engine: what the first
// had recorded is there for the second.
async function startOnDir(engine, dir) {
  return startGateway(
    gatewayConfig({
      models: [{ name: 'm1', backends: [{ url: engine.url, max_concurrency: 8 }] }],
      extra: { batches: { enabled: true, dir, max_in_flight: 1 }, store: { path: path.join(dir, 'arbiter.db') } },
    }),
  );
}

test(
  'a restarted gateway shows its batches and resumes an unfinished one without running answered lines again',
  T,
  async (t) => {
    const engine = await startFakeEngine();
    const dir = fs.mkdtempSync(path.join(os.tmpdir(), 'arbiter-e2e-batches-'));
    let gw;
    try {
      gw = await startOnDir(engine, dir);
      let sdk = client(gw.baseURL);
      // One batch that ends before the restart.
      const { batch: early } = await createBatch(sdk, [chatLine('early-0'), chatLine('early-1')]);
      assert.equal((await untilEnded(sdk, early.id)).batch.status, 'completed');
      // One that is cut off: two lines answered, the third held by the engine.
      const { batch: cut } = await createBatch(sdk, [
        chatLine('cut-0', { chunks: 1 }),
        chatLine('cut-1', { chunks: 2 }),
        chatLine('cut-2', { headerDelayMs: 60_000 }),
        chatLine('cut-3', { chunks: 4 }),
      ]);
      await engine.waitFor(() => engine.completionRequests().some((r) => lineOf(r) === 'cut-2'), 10_000, 'cut-2 to reach the engine');
      assert.deepEqual((await sdk.batches.retrieve(cut.id)).request_counts, { total: 4, completed: 2, failed: 0 });
      // A crash.
      gw.proc.kill('SIGKILL');
      await gw.stop();

      // The engine answers cut-2 at once the second time.
      engine.enqueue({
        status: 200,
        body: {
          id: 'chatcmpl-resumed',
          object: 'chat.completion',
          created: 0,
          model: 'm1',
          choices: [{ index: 0, message: { role: 'assistant', content: 'resumed' }, logprobs: null, finish_reason: 'stop' }],
          usage: { prompt_tokens: 1, completion_tokens: 1, total_tokens: 2 },
        },
      });
      gw = await startOnDir(engine, dir);
      sdk = client(gw.baseURL);

      // Both batches are listed after the restart...
      const listed = (await listAll(sdk.batches.list())).map((b) => b.id).sort();
      assert.deepEqual(listed, [early.id, cut.id].sort(), 'a batch recorded before the restart is not listed');
      // ...and each can be retrieved by its id (before 324fdc4 this was 404:
      // the jobs read back were keyed by a moved-from, empty id).
      assert.equal((await sdk.batches.retrieve(early.id)).status, 'completed');
      const { batch: resumed } = await untilEnded(sdk, cut.id);
      assert.equal(resumed.status, 'completed', JSON.stringify(resumed));
      assert.deepEqual(resumed.request_counts, { total: 4, completed: 4, failed: 0 });
      const out = await readJsonl(sdk, resumed.output_file_id);
      assert.deepEqual(out.map((o) => o.custom_id).sort(), ['cut-0', 'cut-1', 'cut-2', 'cut-3']);
      assert.equal(out.find((o) => o.custom_id === 'cut-2').response.body.choices[0].message.content, 'resumed');
      // Answered lines were not run again: cut-2 twice (cut off, then resumed), every other once.
      const counts = {};
      for (const r of engine.completionRequests()) counts[lineOf(r)] = (counts[lineOf(r)] ?? 0) + 1;
      assert.deepEqual(counts, { 'early-0': 1, 'early-1': 1, 'cut-0': 1, 'cut-1': 1, 'cut-2': 2, 'cut-3': 1 });
    } catch (e) {
      if (gw) t.diagnostic(`arbiter output (tail):\n${gw.logTail(3000)}`);
      throw e;
    } finally {
      await gw?.stop();
      await engine.close();
      fs.rmSync(dir, { recursive: true, force: true });
    }
  },
);

test(
  'SIGTERM while batch lines run on the engine: the gateway exits within its drain deadline',
  // The drain stops the batch's lines first (they run again after a
  // restart), while the gateway's threads still run: nothing is left
  // suspended to be destroyed after the gateway (it hung here once).
  T,
  async (t) => {
    const stack = await startBatchStack();
    try {
      const sdk = stack.client();
      await createBatch(sdk, [chatLine('held-0', { headerDelayMs: 60_000 }), chatLine('held-1', { headerDelayMs: 60_000 })]);
      await stack.engine.waitFor(() => stack.engine.completionRequests().length === 2, 10_000, 'both lines to reach the engine');
      stack.gw.proc.kill('SIGTERM');
      // drain_ms is 2000 (gatewayConfig): exited well within 2 s + 3 s.
      const deadline = Date.now() + 5_000;
      while (!stack.gw.exited() && Date.now() < deadline) await sleep(20);
      assert.ok(stack.gw.exited(), `the gateway is still running 5 s after SIGTERM; output:\n${stack.gw.logTail(1500)}`);
      assert.deepEqual(stack.gw.exited(), { code: 0, signal: null });
    } finally {
      if (!stack.gw.exited()) stack.gw.proc.kill('SIGKILL');
      await stack.stop();
    }
  },
);
