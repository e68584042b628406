// End-to-end: SGLang upstreams (spec telemetry-model.md M4; the contract is
// docs/telemetry-reference.md "SGLang"). Three parts:
//  (a) entry spans: a Node upstream replays real SGLang SSE captures (tests/fixtures) behind
//      `infertel agent --engine sglang`; the official openai client talks to the agent; the
//      entry spans are decoded from OTLP with the official protos.
//  (b) native spans from an independent emitter: the OpenTelemetry JS SDK sends spans named
//      and shaped as SGLang's (scope "sglang server", service.name "sglang") to the agent's
//      receiver, as children of the traceparent the agent gave the upstream: resource, levels,
//      links, events, status and PD links are checked on what the agent exports.
//  (c) the SGLang simulator (`infertel sim --engine sglang`) sending its native spans to the
//      agent: the tree shape of M4, levels 0-4, abort, TP=2, speculative decoding, PD.
import assert from 'node:assert/strict';
import fs from 'node:fs';
import http from 'node:http';
import { after, before, describe, test } from 'node:test';

import { ROOT_CONTEXT, SpanStatusCode, TraceFlags, trace } from '@opentelemetry/api';
import { OTLPTraceExporter as OTLPGrpcExporter } from '@opentelemetry/exporter-trace-otlp-grpc';
import { OTLPTraceExporter as OTLPProtoExporter } from '@opentelemetry/exporter-trace-otlp-proto';
import { Resource } from '@opentelemetry/resources';
import { BasicTracerProvider, SimpleSpanProcessor } from '@opentelemetry/sdk-trace-base';

import { SPAN_KIND, STATUS_CODE, startGrpcReceiver } from './lib/otlp.mjs';
import { closedPort, pollUntil, startAgent, startSim, stopAll } from './lib/proc.mjs';
import { assertAttr, assertEntrySpan, assertNoAttr, assertOk, jsonAttr, showSpan } from './lib/spans.mjs';
import { FIXTURES_DIR, collectStream, get, metricSum, openaiClient, parsePrometheus, randomSpanId, randomTraceId } from './lib/util.mjs';

const REASONING = fs.readFileSync(`${FIXTURES_DIR}/sglang-sse-chat-reasoning-usage.txt`);
const TOOLCALL_LINES = fs.readFileSync(`${FIXTURES_DIR}/sglang-sse-chat-toolcall-parallel.txt`, 'utf8').split('\n').filter((l) => l.length > 0);
const MODEL_REASONING = 'Qwen/Qwen3.8-Flash-Next';
const MODEL_TOOLS = 'deepseek-ai/DeepSeek-V4-Flash-0731';
const SERVER_STREAM_INTERVAL = 3;
const SPAN_TIMEOUT = 10000;
const APP = 'e2e-sglang-app';
const SGL_LEVEL = 'otel.instrumentation.sglang.tracing.level';

// The tool-call capture was published without SGLang's blank separator lines (fixtures
// SOURCES.md); each of its events goes out as SGLang frames it: "data: …\n\n". The reasoning
// capture is complete and goes out byte for byte.
const TOOLCALL = Buffer.from(TOOLCALL_LINES.map((l) => `${l}\n\n`).join(''), 'utf8');

// Fixture facts the assertions rest on (counted from the files, not from the agent).
const REASONING_DELTAS = 8; // 7 reasoning_content pieces + 1 content piece
const TOOLCALL_DELTAS = 18; // 9 reasoning + 3 content + 6 tool-call frames

const sleep = (ms) => new Promise((r) => setTimeout(r, ms));

/**
 * A stand-in SGLang server: /server_info (with `stream_interval`), the two control endpoints,
 * and /v1/chat/completions replaying the fixture for the requested model (streaming) or a
 * JSON answer (non-streaming); /v1/completions non-streaming. Every request is recorded.
 */
async function startReplayUpstream() {
  const requests = [];
  const server = http.createServer((req, res) => {
    const chunks = [];
    req.on('data', (d) => chunks.push(d));
    req.on('end', async () => {
      const body = Buffer.concat(chunks).toString('utf8');
      let json;
      try {
        json = JSON.parse(body);
      } catch {
        json = undefined;
      }
      requests.push({ method: req.method, url: req.url, headers: req.headers, body, json });
      const path = req.url.split('?')[0];
      if (path === '/server_info') {
        res.writeHead(200, { 'content-type': 'application/json' });
        res.end(JSON.stringify({ version: '0.5.20', stream_interval: SERVER_STREAM_INTERVAL, enable_trace: true, log_requests: false, log_requests_level: 2 }));
        return;
      }
      if (path === '/set_trace_level' || path === '/configure_logging') {
        res.writeHead(200, { 'content-type': 'application/json' }).end('"success"');
        return;
      }
      if (req.method === 'POST' && path === '/v1/chat/completions' && json?.stream) {
        const bytes = json.model === MODEL_TOOLS ? TOOLCALL : REASONING;
        res.writeHead(200, { 'content-type': 'text/event-stream', 'cache-control': 'no-cache' });
        // In uneven pieces, as a server flushes: event boundaries fall inside writes. The last
        // piece ends the response at once, as SGLang does after `data: [DONE]`.
        for (let i = 0; i < bytes.length; i += 700) {
          const piece = bytes.subarray(i, Math.min(bytes.length, i + 700));
          if (i + 700 >= bytes.length) {
            res.end(piece);
          } else {
            res.write(piece);
            await sleep(5);
          }
        }
        return;
      }
      if (req.method === 'POST' && path === '/v1/chat/completions') {
        res.writeHead(200, { 'content-type': 'application/json' });
        res.end(JSON.stringify({
          id: 'f00dfeed0123456789abcdef00000001', object: 'chat.completion', created: 1788512344, model: json?.model,
          choices: [{ index: 0, message: { role: 'assistant', content: 'OK', reasoning_content: null, tool_calls: null }, logprobs: null, finish_reason: 'stop', matched_stop: 1 }],
          usage: { prompt_tokens: 21, total_tokens: 23, completion_tokens: 2, prompt_tokens_details: { cached_tokens: 16 }, reasoning_tokens: 0 },
          metadata: { weight_version: 'default' },
        }));
        return;
      }
      if (req.method === 'POST' && path === '/v1/completions') {
        res.writeHead(200, { 'content-type': 'application/json' });
        res.end(JSON.stringify({
          id: 'f00dfeed0123456789abcdef00000002', object: 'text_completion', created: 1788512344, model: json?.model,
          choices: [{ index: 0, text: ' four', logprobs: null, finish_reason: 'length', matched_stop: null }],
          usage: { prompt_tokens: 5, total_tokens: 9, completion_tokens: 4, prompt_tokens_details: null, reasoning_tokens: 0 },
        }));
        return;
      }
      res.writeHead(404, { 'content-type': 'application/json' }).end('{"detail":"Not Found"}');
    });
  });
  await new Promise((r) => server.listen(0, '127.0.0.1', r));
  return {
    url: `http://127.0.0.1:${server.address().port}`,
    requests,
    close: () =>
      new Promise((resolve) => {
        server.closeAllConnections?.();
        server.close(() => resolve());
      }),
  };
}

