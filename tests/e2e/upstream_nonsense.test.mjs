// End-to-end: an engine that answers nonsense, behind `infertel agent`, with the official openai
// client and raw fetch in front. A hand-made engine (a plain TCP server, so that it can write what
// no HTTP library would) answers each bad shape: negative or absurd usage counts (non-stream and
// stream), a status outside 100–599, a malformed chunk size in a non-stream body (before and after
// the gateway's hold of 256 KiB), and a 200 whose body is not JSON. For each: what the client sees,
// the entry span (over OTLP gRPC) and the counters on the admin /metrics.
// Also: an upstream name with `"`, `\` and a newline in the agent file keeps /metrics valid
// (promtool), since self-metric label values are escaped.
import assert from 'node:assert/strict';
import fs from 'node:fs';
import net from 'node:net';
import path from 'node:path';
import { after, before, describe, test } from 'node:test';

import OpenAI from 'openai';

import { STATUS_CODE, startGrpcReceiver } from './lib/otlp.mjs';
import { startAgent, startInfertel, stopAll, tempDir } from './lib/proc.mjs';
import { promtoolCheck } from './lib/prom.mjs';
import { get, metricSum, openaiClient, parsePrometheus, randomSpanId, randomTraceId } from './lib/util.mjs';

const SPAN_TIMEOUT = 10000;
const BOUNDED = { timeout: 30000 };
// Larger than the gateway's hold of a non-stream body of unknown length (256 KiB).
const BIG = 300 * 1024;

const completion = (usage) =>
  JSON.stringify({
    id: 'chatcmpl-nonsense',
    object: 'chat.completion',
    created: 1,
    model: 'm',
    choices: [{ index: 0, message: { role: 'assistant', content: 'ok' }, finish_reason: 'stop' }],
    usage,
  });
const streamChunk = (fields) => `data: ${JSON.stringify({ id: 'chatcmpl-nonsense', object: 'chat.completion.chunk', created: 1, model: 'm', ...fields })}\n\n`;

// Raw HTTP/1.1 answers, one per model name. Every answer closes the connection.
const head = (status, headers) => `HTTP/1.1 ${status}\r\n${Object.entries({ connection: 'close', ...headers }).map(([k, v]) => `${k}: ${v}\r\n`).join('')}\r\n`;
const json = (body, status = '200 OK') => head(status, { 'content-type': 'application/json', 'content-length': Buffer.byteLength(body) }) + body;
const NEGATIVE = { prompt_tokens: -5, completion_tokens: -7, total_tokens: -12 };
const ABSURD = { prompt_tokens: 2 ** 60, completion_tokens: 3.5, total_tokens: 'many' };
const NOT_JSON = '<html><body>502 upstream of the upstream</body></html>';
const ANSWERS = {
  'negative-usage': () => json(completion(NEGATIVE)),
  'absurd-usage': () => json(completion({ ...ABSURD, prompt_tokens_details: { cached_tokens: -3 } })),
  'negative-usage-stream': () =>
    head('200 OK', { 'content-type': 'text/event-stream' }) +
    streamChunk({ choices: [{ index: 0, delta: { role: 'assistant', content: 'ok' }, finish_reason: null }] }) +
    streamChunk({ choices: [{ index: 0, delta: {}, finish_reason: 'stop' }] }) +
    streamChunk({ choices: [], usage: NEGATIVE }) +
    'data: [DONE]\n\n',
  'status-999': () => json(completion({ prompt_tokens: 1, completion_tokens: 1, total_tokens: 2 }), '999 Nonsense'),
  'bad-chunk': () => head('200 OK', { 'content-type': 'application/json', 'transfer-encoding': 'chunked' }) + 'zz\r\n{"id":"x"}\r\n0\r\n\r\n',
  'bad-chunk-after-some': () => {
    const body = completion({ prompt_tokens: 1, completion_tokens: 1, total_tokens: 2 });
    return head('200 OK', { 'content-type': 'application/json', 'transfer-encoding': 'chunked' }) + `10\r\n${body.slice(0, 16)}\r\n-4\r\n${body.slice(16, 20)}\r\n0\r\n\r\n`;
  },
  'bad-chunk-after-big': () => {
    const piece = ' '.repeat(BIG);
    return head('200 OK', { 'content-type': 'application/json', 'transfer-encoding': 'chunked' }) + `${piece.length.toString(16)}\r\n${piece}\r\nnot-hex\r\n{}\r\n0\r\n\r\n`;
  },
  'not-json': () => json(NOT_JSON),
};

