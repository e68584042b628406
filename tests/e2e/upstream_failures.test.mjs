// End-to-end: the official openai client behind `infertel agent`, in front of an engine that
// fails: one that accepts and never answers, one that starts a stream and goes silent, one that
// dies mid-stream or mid-body, and one that does not answer the connection at all. For each:
// what the client sees (a 504/502 in OpenAI's error shape, or an SSE error event that the client
// raises as an APIError), the entry span (ERROR with error.type, over OTLP gRPC) and the counter
// infertel_gateway_upstream_failures_total{reason} on the admin /metrics.
import assert from 'node:assert/strict';
import { spawn } from 'node:child_process';
import http from 'node:http';
import net from 'node:net';
import { after, before, describe, test } from 'node:test';

import OpenAI from 'openai';

import { STATUS_CODE, startGrpcReceiver } from './lib/otlp.mjs';
import { pollUntil, startAgent, stopAll } from './lib/proc.mjs';
import { get, metricSum, openaiClient, parsePrometheus, randomSpanId, randomTraceId } from './lib/util.mjs';

const FIRST_BYTE_MS = 2000;
const IDLE_MS = 500;
const CONNECT_MS = 500;
const SPAN_TIMEOUT = 10000;
// Every test bounded: on a gateway that never gives up, a stream would hang the run.
const BOUNDED = { timeout: 30000 };

// A scripted engine: the request's model names what it does.
function chunk(content) {
  const c = { id: 'chatcmpl-e2e', object: 'chat.completion.chunk', created: 1, model: 'm', choices: [{ index: 0, delta: { content }, finish_reason: null }] };
  return `data: ${JSON.stringify(c)}\n\n`;
}
const SCRIPTS = {
  // Accepts, reads the request, never answers (counts the gateway closing the connection: the
  // engine would abort the request then).
  silent: (res, engine) => res.socket.once('close', () => engine.silentClosed++),
  // The stream's header and two events, then silence.
  stall: (res) => {
    res.writeHead(200, { 'content-type': 'text/event-stream' });
    res.write(chunk('one'));
    res.write(chunk('two'));
  },
  // The stream's header and two events, then the engine dies: half an event, then a reset.
  'die-stream': (res) => {
    res.writeHead(200, { 'content-type': 'text/event-stream' });
    res.write(chunk('one'));
    res.write(chunk('two'));
    res.write('data: {"id":"chatcmpl-e2e","obj');
    setTimeout(() => res.socket.destroy(), 50);
  },
  // A non-stream answer cut after part of its body.
  'die-body': (res) => {
    res.writeHead(200, { 'content-type': 'application/json', 'content-length': '400' });
    res.write('{"id":"chatcmpl-e2e","object":"chat.completion",');
    setTimeout(() => res.socket.destroy(), 50);
  },
  // The stream's header at once, the first event after longer than the idle timeout (a queue).
  queued: (res) => {
    res.writeHead(200, { 'content-type': 'text/event-stream' });
    res.flushHeaders(); // as vLLM and SGLang: the header before the queue
    setTimeout(() => {
      res.write(chunk('late'));
      res.end('data: [DONE]\n\n');
    }, IDLE_MS + 700);
  },
};

async function startEngine() {
  const sockets = new Set();
  const engine = { silentClosed: 0 };
  const server = http.createServer((req, res) => {
    let body = '';
    req.on('data', (d) => (body += d));
    req.on('end', () => {
      // The agent's own probes (/version, /metrics) get a 404.
      const model = req.url === '/v1/chat/completions' ? JSON.parse(body).model : undefined;
      (SCRIPTS[model] ?? ((r) => r.writeHead(404).end()))(res, engine);
    });
  });
  server.on('connection', (s) => {
    sockets.add(s);
    s.on('close', () => sockets.delete(s));
  });
  await new Promise((r) => server.listen(0, '127.0.0.1', r));
  return Object.assign(engine, {
    url: `http://127.0.0.1:${server.address().port}`,
    close: () =>
      new Promise((r) => {
        for (const s of sockets) s.destroy();
        server.close(r);
      }),
  });
}

