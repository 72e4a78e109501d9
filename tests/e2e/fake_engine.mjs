// A tiny OpenAI-compatible fake inference engine for the end-to-end tests.
//
// It serves POST /v1/chat/completions and POST /v1/completions, streaming
// (SSE: `data: {...}\n\n` ... `data: [DONE]\n\n`, with a delay between
// chunks) and non-streaming, plus GET /v1/models. Every request is recorded:
// what arrived, what was sent, and whether the client (the gateway) closed
// the connection before the response was complete, and when.
//
// Behaviour per request, in this order:
//   1. engine.enqueue({status, headers, body}) answers the next POST with
//      exactly that (used to inject upstream errors such as 429); with
//      `raw` (a string) and `contentType` instead of `body`, those bytes.
//   2. A directive in the prompt: when the last chat message's content (or
//      the completions prompt) starts with `#engine ` followed by a JSON
//      object, that object overrides the defaults:
//        chunks        number of content pieces (default: DEFAULT_PIECES)
//        delayMs       gap between two stream events (default 20)
//        headerDelayMs hold the response header this long (default 0)
//        gapAfter      after this many content chunks, wait gapMs once
//        gapMs         length of that gap
//        crashAfter    destroy the socket after this many content chunks
//   3. Otherwise the defaults.
//
// Run standalone: `node fake_engine.mjs` prints the port it listens on.

import http from 'node:http';
import { once } from 'node:events';
import { setTimeout as sleep } from 'node:timers/promises';

export const DEFAULT_PIECES = ['Hello', ',', ' this', ' is', ' the', ' fake', ' engine', '.'];

// Content pieces for a stream of n chunks: "t0 ", "t1 ", ... so that order
// and loss are both visible in the concatenation.
export function piecesFor(n) {
  if (n === undefined) return DEFAULT_PIECES.slice();
  return Array.from({ length: n }, (_, i) => `t${i} `);
}

function promptText(path, body) {
  if (path === '/v1/chat/completions') {
    const msgs = Array.isArray(body?.messages) ? body.messages : [];
    const last = msgs[msgs.length - 1];
    if (typeof last?.content === 'string') return last.content;
    if (Array.isArray(last?.content)) {
      return last.content.map((p) => (typeof p?.text === 'string' ? p.text : '')).join('');
    }
    return '';
  }
  const p = body?.prompt;
  if (typeof p === 'string') return p;
  if (Array.isArray(p) && typeof p[0] === 'string') return p[0];
  return '';
}

function directiveOf(text) {
  if (!text.startsWith('#engine ')) return {};
  try {
    const d = JSON.parse(text.slice('#engine '.length));
    return d && typeof d === 'object' ? d : {};
  } catch {
    return {};
  }
}

// A deterministic token count: words in the prompt text(s).
function promptTokens(path, body) {
  let text = '';
  if (path === '/v1/chat/completions') {
    for (const m of body?.messages ?? []) text += ' ' + (typeof m?.content === 'string' ? m.content : '');
  } else {
    text = Array.isArray(body?.prompt) ? body.prompt.join(' ') : String(body?.prompt ?? '');
  }
  return text.split(/\s+/).filter(Boolean).length;
}

function errorBody(message, type, code) {
  return { error: { message, type, param: null, code } };
}