/** The W3C traceparent the upstream received with X-Request-Id `xrid`, parsed. */
function upstreamTraceparent(upstream, xrid) {
  const r = upstream.requests.find((q) => q.headers['x-request-id'] === xrid);
  assert.ok(r, `the upstream never saw X-Request-Id ${xrid}`);
  const m = /^00-([0-9a-f]{32})-([0-9a-f]{16})-([0-9a-f]{2})$/.exec(r.headers.traceparent || '');
  assert.ok(m, `the upstream's traceparent is not W3C: ${r.headers.traceparent}`);
  return { traceId: m[1], spanId: m[2], flags: m[3], request: r };
}

async function putConfig(agent, key, value) {
  const r = await fetch(`${agent.adminUrl}/api/config/${key}`, {
    method: 'PUT',
    headers: { 'content-type': 'application/json' },
    body: JSON.stringify({ value }),
    signal: AbortSignal.timeout(10000),
  });
  assert.equal(r.status, 200, await r.text());
}

async function selfMetric(agent, name) {
  const r = await get(`${agent.adminUrl}/metrics`);
  return metricSum(parsePrometheus(r.text), name);
}

let rx;
let upstream;
let agent;
let client;
const xrid = (tag) => `e2e-sgl-${tag}-${randomSpanId()}`;

before(async () => {
  rx = await startGrpcReceiver();
  upstream = await startReplayUpstream();
  agent = await startAgent({
    engine: 'sglang',
    upstream: upstream.url,
    otlp: { endpoint: rx.endpoint, protocol: 'grpc' },
    env: { OTEL_SERVICE_NAME: APP },
  });
  rx.diag = () => agent.describe();
  client = openaiClient(agent.url);
  // stream_interval is read once from /server_info, off the data path: wait for that read.
  const asked = await pollUntil(() => upstream.requests.some((r) => r.url.startsWith('/server_info')), { timeoutMs: 10000 });
  assert.ok(asked, 'the agent never asked the SGLang upstream for /server_info');
  await sleep(100);
});

after(async () => {
  await stopAll(agent);
  await upstream?.close();
  await rx?.close();
});

/** The entry span of the request the upstream saw with X-Request-Id `id` (by its traceparent). */
async function entrySpanOf(id) {
  const tp = upstreamTraceparent(upstream, id);
  const span = await rx.waitForSpan((s) => s.traceId === tp.traceId && s.spanId === tp.spanId, SPAN_TIMEOUT);
  return { span, tp };
}