// A listening socket that never accepts: a child node process whose event loop is blocked right
// after listen(), its accept queue then filled from here. Linux drops further SYNs, so a
// connection attempt hangs as toward a host that does not answer.
async function startBlackhole() {
  const script = `
    const s = require('net').createServer();
    s.listen({ port: 0, host: '127.0.0.1', backlog: 1 }, () => {
      process.stdout.write(s.address().port + '\\n', () => Atomics.wait(new Int32Array(new SharedArrayBuffer(4)), 0, 0));
    });`;
  const child = spawn(process.execPath, ['-e', script], { stdio: ['ignore', 'pipe', 'inherit'] });
  process.on('exit', () => child.kill('SIGKILL'));
  const port = await new Promise((resolve, reject) => {
    child.stdout.once('data', (d) => resolve(Number(String(d).trim())));
    child.once('exit', () => reject(new Error('blackhole exited')));
  });
  const fillers = [];
  const tryConnect = () =>
    new Promise((resolve) => {
      const s = net.connect(port, '127.0.0.1');
      fillers.push(s);
      s.on('error', () => {});
      const t = setTimeout(() => resolve(false), 300);
      s.once('connect', () => {
        clearTimeout(t);
        resolve(true);
      });
    });
  let full = false;
  for (let i = 0; i < 16 && !full; i++) full = !(await tryConnect());
  return {
    port,
    full,
    close: () => {
      for (const s of fillers) s.destroy();
      child.kill('SIGKILL');
    },
  };
}

const FAILURES = 'infertel_gateway_upstream_failures_total';