export async function startFakeEngine({ host = '127.0.0.1', port = 0 } = {}) {
  const requests = [];
  const scripted = [];
  const sockets = new Set();
  let seq = 0;

  const engine = {
    host,
    port: 0,
    url: '',
    requests,
    /** Answer the next POST request with exactly this response. */
    enqueue(resp) {
      scripted.push(resp);
    },
    /** Requests to a completion route (not GET /v1/models etc.). */
    completionRequests() {
      return requests.filter((r) => r.method === 'POST');
    },
    /** Poll until pred() is truthy; returns its value or throws after timeoutMs. */
    async waitFor(pred, timeoutMs = 2000, what = 'condition') {
      const deadline = Date.now() + timeoutMs;
      for (;;) {
        const v = pred();
        if (v) return v;
        if (Date.now() > deadline) throw new Error(`fake engine: timed out after ${timeoutMs} ms waiting for ${what}`);
        await sleep(5);
      }
    },
    async close() {
      await new Promise((resolve) => {
        server.close(() => resolve());
        server.closeAllConnections?.();
        for (const s of sockets) s.destroy();
      });
    },
  };

  const server = http.createServer({ noDelay: true, keepAliveTimeout: 30_000 }, (req, res) => {
    handle(req, res).catch((e) => {
      // A bug in the fake engine itself: make it loud, not a silent hang.
      console.error('fake engine handler error:', e);
      if (!res.headersSent) {
        res.writeHead(500, { 'content-type': 'application/json' });
        res.end(JSON.stringify(errorBody(String(e), 'server_error', null)));
      } else {
        res.destroy();
      }
    });
  });
  server.on('connection', (s) => {
    sockets.add(s);
    s.on('close', () => sockets.delete(s));
  });

  async function handle(req, res) {
    const rec = {
      id: ++seq,
      method: req.method,
      path: req.url,
      headers: req.headers,
      body: undefined,
      rawBody: '',
      startedAt: Date.now(),
      status: undefined,
      headersSentAt: undefined,
      sent: [], // content pieces written (streaming) or the whole text
      firstChunkAt: undefined,
      lastChunkAt: undefined,
      usage: undefined,
      responseBody: undefined,
      finishedAt: undefined, // response fully written by the engine
      closedEarly: false, // connection closed before the response was complete
      closedAt: undefined,
    };
    requests.push(rec);
    let closed = false;
    // Every wait ends at once when the connection closes (no stray timers).
    const ac = new AbortController();
    const pause = (ms) => sleep(ms, undefined, { signal: ac.signal }).catch(() => {});
    res.on('close', () => {
      closed = true;
      rec.closedAt = Date.now();
      if (!res.writableFinished) rec.closedEarly = true;
      ac.abort();
    });

    const chunks = [];
    for await (const c of req) chunks.push(c);
    rec.rawBody = Buffer.concat(chunks).toString('utf8');

    const sendJson = (status, obj, headers = {}) => {
      rec.status = status;
      rec.responseBody = obj;
      const data = JSON.stringify(obj);
      res.writeHead(status, { 'content-type': 'application/json', 'content-length': Buffer.byteLength(data), ...headers });
      rec.headersSentAt = Date.now();
      res.end(data, () => (rec.finishedAt = Date.now()));
    };

    if (scripted.length > 0 && req.method === 'POST') {
      const s = scripted.shift();
      try {
        rec.body = JSON.parse(rec.rawBody);
      } catch {}
      if (typeof s.raw === 'string') {
        // Bytes as they are, in whatever shape an engine or a proxy in front of it sends errors.
        rec.status = s.status ?? 200;
        res.writeHead(rec.status, { 'content-type': s.contentType ?? 'text/plain', 'content-length': Buffer.byteLength(s.raw), ...(s.headers ?? {}) });
        rec.headersSentAt = Date.now();
        return res.end(s.raw, () => (rec.finishedAt = Date.now()));
      }
      return sendJson(s.status ?? 200, s.body ?? {}, s.headers ?? {});
    }

    if (req.method === 'GET' && req.url === '/v1/models') {
      return sendJson(200, { object: 'list', data: [{ id: 'fake-model', object: 'model', created: 0, owned_by: 'fake' }] });
    }
    const path = req.url.split('?')[0];
    if (req.method !== 'POST' || (path !== '/v1/chat/completions' && path !== '/v1/completions')) {
      return sendJson(404, errorBody(`no route ${req.method} ${req.url}`, 'invalid_request_error', 'not_found'));
    }
    let body;
    try {
      body = JSON.parse(rec.rawBody);
    } catch {
      return sendJson(400, errorBody('fake engine: body is not JSON', 'invalid_request_error', null));
    }
    rec.body = body;
    const chat = path === '/v1/chat/completions';
    const d = directiveOf(promptText(path, body));
    const pieces = piecesFor(d.chunks);
    const delayMs = d.delayMs ?? 20;
    const created = Math.floor(Date.now() / 1000);
    const id = (chat ? 'chatcmpl-fake' : 'cmpl-fake') + rec.id;
    const model = body.model;
    const pt = promptTokens(path, body);
    const usage = { prompt_tokens: pt, completion_tokens: pieces.length, total_tokens: pt + pieces.length };
    rec.usage = usage;

    if (d.headerDelayMs) {
      await pause(d.headerDelayMs);
      if (closed) return;
    }

    if (!body.stream) {
      const text = pieces.join('');
      rec.sent = [text];
      const obj = chat
        ? {
            id,
            object: 'chat.completion',
            created,
            model,
            choices: [{ index: 0, message: { role: 'assistant', content: text, refusal: null }, logprobs: null, finish_reason: 'stop' }],
            usage,
          }
        : {
            id,
            object: 'text_completion',
            created,
            model,
            choices: [{ index: 0, text, logprobs: null, finish_reason: 'stop' }],
            usage,
          };
      return sendJson(200, obj);
    }

    const includeUsage = body.stream_options?.include_usage === true;
    rec.status = 200;
    res.writeHead(200, { 'content-type': 'text/event-stream', 'cache-control': 'no-cache' });
    res.flushHeaders();
    rec.headersSentAt = Date.now();
    const event = (obj) => {
      if (closed) return false;
      res.write(`data: ${JSON.stringify(obj)}\n\n`);
      return true;
    };
    const base = chat ? { id, object: 'chat.completion.chunk', created, model } : { id, object: 'text_completion', created, model };
    const extra = includeUsage ? { usage: null } : {};
    const wait = async (ms) => {
      if (ms > 0 && !closed) await pause(ms);
    };

    if (chat) {
      event({ ...base, choices: [{ index: 0, delta: { role: 'assistant', content: '' }, logprobs: null, finish_reason: null }], ...extra });
    }
    for (let i = 0; i < pieces.length; i++) {
      await wait(i === 0 && !chat ? 0 : delayMs);
      if (closed) return;
      const choice = chat
        ? { index: 0, delta: { content: pieces[i] }, logprobs: null, finish_reason: null }
        : { index: 0, text: pieces[i], logprobs: null, finish_reason: null };
      if (!event({ ...base, choices: [choice], ...extra })) return;
      rec.sent.push(pieces[i]);
      rec.lastChunkAt = Date.now();
      rec.firstChunkAt ??= rec.lastChunkAt;
      if (d.crashAfter !== undefined && rec.sent.length >= d.crashAfter) {
        await pause(50); // let the chunks reach the gateway first
        res.socket?.destroy();
        return;
      }
      if (d.gapAfter !== undefined && rec.sent.length === d.gapAfter) await wait(d.gapMs ?? 0);
    }
    await wait(delayMs);
    if (closed) return;
    const last = chat
      ? { index: 0, delta: {}, logprobs: null, finish_reason: 'stop' }
      : { index: 0, text: '', logprobs: null, finish_reason: 'stop' };
    event({ ...base, choices: [last], ...extra });
    if (includeUsage) event({ ...base, choices: [], usage });
    if (closed) return;
    res.end('data: [DONE]\n\n', () => (rec.finishedAt = Date.now()));
  }

  server.listen(port, host);
  await once(server, 'listening');
  engine.port = server.address().port;
  engine.url = `http://${host}:${engine.port}`;
  return engine;
}

if (import.meta.url === `file://${process.argv[1]}`) {
  const e = await startFakeEngine({ port: Number(process.env.PORT ?? 0) });
  console.log(e.port);
}