describe('(a) entry spans on replayed SGLang streams', () => {
  test('reasoning stream with usage: every M4.1 attribute, tokens_streamed from /server_info', async () => {
    const id = xrid('reasoning');
    const t0 = Date.now();
    const stream = await client.chat.completions.create(
      { model: MODEL_REASONING, messages: [{ role: 'user', content: 'Reply with exactly: OK' }], stream: true, stream_options: { include_usage: true }, temperature: 0.6, top_p: 0.95, top_k: 20, max_tokens: 64, n: 1, user: 'e2e-user' },
      { headers: { 'x-request-id': id } },
    );
    const chunks = await collectStream(stream);
    const t1 = Date.now();
    assert.equal(chunks.map((c) => c.choices[0]?.delta?.content ?? '').join(''), '\n\nOK');
    const usage = chunks.at(-1).usage;
    assert.deepEqual([usage.prompt_tokens, usage.completion_tokens, usage.total_tokens], [57, 28, 85], 'the client asked for usage: it gets the engine chunk');

    const { span, tp } = await entrySpanOf(id);
    assertEntrySpan(span, { name: `chat ${MODEL_REASONING}`, spanKind: 'LLM', operation: 'chat', model: MODEL_REASONING });
    assertOk(span);
    assert.equal(span.parentSpanId, '', 'no client traceparent: the entry span is a root');
    assert.equal(tp.flags, '01');
    assertAttr(span, 'gen_ai.request.id', 'b2718869cf124b6a81ac2aaddf1f62be', 'string');
    assertAttr(span, 'gen_ai.request.is_stream', true, 'bool');
    assertAttr(span, 'gen_ai.request.temperature', 0.6, 'double');
    assertAttr(span, 'gen_ai.request.top_p', 0.95, 'double');
    assertAttr(span, 'gen_ai.request.top_k', 20, 'int');
    assertAttr(span, 'gen_ai.request.max_tokens', 64, 'int');
    assertAttr(span, 'gen_ai.request.choice.count', 1, 'int');
    assertAttr(span, 'gen_ai.response.id', 'b2718869cf124b6a81ac2aaddf1f62be', 'string');
    assertNoAttr(span, 'gen_ai.response.model'); // M4.1: non-streaming only
    assertAttr(span, 'gen_ai.response.finish_reasons', ['stop'], 'array<string>');
    assertAttr(span, 'gen_ai.usage.input_tokens', 57, 'int');
    assertAttr(span, 'gen_ai.usage.output_tokens', 28, 'int');
    assertAttr(span, 'gen_ai.usage.total_tokens', 85, 'int');
    assertNoAttr(span, 'gen_ai.usage.cache_read.input_tokens'); // prompt_tokens_details: null
    assertAttr(span, 'gen_ai.response.tokens_streamed', REASONING_DELTAS * SERVER_STREAM_INTERVAL, 'int');
    assert.equal(span.attributeTypes['gen_ai.latency.e2e'], 'double');
    const e2e = span.attributes['gen_ai.latency.e2e'];
    const spanSeconds = Number(span.endTimeUnixNano - span.startTimeUnixNano) / 1e9;
    assert.ok(e2e > 0 && e2e <= (t1 - t0) / 1000 + 0.05, `e2e ${e2e} s within the client's ${(t1 - t0) / 1000} s`);
    assert.ok(Math.abs(e2e - spanSeconds) < 0.005, `e2e ${e2e} s is the span's length ${spanSeconds} s`);
    assertAttr(span, 'gen_ai.request.has_tool_calls', false, 'bool');
    assertAttr(span, 'gen_ai.request.tool_call_detected', false, 'bool');
    assertAttr(span, 'gen_ai.request.tool_calls_count', 0, 'int');
    assertNoAttr(span, 'gen_ai.completions.0.tool_calls.0.name');
    assert.deepEqual(jsonAttr(span, 'gen_ai.input.messages'), [{ role: 'user', parts: [{ type: 'text', content: 'Reply with exactly: OK' }] }]);
    const out = jsonAttr(span, 'gen_ai.output.messages');
    assert.equal(out[0].finish_reason, 'stop');
    assert.deepEqual(out[0].parts.map((p) => p.type), ['reasoning', 'text']);
    // M4.1 lists neither; SGLang's streams are identified by gen_ai.request.id.
    assertNoAttr(span, 'session.id');
    assertNoAttr(span, 'gen_ai.user.id');
    assert.equal(span.events.length, 0, 'no custom span events on entry spans');
    assert.equal(span.resource['service.name'], APP);
  });

  test('the stream reaches the client byte for byte; a usage chunk it did not ask for is removed', async () => {
    const id = xrid('raw');
    const r = await fetch(`${agent.url}/v1/chat/completions`, {
      method: 'POST',
      headers: { 'content-type': 'application/json', 'x-request-id': id },
      body: JSON.stringify({ model: MODEL_REASONING, messages: [{ role: 'user', content: 'Reply with exactly: OK' }], stream: true, stream_options: { include_usage: true } }),
    });
    assert.equal(r.status, 200);
    assert.deepEqual(Buffer.from(await r.arrayBuffer()), REASONING, 'the agent relays the engine stream unchanged');

    const id2 = xrid('nousage');
    const stream = await client.chat.completions.create(
      { model: MODEL_REASONING, messages: [{ role: 'user', content: 'Reply with exactly: OK' }], stream: true },
      { headers: { 'x-request-id': id2 } },
    );
    const chunks = await collectStream(stream);
    assert.ok(chunks.every((c) => !c.usage), 'no usage chunk for a client that did not ask');
    const { span, tp } = await entrySpanOf(id2);
    assert.equal(tp.request.json.stream_options?.include_usage, true, 'the gateway asked the engine for usage');
    assertAttr(span, 'gen_ai.usage.output_tokens', 28, 'int');
    assertAttr(span, 'gen_ai.response.tokens_streamed', REASONING_DELTAS * SERVER_STREAM_INTERVAL, 'int');
  });

  test('parallel tool calls streamed: names, accumulated arguments, count; tokens_streamed fills missing usage', async () => {
    const id = xrid('tools');
    const tools = [{ type: 'function', function: { name: 'get_weather', parameters: { type: 'object', properties: { city: { type: 'string' } } } } }];
    const stream = await client.chat.completions.create(
      // stream_interval in the body (SGLang's per-request override) wins over the server's.
      { model: MODEL_TOOLS, messages: [{ role: 'user', content: 'Weather in Paris and Tokyo?' }], tools, stream: true, stream_interval: 2 },
      { headers: { 'x-request-id': id } },
    );
    const chunks = await collectStream(stream);
    const calls = {};
    for (const c of chunks) {
      for (const tc of c.choices[0]?.delta?.tool_calls || []) {
        calls[tc.index] ||= { name: '', arguments: '' };
        calls[tc.index].name += tc.function?.name || '';
        calls[tc.index].arguments += tc.function?.arguments || '';
      }
    }
    assert.deepEqual(calls, { 0: { name: 'get_weather', arguments: '{"city": "Paris"}' }, 1: { name: 'get_weather', arguments: '{"city": "Tokyo"}' } });

    const { span } = await entrySpanOf(id);
    assertEntrySpan(span, { name: `chat ${MODEL_TOOLS}`, spanKind: 'LLM', operation: 'chat', model: MODEL_TOOLS });
    assertAttr(span, 'gen_ai.request.has_tool_calls', true, 'bool');
    assertAttr(span, 'gen_ai.request.tool_call_detected', true, 'bool');
    assertAttr(span, 'gen_ai.request.tool_calls_count', 2, 'int');
    for (const [j, city] of [[0, 'Paris'], [1, 'Tokyo']]) {
      assertAttr(span, `gen_ai.completions.0.tool_calls.${j}.name`, 'get_weather', 'string');
      assertAttr(span, `gen_ai.completions.0.tool_calls.${j}.arguments`, `{"city": "${city}"}`, 'string');
    }
    assertNoAttr(span, 'gen_ai.completions.0.tool_calls.2.name');
    assertAttr(span, 'gen_ai.response.finish_reasons', ['tool_calls'], 'array<string>');
    assertAttr(span, 'gen_ai.request.id', '669d24a3423f4012bece9b51f2028500', 'string');
    assertAttr(span, 'gen_ai.response.tokens_streamed', TOOLCALL_DELTAS * 2, 'int');
    // The capture has no usage chunk: the estimate stands in for the output tokens.
    assertAttr(span, 'gen_ai.usage.output_tokens', TOOLCALL_DELTAS * 2, 'int');
    assertNoAttr(span, 'gen_ai.usage.input_tokens');
  });

  test('non-streaming chat and text_completion: response model, cached tokens, e2e; no stream-only attributes', async () => {
    const id = xrid('plain');
    const r = await client.chat.completions.create({ model: 'e2e/plain', messages: [{ role: 'user', content: 'hi' }], max_tokens: 2 }, { headers: { 'x-request-id': id } });
    assert.equal(r.choices[0].message.content, 'OK');
    const { span } = await entrySpanOf(id);
    assertEntrySpan(span, { name: 'chat e2e/plain', spanKind: 'LLM', operation: 'chat', model: 'e2e/plain' });
    assertAttr(span, 'gen_ai.request.is_stream', false, 'bool');
    assertAttr(span, 'gen_ai.response.model', 'e2e/plain', 'string');
    assertAttr(span, 'gen_ai.response.id', 'f00dfeed0123456789abcdef00000001', 'string');
    assertAttr(span, 'gen_ai.usage.cache_read.input_tokens', 16, 'int');
    assertAttr(span, 'gen_ai.usage.output_tokens', 2, 'int');
    assert.equal(span.attributeTypes['gen_ai.latency.e2e'], 'double');
    for (const k of ['gen_ai.request.id', 'gen_ai.response.tokens_streamed', 'gen_ai.request.has_tool_calls', 'gen_ai.request.tool_calls_count']) assertNoAttr(span, k);

    const id2 = xrid('cmpl');
    const c = await client.completions.create({ model: 'e2e/plain', prompt: 'two plus two is', max_tokens: 4 }, { headers: { 'x-request-id': id2 } });
    assert.equal(c.choices[0].text, ' four');
    const { span: s2 } = await entrySpanOf(id2);
    assertEntrySpan(s2, { name: 'text_completion e2e/plain', spanKind: 'LLM', operation: 'text_completion', model: 'e2e/plain' });
    assertAttr(s2, 'gen_ai.response.finish_reasons', ['length'], 'array<string>');
    assertAttr(s2, 'gen_ai.usage.total_tokens', 9, 'int');
    // SGLang reports cached tokens only when there were some (--enable-cache-report); this
    // engine has reported some before, so none now means 0.
    assertAttr(s2, 'gen_ai.usage.cache_read.input_tokens', 0, 'int');
  });
});

// ---------------------------------------------------------------------------------------------
// (b) SGLang-shaped native spans from the OpenTelemetry JS SDK.

const ENGINE_RESOURCE = { 'service.name': 'sglang', 'e2e.engine.node': 'gpu-node-7' };

/**
 * An SGLang emitter: the JS SDK with SGLang's resource and scope, exporting each span as it
 * ends to the agent's receiver (gRPC, or OTLP/HTTP protobuf with `http`).
 */
function sglangEmitter({ http: useHttp = false } = {}) {
  const provider = new BasicTracerProvider({ resource: new Resource(ENGINE_RESOURCE) });
  const exporter = useHttp ? new OTLPProtoExporter({ url: `${agent.receiverHttp}/v1/traces` }) : new OTLPGrpcExporter({ url: `http://${agent.receiverGrpc}` });
  provider.addSpanProcessor(new SimpleSpanProcessor(exporter));
  return { provider, tracer: provider.getTracer('sglang server') };
}