async function startEngine() {
  const sockets = new Set();
  const server = net.createServer((s) => {
    sockets.add(s);
    s.on('close', () => sockets.delete(s));
    s.on('error', () => {});
    let buf = Buffer.alloc(0);
    s.on('data', (d) => {
      buf = Buffer.concat([buf, d]);
      const end = buf.indexOf('\r\n\r\n');
      if (end < 0) return;
      const header = buf.subarray(0, end).toString();
      const length = Number(/\r\ncontent-length:\s*(\d+)/i.exec(header)?.[1] ?? 0);
      if (buf.length < end + 4 + length) return;
      const body = buf.subarray(end + 4, end + 4 + length).toString();
      buf = Buffer.alloc(0);
      let answer = () => head('404 Not Found', { 'content-length': 0 });
      if (header.startsWith('POST /v1/chat/completions ')) answer = ANSWERS[JSON.parse(body).model] ?? answer;
      s.end(answer());
    });
  });
  await new Promise((r) => server.listen(0, '127.0.0.1', r));
  return {
    url: `http://127.0.0.1:${server.address().port}`,
    close: () =>
      new Promise((r) => {
        for (const s of sockets) s.destroy();
        server.close(r);
      }),
  };
}

const FAILURES = 'infertel_gateway_upstream_failures_total';
const INVALID = 'infertel_gateway_invalid_upstream_answers_total';
const TOKENS = 'genai_llm_usage_tokens_total';