describe('upstream failures', () => {
  let rx;
  let engine;
  let agent;
  let blackhole;
  let holeAgent;

  before(async () => {
    [rx, engine, blackhole] = await Promise.all([startGrpcReceiver(), startEngine(), startBlackhole()]);
    const otlp = { endpoint: rx.endpoint, protocol: 'grpc' };
    [agent, holeAgent] = await Promise.all([
      startAgent({
        upstream: engine.url,
        otlp,
        extra: ['--upstream-first-byte-timeout-ms', String(FIRST_BYTE_MS), '--upstream-idle-timeout-ms', String(IDLE_MS)],
      }),
      startAgent({
        upstream: `http://127.0.0.1:${blackhole.port}`,
        otlp,
        extra: ['--upstream-connect-timeout-ms', String(CONNECT_MS)],
      }),
    ]);
    rx.diag = () => agent.describe();
  });

  after(async () => {
    await stopAll(agent, holeAgent);
    await Promise.all([rx?.close(), engine?.close()]);
    blackhole?.close();
  });

  const failures = async (a, reason) => metricSum(parsePrometheus((await get(`${a.adminUrl}/metrics`)).text), FAILURES, (l) => l.reason === reason);

  // A chat request with its own trace id, so that its entry span can be found; resolves
  // {traceId, error, chunks, ms} (error: what the client threw, if anything).
  async function chat(a, model, { stream = false } = {}) {
    const traceId = randomTraceId();
    const client = openaiClient(a.url, { timeout: 20000 });
    const t0 = performance.now();
    const chunks = [];
    let error;
    try {
      const r = await client.chat.completions.create(
        { model, messages: [{ role: 'user', content: 'hi' }], stream },
        { headers: { traceparent: `00-${traceId}-${randomSpanId()}-01` } },
      );
      if (stream) for await (const c of r) chunks.push(c);
    } catch (e) {
      error = e;
    }
    return { traceId, error, chunks, ms: performance.now() - t0 };
  }

  async function entrySpan(traceId, errorType) {
    const span = await rx.waitForSpan((s) => s.traceId === traceId, SPAN_TIMEOUT);
    assert.equal(span.status.code, STATUS_CODE.ERROR, JSON.stringify(span.status));
    assert.equal(span.attributes['error.type'], errorType);
    return span;
  }

  test('an engine that accepts and never answers: 504 after the first-byte timeout', BOUNDED, async () => {
    const before = await failures(agent, 'first_byte_timeout');
    const closedBefore = engine.silentClosed;
    const r = await chat(agent, 'silent');
    assert.ok(r.error instanceof OpenAI.APIError, `expected an APIError, got ${r.error}`);
    assert.equal(r.error.status, 504);
    assert.deepEqual(Object.keys(r.error.error).sort(), ['code', 'message', 'param', 'type']);
    assert.equal(r.error.error.type, 'GatewayTimeout');
    assert.equal(r.error.error.code, 504);
    assert.equal(r.error.error.param, null);
    assert.match(r.error.error.message, /first-byte timeout/);
    assert.ok(r.ms >= FIRST_BYTE_MS - 50 && r.ms < FIRST_BYTE_MS + 2000, `answered after ${r.ms} ms`);
    const span = await entrySpan(r.traceId, 'timeout');
    assert.match(span.status.message, /first-byte timeout/);
    assert.equal(await failures(agent, 'first_byte_timeout'), before + 1);
    assert.ok(await pollUntil(() => engine.silentClosed === closedBefore + 1), 'the engine connection was not closed');
  });

  test('a stream that goes silent: the client gets its events, then an error event it raises', BOUNDED, async () => {
    const before = await failures(agent, 'idle_timeout');
    const r = await chat(agent, 'stall', { stream: true });
    assert.deepEqual(r.chunks.map((c) => c.choices[0].delta.content), ['one', 'two']);
    assert.ok(r.error instanceof OpenAI.APIError, `expected an APIError, got ${r.error}`);
    assert.equal(r.error.error.type, 'GatewayTimeout');
    assert.equal(r.error.error.code, 504);
    assert.match(r.error.message, /idle timeout/);
    await entrySpan(r.traceId, 'timeout');
    assert.equal(await failures(agent, 'idle_timeout'), before + 1);
  });

  test('a stream whose first event waits longer than the idle timeout is not cut', BOUNDED, async () => {
    const r = await chat(agent, 'queued', { stream: true });
    assert.equal(r.error, undefined, `unexpected error: ${r.error}`);
    assert.deepEqual(r.chunks.map((c) => c.choices[0].delta.content), ['late']);
  });

  test('the engine dies mid-stream: an error event in OpenAI\'s shape, then the end', BOUNDED, async () => {
    const before = await failures(agent, 'closed');
    const r = await chat(agent, 'die-stream', { stream: true });
    assert.deepEqual(r.chunks.map((c) => c.choices[0].delta.content), ['one', 'two']);
    assert.ok(r.error instanceof OpenAI.APIError, `expected an APIError, got ${r.error}`);
    assert.equal(r.error.error.type, 'BadGateway');
    assert.equal(r.error.error.code, 502);
    assert.match(r.error.message, /closed the connection/);
    const span = await entrySpan(r.traceId, 'upstream_closed');
    assert.match(span.status.message, /closed the connection/);
    assert.equal(await failures(agent, 'closed'), before + 1);
  });

  test('the stream\'s wire end: the error event, [DONE], a complete chunked body', BOUNDED, async () => {
    const res = await fetch(`${agent.url}/v1/chat/completions`, {
      method: 'POST',
      headers: { 'content-type': 'application/json' },
      body: JSON.stringify({ model: 'die-stream', stream: true, messages: [{ role: 'user', content: 'hi' }] }),
    });
    const text = await res.text(); // rejects on a cut chunked body
    const events = text.split('\n\n').map((e) => e.trim()).filter(Boolean);
    assert.equal(events.at(-1), 'data: [DONE]');
    const err = JSON.parse(events.at(-2).replace(/^data: /, ''));
    assert.deepEqual(Object.keys(err), ['error']);
    assert.deepEqual(Object.keys(err.error), ['message', 'type', 'param', 'code']);
    assert.ok(!text.includes('"obj\n'), 'the half event is not relayed');
  });

  test('the engine dies mid-body (non-stream): 502 in OpenAI\'s shape', BOUNDED, async () => {
    const before = await failures(agent, 'closed');
    const r = await chat(agent, 'die-body');
    assert.ok(r.error instanceof OpenAI.APIError, `expected an APIError, got ${r.error}`);
    assert.equal(r.error.status, 502);
    assert.equal(r.error.error.type, 'BadGateway');
    assert.equal(r.error.error.code, 502);
    await entrySpan(r.traceId, 'upstream_closed');
    assert.equal(await failures(agent, 'closed'), before + 1);
  });

  test('the first-byte timeout is a live console key', BOUNDED, async () => {
    const key = 'infertel.upstream.first-byte-timeout-ms';
    const put = await fetch(`${agent.adminUrl}/api/config/${key}`, { method: 'PUT', headers: { 'content-type': 'application/json' }, body: JSON.stringify({ value: 300 }) });
    assert.equal(put.status, 200, await put.text());
    try {
      const r = await chat(agent, 'silent');
      assert.equal(r.error?.status, 504);
      assert.ok(r.ms < FIRST_BYTE_MS - 200, `answered after ${r.ms} ms, not after the console's 300 ms`);
      assert.match(r.error.error.message, /within 300 ms/);
    } finally {
      await fetch(`${agent.adminUrl}/api/config/${key}`, { method: 'DELETE' });
    }
    const cfg = (await get(`${agent.adminUrl}/api/config/${key}`)).json;
    assert.deepEqual([cfg.value, cfg.source], [FIRST_BYTE_MS, 'env'], 'the flag stands for the environment variable');
  });

  test('an engine that does not answer the connection: 504 after the connect timeout', BOUNDED, async () => {
    assert.ok(blackhole.full, 'the accept queue of the blackhole could not be filled');
    const before = await failures(holeAgent, 'connect_timeout');
    const r = await chat(holeAgent, 'any');
    assert.equal(r.error?.status, 504, `got ${r.error}`);
    assert.equal(r.error.error.type, 'GatewayTimeout');
    assert.match(r.error.error.message, /connect timeout/);
    assert.ok(r.ms >= CONNECT_MS - 50 && r.ms < CONNECT_MS + 2000, `answered after ${r.ms} ms`);
    await entrySpan(r.traceId, 'timeout');
    assert.equal(await failures(holeAgent, 'connect_timeout'), before + 1);
  });
});