const remote = (traceId, spanId) => trace.setSpanContext(ROOT_CONTEXT, { traceId, spanId, traceFlags: TraceFlags.SAMPLED, isRemote: true });

/**
 * One request's native spans as SGLang makes them (facts sglang.md §1.4): request span under
 * `parent`, a Tokenizer and a Scheduler thread span, first-level stages linked to the previous
 * one, chunked_prefill and decode_loop nested, a `schedule` (level 3) and a `retract` (level 1)
 * event, run_batch_cpu (level 4). Everything the engine traces at level 4. Returns
 * {name: SpanContext} and the stage list.
 */
function emitRequest(tracer, parent, { rid = randomSpanId(), role = '', room, abort = false } = {}) {
  const base = Date.now() - 500;
  const at = (ms) => base + ms;
  const ids = {};
  const reqAttrs = { rid, module: 'sglang::request', 'gen_ai.request.id': rid, 'gen_ai.usage.prompt_tokens': 14, 'gen_ai.usage.completion_tokens': 8, 'gen_ai.latency.e2e': 0.19 };
  if (room) reqAttrs.bootstrap_room = room;
  const req = tracer.startSpan(`${role} Req ${rid.slice(0, 8)}`, { attributes: reqAttrs, startTime: at(0) }, parent);
  const reqCtx = trace.setSpan(ROOT_CONTEXT, req);
  // Thread labels under PD: "PrefillTokenizer", "Prefill Scheduler" (facts §1.4, §1.5).
  const cap = role ? `${role[0].toUpperCase()}${role.slice(1)}` : '';
  const tokLabel = `${cap}Tokenizer`;
  const schLabel = role ? `${cap} Scheduler` : 'Scheduler';
  const tok = tracer.startSpan(`${tokLabel}(host:3f2a9c1d | pid:12001)`, { attributes: { host_id: '3f2a9c1d0000', pid: 12001, thread_label: tokLabel }, startTime: at(0) }, reqCtx);
  const tokCtx = trace.setSpan(ROOT_CONTEXT, tok);
  let prev;
  const stage = (name, ctx, start, end, { link = true, attributes, events = [] } = {}) => {
    const s = tracer.startSpan(name, { attributes, startTime: at(start), links: link && prev ? [{ context: prev }] : [] }, ctx);
    for (const e of events) s.addEvent(e.name, e.attributes, at(e.at));
    s.end(at(end));
    ids[name] = s.spanContext();
    if (link) prev = s.spanContext();
    return s;
  };
  stage('tokenize', tokCtx, 0, 4);
  stage('api_server_dispatch', tokCtx, 4, 5);
  tok.end(at(5));
  ids.Tokenizer = tok.spanContext();
  const sch = tracer.startSpan(`${schLabel} [TP 0] (host:3f2a9c1d | pid:12345)`, { attributes: { host_id: '3f2a9c1d0000', pid: 12345, thread_label: schLabel, tp_rank: 0 }, startTime: at(6) }, reqCtx);
  const schCtx = trace.setSpan(ROOT_CONTEXT, sch);
  stage('request_process', schCtx, 6, 7);
  stage('prefill_waiting', schCtx, 7, 20, { events: [{ name: 'retract', at: 10 }] });
  const pf = tracer.startSpan('prefill_forward', { startTime: at(20), links: [{ context: prev }] }, schCtx);
  const pfCtx = trace.setSpan(ROOT_CONTEXT, pf);
  stage('chunked_prefill', pfCtx, 20, 30, { link: false });
  pf.addEvent('schedule', { bid: '0a1b2c3d', batch_size: 4, forward_mode: 'prefill' }, at(21));
  pf.end(at(40));
  ids.prefill_forward = pf.spanContext();
  prev = pf.spanContext();
  const df = tracer.startSpan('decode_forward', { startTime: at(40), links: [{ context: prev }] }, schCtx);
  const dfCtx = trace.setSpan(ROOT_CONTEXT, df);
  stage('decode_loop', dfCtx, 40, 50, { link: false, attributes: { decode_ct: 0 } });
  stage('run_batch_cpu', schCtx, 50, 51, { link: false, attributes: { pp_mb_id: 0 } });
  df.end(at(60));
  ids.decode_forward = df.spanContext();
  if (abort) {
    sch.setAttributes({ type: 'abort', message: 'client disconnected', status_code: 499 });
    sch.setStatus({ code: SpanStatusCode.ERROR });
  }
  sch.end(at(60));
  ids.Scheduler = sch.spanContext();
  req.end(at(61));
  ids.Req = req.spanContext();
  return ids;
}

const LEVELS = { tokenize: 1, api_server_dispatch: 2, request_process: 2, prefill_waiting: 1, prefill_forward: 1, chunked_prefill: 3, decode_forward: 1, decode_loop: 3, run_batch_cpu: 4 };
const ALWAYS = ['Req', 'Tokenizer', 'Scheduler'];
const kept = (level) => (level <= 0 ? [] : [...ALWAYS, ...Object.keys(LEVELS).filter((n) => LEVELS[n] <= level)]);

/** A request through the agent; resolves the traceparent the upstream got. */
async function requestThroughAgent(tag) {
  const id = xrid(tag);
  await client.chat.completions.create({ model: 'e2e/native', messages: [{ role: 'user', content: 'hi' }], max_tokens: 2 }, { headers: { 'x-request-id': id } });
  const { span, tp } = await entrySpanOf(id);
  return { entry: span, tp };
}

/**
 * Waits for the kept spans of `ids` to be exported (and for the agent to have counted the
 * dropped ones), then returns {name: exported span} of what arrived.
 */
async function exportedOf(ids, expectNames, droppedBefore, dropped) {
  const want = expectNames.map((n) => ids[n].spanId);
  await rx.waitForSpans((s) => want.includes(s.spanId), SPAN_TIMEOUT, { count: want.length });
  await pollUntil(async () => (await selfMetric(agent, 'infertel_assembler_sglang_level_dropped_total')) >= droppedBefore + dropped, { timeoutMs: 5000 });
  await sleep(300); // anything wrongly kept would arrive with the rest
  const out = {};
  for (const [name, ctx] of Object.entries(ids)) {
    const s = rx.spans.find((x) => x.spanId === ctx.spanId);
    if (s) out[name] = s;
  }
  return out;
}