describe('an engine that answers nonsense', () => {
  let rx;
  let engine;
  let agent;

  before(async () => {
    [rx, engine] = await Promise.all([startGrpcReceiver(), startEngine()]);
    agent = await startAgent({ upstream: engine.url, otlp: { endpoint: rx.endpoint, protocol: 'grpc' } });
    rx.diag = () => agent.describe();
  });

  after(async () => {
    await stopAll(agent);
    await Promise.all([rx?.close(), engine?.close()]);
  });

  const metrics = async () => parsePrometheus((await get(`${agent.adminUrl}/metrics`)).text);
  const counter = async (name, reason) => metricSum(await metrics(), name, (l) => l.reason === reason);

  // A chat request with its own trace id; resolves {traceId, result, error, chunks}.
  async function chat(model, { stream = false } = {}) {
    const traceId = randomTraceId();
    const client = openaiClient(agent.url, { timeout: 20000, maxRetries: 0 });
    const chunks = [];
    let result;
    let error;
    try {
      result = await client.chat.completions.create(
        { model, messages: [{ role: 'user', content: 'hi' }], stream },
        { headers: { traceparent: `00-${traceId}-${randomSpanId()}-01` } },
      );
      if (stream) for await (const c of result) chunks.push(c);
    } catch (e) {
      error = e;
    }
    return { traceId, result, error, chunks };
  }

  // The same request with fetch: the status, and the body or the error reading it.
  async function raw(model) {
    const traceId = randomTraceId();
    const res = await fetch(`${agent.url}/v1/chat/completions`, {
      method: 'POST',
      headers: { 'content-type': 'application/json', traceparent: `00-${traceId}-${randomSpanId()}-01` },
      body: JSON.stringify({ model, messages: [{ role: 'user', content: 'hi' }] }),
      signal: AbortSignal.timeout(20000),
    });
    let text;
    let bodyError;
    try {
      text = await res.text();
    } catch (e) {
      bodyError = e;
    }
    return { traceId, status: res.status, headers: res.headers, text, bodyError };
  }

  const span = (traceId) => rx.waitForSpan((s) => s.traceId === traceId, SPAN_TIMEOUT);

  async function assertErrorSpan(traceId, errorType) {
    const s = await span(traceId);
    assert.equal(s.status.code, STATUS_CODE.ERROR, JSON.stringify(s.status));
    assert.equal(s.attributes['error.type'], errorType);
    return s;
  }

  function assertNoUsage(s) {
    for (const key of ['gen_ai.usage.input_tokens', 'gen_ai.usage.output_tokens', 'gen_ai.usage.total_tokens', 'gen_ai.usage.cache_read.input_tokens']) {
      assert.ok(!(key in s.attributes), `${key} = ${s.attributes[key]} should have been dropped`);
    }
  }

  async function assertTokenCountersSane(before) {
    const samples = (await metrics()).filter((m) => m.name === TOKENS);
    for (const m of samples) assert.ok(m.value >= 0, `${TOKENS}${JSON.stringify(m.labels)} = ${m.value}`);
    const now = samples.reduce((a, m) => a + m.value, 0);
    assert.ok(now >= before && now < 2 ** 53, `${TOKENS} went from ${before} to ${now}`);
  }

  test('negative usage (non-stream): relayed as it came, kept off the span and the token counters', BOUNDED, async () => {
    const before = await counter(INVALID, 'usage');
    const tokens = metricSum(await metrics(), TOKENS);
    const r = await chat('negative-usage');
    assert.equal(r.error, undefined, `unexpected error: ${r.error}`);
    assert.deepEqual(r.result.usage, NEGATIVE, 'the body reaches the client as the engine sent it');
    const s = await span(r.traceId);
    assertNoUsage(s);
    assert.equal(s.attributes['infertel.response.invalid_usage'], 'prompt_tokens,completion_tokens,total_tokens');
    assert.notEqual(s.status.code, STATUS_CODE.ERROR);
    assert.equal(await counter(INVALID, 'usage'), before + 1);
    await assertTokenCountersSane(tokens);
  });

  test('absurd usage (above 2^53, fractional, a string, negative cached): dropped, marked, counted', BOUNDED, async () => {
    const before = await counter(INVALID, 'usage');
    const tokens = metricSum(await metrics(), TOKENS);
    const r = await raw('absurd-usage');
    assert.equal(r.status, 200);
    assert.equal(JSON.parse(r.text).usage.total_tokens, 'many');
    const s = await span(r.traceId);
    assertNoUsage(s);
    assert.equal(s.attributes['infertel.response.invalid_usage'], 'prompt_tokens,completion_tokens,total_tokens,cached_tokens');
    assert.equal(await counter(INVALID, 'usage'), before + 1);
    await assertTokenCountersSane(tokens);
  });

  test('negative usage in a stream\'s usage chunk: the same', BOUNDED, async () => {
    const before = await counter(INVALID, 'usage');
    const tokens = metricSum(await metrics(), TOKENS);
    const r = await chat('negative-usage-stream', { stream: true });
    assert.equal(r.error, undefined, `unexpected error: ${r.error}`);
    assert.equal(r.chunks.map((c) => c.choices[0]?.delta?.content ?? '').join(''), 'ok');
    const s = await span(r.traceId);
    assertNoUsage(s);
    assert.equal(s.attributes['infertel.response.invalid_usage'], 'prompt_tokens,completion_tokens,total_tokens');
    assert.equal(await counter(INVALID, 'usage'), before + 1);
    await assertTokenCountersSane(tokens);
  });

  test('a status outside 100–599: 502 in OpenAI\'s shape, the span an error', BOUNDED, async () => {
    const before = await counter(FAILURES, 'invalid_status');
    const r = await chat('status-999');
    assert.ok(r.error instanceof OpenAI.APIError, `expected an APIError, got ${r.error}`);
    assert.equal(r.error.status, 502);
    assert.equal(r.error.error.type, 'BadGateway');
    assert.equal(r.error.error.code, 502);
    assert.match(r.error.error.message, /status 999/);
    const s = await assertErrorSpan(r.traceId, 'upstream_invalid_status');
    assert.match(s.status.message, /status 999/);
    assert.equal(s.attributes['http.response.status_code'] ?? 502, 502);
    assert.equal(await counter(FAILURES, 'invalid_status'), before + 1);
    const w = await raw('status-999');
    assert.equal(w.status, 502);
    assert.equal(JSON.parse(w.text).error.type, 'BadGateway');
  });

  for (const model of ['bad-chunk', 'bad-chunk-after-some']) {
    test(`a malformed chunk size in a non-stream body (${model}): 502, not a 200 with a cut body`, BOUNDED, async () => {
      const before = await counter(FAILURES, 'malformed_response');
      const r = await chat(model);
      assert.ok(r.error instanceof OpenAI.APIError, `expected an APIError, got ${r.error} / ${JSON.stringify(r.result)}`);
      assert.equal(r.error.status, 502);
      assert.equal(r.error.error.type, 'BadGateway');
      assert.match(r.error.error.message, /malformed/);
      await assertErrorSpan(r.traceId, 'upstream_malformed_response');
      const w = await raw(model);
      assert.equal(w.status, 502);
      assert.equal(w.bodyError, undefined);
      assert.equal(JSON.parse(w.text).error.code, 502);
      await assertErrorSpan(w.traceId, 'upstream_malformed_response');
      assert.equal(await counter(FAILURES, 'malformed_response'), before + 2);
    });
  }

  test('a malformed chunk size after the header left (a body past the hold): the client sees a cut, not an end', BOUNDED, async () => {
    const before = await counter(FAILURES, 'malformed_response');
    const w = await raw('bad-chunk-after-big');
    assert.equal(w.status, 200, 'the header had left before the error');
    assert.ok(w.bodyError, `the body must not read as complete (read ${w.text?.length} bytes)`);
    await assertErrorSpan(w.traceId, 'upstream_malformed_response');
    assert.equal(await counter(FAILURES, 'malformed_response'), before + 1);
    // The openai client raises on the cut (undici's `terminated`), never returns a completion.
    const r = await chat('bad-chunk-after-big');
    assert.ok(r.error, 'the openai client returned a completion from a cut body');
    assert.equal(r.result, undefined);
  });

  test('a 200 whose body is not JSON: relayed as it came, the span an error', BOUNDED, async () => {
    const before = await counter(INVALID, 'not_json');
    const w = await raw('not-json');
    assert.equal(w.status, 200);
    assert.equal(w.text, NOT_JSON);
    const s = await assertErrorSpan(w.traceId, 'upstream_invalid_json');
    assert.match(s.status.message, /not JSON/);
    assert.equal(await counter(INVALID, 'not_json'), before + 1);
  });
});