describe('(b) native spans from the OpenTelemetry JS SDK', () => {
  test('level 3 (default): one trace under the entry span, the agent resource, names, links, events unchanged', async () => {
    const { entry, tp } = await requestThroughAgent('native3');
    const { provider, tracer } = sglangEmitter();
    const before = await selfMetric(agent, 'infertel_assembler_sglang_level_dropped_total');
    const ids = emitRequest(tracer, remote(tp.traceId, tp.spanId));
    await provider.forceFlush();
    await provider.shutdown();
    const got = await exportedOf(ids, kept(3), before, 1);
    assert.deepEqual(Object.keys(got).sort(), kept(3).sort(), 'level 3 drops only run_batch_cpu');
    for (const s of Object.values(got)) {
      assert.equal(s.traceId, entry.traceId, `${s.name} is in the entry span's trace`);
      assert.equal(s.scope.name, 'sglang server');
      assert.equal(s.resource['service.name'], APP, `${s.name}: the agent's application`);
      assert.equal(s.resource['infertel.engine.service.name'], 'sglang');
      assert.equal(s.resource['e2e.engine.node'], 'gpu-node-7', 'an engine-only resource attribute is kept');
      assert.equal(s.resource['telemetry.sdk.language'], entry.resource['telemetry.sdk.language'], 'the SDK described is the agent\'s');
      for (const [k, v] of Object.entries(entry.resource)) assert.deepEqual(s.resource[k], v, `resource ${k}`);
      assert.equal(s.kind, SPAN_KIND.INTERNAL);
    }
    assert.equal(got.Req.parentSpanId, entry.spanId, 'the request span hangs under the entry span');
    assert.equal(got.Req.name, ` Req ${got.Req.attributes.rid.slice(0, 8)}`);
    assert.equal(got.Tokenizer.parentSpanId, got.Req.spanId);
    assert.equal(got.Scheduler.parentSpanId, got.Req.spanId);
    assert.equal(got.decode_loop.parentSpanId, got.decode_forward.spanId);
    assert.equal(got.chunked_prefill.parentSpanId, got.prefill_forward.spanId);
    assertAttr(got.decode_loop, 'decode_ct', 0, 'int');
    // Links: each first-level stage to the previous one, untouched.
    const linkOf = (n) => got[n].links.map((l) => l.spanId);
    assert.deepEqual(linkOf('api_server_dispatch'), [ids.tokenize.spanId]);
    assert.deepEqual(linkOf('request_process'), [ids.api_server_dispatch.spanId]);
    assert.deepEqual(linkOf('prefill_waiting'), [ids.request_process.spanId]);
    assert.deepEqual(linkOf('decode_forward'), [ids.prefill_forward.spanId]);
    assert.deepEqual(got.prefill_forward.events.map((e) => e.name), ['schedule']);
    assert.deepEqual(got.prefill_waiting.events.map((e) => e.name), ['retract']);
  });

  test('level 1 at arrival: level-2/3 stages and the schedule event dropped, links mended; a later change does not apply', async () => {
    await putConfig(agent, SGL_LEVEL, 1);
    const { entry, tp } = await requestThroughAgent('native1');
    await putConfig(agent, SGL_LEVEL, 3); // after arrival: the request keeps level 1
    const { provider, tracer } = sglangEmitter({ http: true });
    const before = await selfMetric(agent, 'infertel_assembler_sglang_level_dropped_total');
    const ids = emitRequest(tracer, remote(tp.traceId, tp.spanId));
    await provider.forceFlush();
    await provider.shutdown();
    const got = await exportedOf(ids, kept(1), before, 5);
    assert.deepEqual(Object.keys(got).sort(), kept(1).sort());
    assert.equal(got.Req.parentSpanId, entry.spanId);
    // SGLang at level 1 links prefill_waiting to tokenize: the stages between were never made.
    assert.deepEqual(got.prefill_waiting.links.map((l) => l.spanId), [ids.tokenize.spanId]);
    assert.deepEqual(got.prefill_forward.events, [], 'schedule is a level-3 event');
    assert.deepEqual(got.prefill_waiting.events.map((e) => e.name), ['retract'], 'retract is level 1');
  });

  test('levels 0 and 4, and the current level for a trace the gateway did not start', async () => {
    await putConfig(agent, SGL_LEVEL, 0);
    const { tp: tp0 } = await requestThroughAgent('native0');
    await putConfig(agent, SGL_LEVEL, 4);
    const { tp: tp4 } = await requestThroughAgent('native4');
    const { provider, tracer } = sglangEmitter();
    const before = await selfMetric(agent, 'infertel_assembler_sglang_level_dropped_total');
    // One request at a time: the exporter refuses more than 30 exports in flight.
    const ids0 = emitRequest(tracer, remote(tp0.traceId, tp0.spanId));
    await provider.forceFlush();
    const ids4 = emitRequest(tracer, remote(tp4.traceId, tp4.spanId));
    await provider.forceFlush();
    const idsX = emitRequest(tracer, remote(randomTraceId(), randomSpanId())); // current level: 4
    await provider.forceFlush();
    await provider.shutdown();
    const got4 = await exportedOf(ids4, kept(4), before, 12);
    assert.deepEqual(Object.keys(got4).sort(), kept(4).sort(), 'level 4 adds run_batch_cpu');
    const gotX = await exportedOf(idsX, kept(4), before, 12);
    assert.deepEqual(Object.keys(gotX).sort(), kept(4).sort());
    const got0 = await exportedOf(ids0, [], before, 12);
    assert.deepEqual(Object.keys(got0), [], 'level 0: no native span at all');
    await putConfig(agent, SGL_LEVEL, 3);
  });

  test('abort: the thread span keeps its ERROR status and finish-reason attributes; the request span has none', async () => {
    const { tp } = await requestThroughAgent('abort');
    const { provider, tracer } = sglangEmitter();
    const before = await selfMetric(agent, 'infertel_assembler_sglang_level_dropped_total');
    const ids = emitRequest(tracer, remote(tp.traceId, tp.spanId), { abort: true });
    await provider.forceFlush();
    await provider.shutdown();
    const got = await exportedOf(ids, kept(3), before, 1);
    assert.equal(got.Scheduler.status.code, STATUS_CODE.ERROR, showSpan(got.Scheduler));
    assertAttr(got.Scheduler, 'type', 'abort', 'string');
    assertAttr(got.Scheduler, 'status_code', 499, 'int');
    assert.notEqual(got.Req.status.code, STATUS_CODE.ERROR);
  });

  test('PD: prefill and decode request spans of one bootstrap_room are linked (beyond the spec)', async () => {
    const { tp: tpP } = await requestThroughAgent('pd-prefill');
    const { tp: tpD } = await requestThroughAgent('pd-decode');
    const room = `0x${randomSpanId()}`;
    const before = await selfMetric(agent, 'infertel_assembler_sglang_level_dropped_total');
    const { provider, tracer } = sglangEmitter();
    const p = emitRequest(tracer, remote(tpP.traceId, tpP.spanId), { role: 'prefill', room, rid: 'a1b2c3d4e5f6' });
    await provider.forceFlush();
    const prefill = await rx.waitForSpan((s) => s.spanId === p.Req.spanId, SPAN_TIMEOUT);
    const d = emitRequest(tracer, remote(tpD.traceId, tpD.spanId), { role: 'decode', room, rid: 'a1b2c3d4e5f6' });
    await provider.forceFlush();
    await provider.shutdown();
    const got = await exportedOf(d, kept(3), before, 2);
    assert.equal(prefill.name, 'prefill Req a1b2c3d4');
    assert.equal(got.Req.name, 'decode Req a1b2c3d4');
    assert.notEqual(got.Req.traceId, prefill.traceId, 'two traces, by SGLang\'s design');
    assert.equal(got.Req.links.length, 1, showSpan(got.Req));
    const link = got.Req.links[0];
    assert.deepEqual([link.traceId, link.spanId], [prefill.traceId, prefill.spanId]);
    assert.deepEqual(link.attributes, { bootstrap_room: room, 'infertel.pd.peer_role': 'prefill' });
    assert.equal(prefill.links.length, 0, 'the first to arrive is already exported');
    assert.ok((await selfMetric(agent, 'infertel_assembler_sglang_pd_links_total')) >= 1);
    assert.equal(got.Scheduler.name, 'Decode Scheduler [TP 0] (host:3f2a9c1d | pid:12345)');
  });
});

// ---------------------------------------------------------------------------------------------
// (c) The SGLang simulator behind the agent, its native spans sent to the agent's receiver.

const SIM_MODEL = 'e2e-org/sglang-sim-8b';
// SGLang's batching of native spans, shortened so that a test waits less.
const SIM_ENV = { SGLANG_OTLP_EXPORTER_SCHEDULE_DELAY_MILLIS: '50', OTEL_BSP_SCHEDULE_DELAY: '50' };
const FIRST_LEVEL = new Set(['tokenize', 'api_server_dispatch', 'request_process', 'prefill_waiting', 'prefill_forward', 'decode_waiting', 'decode_forward', 'prefill_prepare', 'prefill_bootstrap', 'prefill_transfer_kv_cache', 'decode_prepare', 'decode_bootstrap', 'decode_transferred']);
// M4.4.
const STAGE_LEVEL = {
  tokenize: 1, api_server_dispatch: 2, dpc_dispatch: 2, request_process: 2, prefill_waiting: 1, prefill_forward: 1, chunked_prefill: 3,
  decode_waiting: 1, decode_forward: 1, decode_loop: 3, spec_draft: 2, spec_verify: 2, spec_draft_extend: 3, run_batch_cpu: 4,
  prefill_prepare: 1, prefill_bootstrap: 1, prefill_transfer_kv_cache: 1, decode_prepare: 1, decode_bootstrap: 1, decode_transferred: 1, fake_output: 3, quick_finish: 1,
};

/**
 * A proxy that hides /set_trace_level from the engine behind it (answers "success" itself), so
 * that the engine keeps tracing at its own level whatever the agent asks: an engine that sends
 * more than asked. Everything else passes through, streams included.
 */
async function startLevelBlind(target) {
  const t = new URL(target);
  const hidden = [];
  const server = http.createServer((req, res) => {
    if (req.url.startsWith('/set_trace_level')) {
      hidden.push(req.url);
      req.resume();
      res.writeHead(200, { 'content-type': 'application/json' }).end('"success"');
      return;
    }
    const up = http.request({ host: t.hostname, port: t.port, method: req.method, path: req.url, headers: { ...req.headers, host: t.host } }, (ures) => {
      res.writeHead(ures.statusCode, ures.headers);
      ures.pipe(res);
    });
    up.on('error', () => res.destroy());
    res.on('close', () => {
      if (!res.writableFinished) up.destroy();
    });
    req.pipe(up);
  });
  await new Promise((r) => server.listen(0, '127.0.0.1', r));
  return {
    url: `http://127.0.0.1:${server.address().port}`,
    hidden,
    close: () =>
      new Promise((resolve) => {
        server.closeAllConnections?.();
        server.close(() => resolve());
      }),
  };
}

/**
 * An agent in front of an SGLang simulator whose native spans go to the agent's gRPC receiver
 * (SGLang's `--otlp-traces-endpoint <ip>:<port>`). `blind`: a level-blind proxy in between.
 */
async function startSglPair(rxc, opts = {}) {
  // The engine's port is reserved before the agent starts (the agent needs its URL), so a
  // port the agent or another process takes in between makes the simulator fail to listen:
  // then the pair is started again on a new port.
  for (let attempt = 1; ; attempt++) {
    try {
      return await startSglPairOnce(rxc, opts);
    } catch (e) {
      if (attempt >= 3 || !/Address already in use/.test(String(e.message))) throw e;
      await stopPair(rxc.lastPair);
    }
  }
}

async function startSglPairOnce(rxc, { simExtra = [], simEnv = {}, blind = false, speed = 2 } = {}) {
  const port = await closedPort();
  let proxy;
  let upstreamUrl = `http://127.0.0.1:${port}`;
  if (blind) {
    proxy = await startLevelBlind(upstreamUrl);
    upstreamUrl = proxy.url;
  }
  const a = await startAgent({ engine: 'sglang', upstream: upstreamUrl, otlp: { endpoint: rxc.endpoint, protocol: 'grpc' }, env: { OTEL_SERVICE_NAME: APP } });
  rxc.lastPair = { agent: a, proxy };
  const sim = await startSim({
    engine: 'sglang',
    model: SIM_MODEL,
    seed: 7,
    speed,
    listen: `127.0.0.1:${port}`,
    extra: ['--enable-trace', '--otlp-traces-endpoint', a.receiverGrpc, '--stream-abort-delay-ms', '100', ...simExtra],
    env: { ...SIM_ENV, ...simEnv },
  });
  rxc.diag = () => `${a.describe()}\n${sim.describe()}`;
  return { agent: a, sim, proxy, client: openaiClient(a.url) };
}

/** Sets the agent's SGLang level and waits until the console has applied it to the engine. */
async function setLevel(p, level) {
  await putConfig(p.agent, SGL_LEVEL, level);
  const applied = await pollUntil(async () => (await get(`${p.sim.url}/_sim/stats`)).json?.trace_level === level, { timeoutMs: 5000 });
  assert.ok(applied, `the engine never got trace level ${level}`);
}

async function stopPair(p) {
  if (!p) return;
  await stopAll(p.agent, p.sim);
  await p.proxy?.close();
}

/**
 * A streamed chat through the pair; resolves {entry, native} with the entry span and every
 * native span of its trace, once the request span (the last SGLang ends) has arrived and the
 * rest had time to follow. `expectNative` false: waits `settleMs` and expects none.
 */
async function chatTree(rxc, p, { extra = {}, expectNative = true, settleMs = 700 } = {}) {
  const stream = await p.client.chat.completions.create({ model: SIM_MODEL, messages: [{ role: 'user', content: 'Name three prime numbers.' }], max_tokens: 12, stream: true, ...extra });
  const chunks = await collectStream(stream);
  const rid = chunks[0].id;
  const entry = await rxc.waitForSpan((s) => s.name === `chat ${SIM_MODEL}` && s.attributes['gen_ai.response.id'] === rid, SPAN_TIMEOUT);
  if (expectNative) await rxc.waitForSpan((s) => s.traceId === entry.traceId && / Req /.test(` ${s.name}`) && s.scope.name === 'sglang server', SPAN_TIMEOUT);
  await sleep(settleMs);
  const native = rxc.spans.filter((s) => s.traceId === entry.traceId && s.spanId !== entry.spanId);
  return { entry, native, rid, chunks };
}

const isReq = (s) => /^(prefill |decode )? ?Req /.test(s.name) || s.name.startsWith(' Req ');
const isThread = (s) => 'thread_label' in s.attributes;
const stagesOf = (native) => native.filter((s) => !isReq(s) && !isThread(s));