describe('self-metric labels that carry outside values', () => {
  let agent;
  let engine;
  let tmp;

  before(async () => {
    engine = await startEngine();
    tmp = tempDir();
    // A YAML double-quoted scalar: a quote, a backslash and a newline in the name.
    const file = path.join(tmp.dir, 'agent.yaml');
    fs.writeFileSync(file, `upstreams:\n  - name: "we\\"ird\\\\name\\nnext"\n    url: ${engine.url}\n    listen: 127.0.0.1:0\n`);
    agent = await startInfertel(['agent', '--config', file, '--admin', '127.0.0.1:0', '--receiver-grpc', '127.0.0.1:0', '--receiver-http', '127.0.0.1:0', '--no-store'], {
      name: 'agent',
      waitFor: { adminUrl: /^infertel agent: admin listening on (http:\/\/[0-9.]+:[0-9]+)/ },
    });
  });

  after(async () => {
    await stopAll(agent);
    await engine?.close();
    tmp?.cleanup();
  });

  test('an upstream name with ", \\ and a newline: /metrics stays valid, the name escaped', BOUNDED, async () => {
    const text = (await get(`${agent.urls.adminUrl}/metrics`)).text;
    assert.ok(text.includes('upstream="we\\"ird\\\\name\\nnext"'), `the escaped name is not in:\n${text}`);
    await promtoolCheck(text);
  });
});