/** Asserts M4's tree: request → thread → stage, stages nested only in stages, links in order. */
function assertTree(entry, native, { threads = 2 } = {}) {
  const reqs = native.filter(isReq);
  assert.equal(reqs.length, 1, `one request span\n${native.map((s) => s.name).join('\n')}`);
  const req = reqs[0];
  assert.equal(req.parentSpanId, entry.spanId, 'the request span hangs under the entry span');
  const byId = new Map(native.map((s) => [s.spanId, s]));
  const thr = native.filter(isThread);
  assert.equal(thr.length, threads, `thread spans: ${thr.map((s) => s.name).join(', ')}`);
  for (const t of thr) {
    assert.equal(t.parentSpanId, req.spanId, `${t.name} under the request span`);
    assert.match(t.name, /\(host:[^ ]+ \| pid:\d+\)$/);
  }
  for (const s of stagesOf(native)) {
    assert.ok(s.name in STAGE_LEVEL, `unknown stage ${s.name}`);
    const parent = byId.get(s.parentSpanId);
    assert.ok(parent && (isThread(parent) || parent.name in STAGE_LEVEL), `${s.name}: parent is a thread or stage span`);
    for (const l of s.links) {
      const to = byId.get(l.spanId);
      assert.ok(to, `${s.name} links to a span of the same request`);
      assert.ok(to.endTimeUnixNano <= s.startTimeUnixNano + 1000000n, `${s.name} links to an earlier stage (${to.name})`);
    }
  }
  for (const s of native) {
    assert.equal(s.kind, SPAN_KIND.INTERNAL);
    assert.equal(s.resource['service.name'], APP, `${s.name}: the agent's application`);
    assert.equal(s.resource['infertel.engine.service.name'], 'sglang');
    assert.equal(s.scope.name, 'sglang server');
  }
  return { req, threads: thr };
}

describe('(c) the SGLang simulator behind the agent', () => {
  let rxc;
  let pair;
  before(async () => {
    rxc = await startGrpcReceiver();
  });
  after(async () => {
    await stopPair(pair);
    await rxc?.close();
  });

  test('M4 tree under the entry span: Req → Tokenizer/Scheduler → stages, links in order', async () => {
    pair = await startSglPair(rxc);
    const { entry, native, rid } = await chatTree(rxc, pair);
    const { req, threads } = assertTree(entry, native);
    assertAttr(entry, 'gen_ai.request.id', rid, 'string');
    assertAttr(req, 'rid', rid.split('_').at(-1), 'string');
    assertAttr(req, 'module', 'sglang::request', 'string');
    assert.equal(req.name, ` Req ${rid.slice(0, 8)}`);
    assert.notEqual(req.status.code, STATUS_CODE.ERROR);
    const tok = threads.find((t) => t.attributes.thread_label === 'Tokenizer');
    const sch = threads.find((t) => t.attributes.thread_label === 'Scheduler');
    assert.ok(tok && sch, threads.map((t) => t.name).join(', '));
    const names = (parent) => native.filter((s) => s.parentSpanId === parent.spanId).map((s) => s.name);
    assert.deepEqual(names(tok).sort(), ['api_server_dispatch', 'tokenize']);
    for (const n of ['request_process', 'prefill_waiting', 'prefill_forward', 'decode_forward']) assert.ok(names(sch).includes(n), `${n} under the scheduler: ${names(sch)}`);
    const df = native.find((s) => s.name === 'decode_forward');
    assert.ok(names(df).includes('decode_loop'), 'decode_loop nested in decode_forward');
    // The first scheduler stage links across processes to the tokenizer's dispatch.
    const rp = native.find((s) => s.name === 'request_process');
    const asd = native.find((s) => s.name === 'api_server_dispatch');
    assert.deepEqual(rp.links.map((l) => l.spanId), [asd.spanId]);
  });

  test('levels 0-4 applied through the console: the engine traces what is asked', async () => {
    for (const level of [0, 1, 2, 3, 4]) {
      await setLevel(pair, level);
      const { entry, native } = await chatTree(rxc, pair, { expectNative: level > 0 });
      if (level === 0) {
        assert.deepEqual(native.map((s) => s.name), [], 'level 0: no native span');
        continue;
      }
      assertTree(entry, native);
      const stages = new Set(stagesOf(native).map((s) => s.name));
      for (const n of stages) assert.ok(STAGE_LEVEL[n] <= level, `level ${level}: ${n} (level ${STAGE_LEVEL[n]})`);
      // facts §1.4, upstream tests: level 1 → prefill_forward, decode_forward; 2 → + request_process; 3 → + decode_loop.
      const must = ['prefill_forward', 'decode_forward', ...(level >= 2 ? ['request_process'] : []), ...(level >= 3 ? ['decode_loop'] : [])];
      for (const n of must) assert.ok(stages.has(n), `level ${level} lacks ${n}: ${[...stages]}`);
    }
    await setLevel(pair, 3);
  });

  test('abort: the client leaves mid-stream; ERROR and the reason on the thread span, not on the request span', async () => {
    const ac = new AbortController();
    const t0 = Date.now();
    const stream = await pair.client.chat.completions.create({ model: SIM_MODEL, messages: [{ role: 'user', content: 'Write a long story.' }], max_tokens: 400, stream: true, ignore_eos: true }, { signal: ac.signal });
    let rid;
    try {
      for await (const c of stream) {
        rid = c.id;
        if (c.choices[0]?.delta?.content) ac.abort();
      }
    } catch {
      // aborted by us
    }
    assert.ok(rid, 'got a first chunk');
    const entry = await rxc.waitForSpan((s) => s.name === `chat ${SIM_MODEL}` && s.attributes['gen_ai.response.id'] === rid, SPAN_TIMEOUT);
    assert.equal(entry.status.code, STATUS_CODE.ERROR);
    const errThread = await rxc.waitForSpan((s) => s.traceId === entry.traceId && isThread(s) && s.status.code === STATUS_CODE.ERROR, SPAN_TIMEOUT);
    await sleep(700);
    const native = rxc.spans.filter((s) => s.traceId === entry.traceId && s.spanId !== entry.spanId);
    assert.ok(errThread.attributes.thread_label.includes('Scheduler') || errThread.attributes.thread_label.includes('Tokenizer'), showSpan(errThread));
    assert.ok(Object.keys(errThread.attributes).some((k) => ['type', 'reason', 'message'].includes(k)), `finish reason on the thread span\n${showSpan(errThread)}`);
    const req = native.find(isReq);
    if (req) assert.notEqual(req.status.code, STATUS_CODE.ERROR, 'the request span is never ERROR');
    assert.ok(Date.now() - t0 < 20000);
  });

  test('an engine that traces more than asked: the agent drops above the level of each request', async () => {
    await stopPair(pair);
    pair = await startSglPair(rxc, { blind: true, simEnv: { SGLANG_TRACE_LEVEL: '3' } });
    await putConfig(pair.agent, SGL_LEVEL, 1);
    // The console applies engine knobs off the data path: wait until it has asked.
    assert.ok(await pollUntil(() => pair.proxy.hidden.some((u) => u.includes('level=1'))), `the agent asks the engine for level 1 (hidden from it): ${pair.proxy.hidden}`);
    const before = await selfMetric(pair.agent, 'infertel_assembler_sglang_level_dropped_total');
    const { entry, native } = await chatTree(rxc, pair);
    const { req } = assertTree(entry, native);
    const stages = stagesOf(native);
    for (const s of stages) assert.equal(STAGE_LEVEL[s.name], 1, `level 1 keeps ${s.name}?`);
    assert.ok((await selfMetric(pair.agent, 'infertel_assembler_sglang_level_dropped_total')) > before, 'the agent dropped what the engine sent beyond level 1');
    // Links are mended past the dropped stages: the first scheduler stage now links to tokenize.
    const byId = new Map(native.map((s) => [s.spanId, s]));
    for (const s of stages) for (const l of s.links) assert.ok(byId.has(l.spanId), `${s.name}: link to a kept span`);
    const firstSched = stages.filter((s) => s.links.length && byId.get(s.links[0].spanId).name === 'tokenize');
    assert.equal(firstSched.length, 1, stages.map((s) => `${s.name}→${s.links.map((l) => byId.get(l.spanId)?.name)}`).join(', '));
    assert.ok(req);
    await putConfig(pair.agent, SGL_LEVEL, 3);
  });

  test('TP=2: one scheduler thread span per rank, each with its own stages', async () => {
    await stopPair(pair);
    pair = await startSglPair(rxc, { simExtra: ['--tp', '2'] });
    const { entry, native } = await chatTree(rxc, pair);
    const { threads } = assertTree(entry, native, { threads: 3 });
    const sch = threads.filter((t) => t.attributes.thread_label === 'Scheduler');
    assert.deepEqual(sch.map((t) => t.attributes.tp_rank).sort(), [0, 1]);
    for (const t of sch) {
      assert.match(t.name, new RegExp(`^Scheduler \\[TP ${t.attributes.tp_rank}\\] `));
      const mine = native.filter((s) => s.parentSpanId === t.spanId).map((s) => s.name);
      for (const n of ['prefill_forward', 'decode_forward']) assert.ok(mine.includes(n), `TP ${t.attributes.tp_rank}: ${mine}`);
    }
  });

  test('speculative decoding: spec_draft, spec_verify (num_correct_drafts = accepted_tokens), spec_draft_extend', async () => {
    await stopPair(pair);
    pair = await startSglPair(rxc, { simExtra: ['--speculative-algorithm', 'EAGLE'] });
    const { entry, native } = await chatTree(rxc, pair);
    assertTree(entry, native);
    const names = new Set(native.map((s) => s.name));
    for (const n of ['spec_draft', 'spec_verify', 'spec_draft_extend']) assert.ok(names.has(n), `${n} missing: ${[...names]}`);
    for (const v of native.filter((s) => s.name === 'spec_verify')) {
      assert.equal(v.attributeTypes.num_correct_drafts, 'int', showSpan(v));
      assert.equal(v.attributes.accepted_tokens, v.attributes.num_correct_drafts);
    }
    // Level 2 keeps the draft and verify stages, not the level-3 extend.
    await setLevel(pair, 2);
    const t2 = await chatTree(rxc, pair);
    const n2 = new Set(t2.native.map((s) => s.name));
    assert.ok(n2.has('spec_verify') && !n2.has('spec_draft_extend'), [...n2].join(', '));
    await setLevel(pair, 3);
  });

  test('PD: prefill and decode nodes, two traces linked through bootstrap_room', async () => {
    await stopPair(pair);
    pair = undefined;
    const prefill = await startSglPair(rxc, { simExtra: ['--disaggregation-mode', 'prefill'] });
    // The decode node sends its spans to the same agent (its receiver), behind its own agent.
    const dport = await closedPort();
    const dagent = await startAgent({ engine: 'sglang', upstream: `http://127.0.0.1:${dport}`, otlp: { endpoint: rxc.endpoint, protocol: 'grpc' }, env: { OTEL_SERVICE_NAME: APP } });
    const dsim = await startSim({ engine: 'sglang', model: SIM_MODEL, seed: 7, speed: 2, listen: `127.0.0.1:${dport}`, extra: ['--enable-trace', '--otlp-traces-endpoint', prefill.agent.receiverGrpc, '--disaggregation-mode', 'decode'], env: SIM_ENV });
    try {
      const room = 4242000 + Math.floor(Math.random() * 1000);
      const body = { model: SIM_MODEL, messages: [{ role: 'user', content: 'Name three prime numbers.' }], max_tokens: 12, bootstrap_room: room, bootstrap_host: '127.0.0.1' };
      // As SGLang's router does: the same request to both nodes.
      const [rp, rd] = await Promise.all([prefill.client.chat.completions.create(body), openaiClient(dagent.url).chat.completions.create(body)]);
      const pEntry = await rxc.waitForSpan((s) => s.name === `chat ${SIM_MODEL}` && s.attributes['gen_ai.response.id'] === rp.id, SPAN_TIMEOUT);
      const dEntry = await rxc.waitForSpan((s) => s.name === `chat ${SIM_MODEL}` && s.attributes['gen_ai.response.id'] === rd.id, SPAN_TIMEOUT);
      assert.notEqual(pEntry.traceId, dEntry.traceId);
      const pReq = await rxc.waitForSpan((s) => s.traceId === pEntry.traceId && s.name.startsWith('prefill Req '), SPAN_TIMEOUT);
      const dReq = await rxc.waitForSpan((s) => s.traceId === dEntry.traceId && s.name.startsWith('decode Req '), SPAN_TIMEOUT);
      const hex = `0x${room.toString(16)}`;
      assertAttr(pReq, 'bootstrap_room', hex, 'string');
      assertAttr(dReq, 'bootstrap_room', hex, 'string');
      await sleep(700);
      const pNative = rxc.spans.filter((s) => s.traceId === pEntry.traceId);
      const dNative = rxc.spans.filter((s) => s.traceId === dEntry.traceId);
      const pNames = new Set(pNative.map((s) => s.name));
      const dNames = new Set(dNative.map((s) => s.name));
      for (const n of ['prefill_bootstrap', 'prefill_forward', 'prefill_transfer_kv_cache']) assert.ok(pNames.has(n), `prefill node lacks ${n}: ${[...pNames]}`);
      for (const n of ['decode_bootstrap', 'decode_transferred', 'decode_forward']) assert.ok(dNames.has(n), `decode node lacks ${n}: ${[...dNames]}`);
      assert.ok(!pNames.has('request_process') && !dNames.has('request_process'), 'request_process is non-PD only');
      assert.ok([...pNative, ...dNative].filter(isThread).some((t) => /^(Prefill|Decode) Scheduler/.test(t.name)));
      // The one that arrived second links to the other (beyond the spec).
      const links = [...pReq.links.map((l) => ({ from: pReq, l })), ...dReq.links.map((l) => ({ from: dReq, l }))];
      assert.equal(links.length, 1, `${showSpan(pReq)}\n${showSpan(dReq)}`);
      const { from, l } = links[0];
      const to = from === pReq ? dReq : pReq;
      assert.deepEqual([l.traceId, l.spanId], [to.traceId, to.spanId]);
      assert.deepEqual(l.attributes, { bootstrap_room: hex, 'infertel.pd.peer_role': from === pReq ? 'decode' : 'prefill' });
    } finally {
      await stopAll(dagent, dsim);
      await stopPair(prefill);
    }
  });
});
