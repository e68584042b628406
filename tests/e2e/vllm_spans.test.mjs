// End-to-end: vLLM's native engine spans (spec telemetry-model.md M1, M2.2-M2.5; the contract
// is docs/telemetry-reference.md "vLLM engine spans"). The simulator emits `llm_request` over
// OTLP to the agent's receiver; the agent joins it to its entry span, normalizes it, derives
// the phases and exports everything to a test receiver that decodes with the official protos.
// Traffic goes through the agent with the official openai client.
//
// Wiring: the agent is started first with `--upstream` on a reserved port, then the simulator
// listens on that port and sends its spans to the agent's OTLP gRPC receiver.
import assert from 'node:assert/strict';
import fs from 'node:fs';
import { after, before, describe, test } from 'node:test';

import { ROOT_CONTEXT, SpanKind, TraceFlags, trace } from '@opentelemetry/api';
import { OTLPTraceExporter as OTLPGrpcExporter } from '@opentelemetry/exporter-trace-otlp-grpc';
import { OTLPTraceExporter as OTLPProtoExporter } from '@opentelemetry/exporter-trace-otlp-proto';
import { Resource } from '@opentelemetry/resources';
import { BasicTracerProvider, SimpleSpanProcessor } from '@opentelemetry/sdk-trace-base';

import { SPAN_KIND, startGrpcReceiver } from './lib/otlp.mjs';
import { closedPort, pollUntil, startAgent, startSim, stopAll } from './lib/proc.mjs';
import { assertAttr, assertError, assertNoAttr, showSpan } from './lib/spans.mjs';
import { FIXTURES_DIR, collectStream, get, metricSum, normalize, openaiClient, parsePrometheus, randomSpanId, randomTraceId } from './lib/util.mjs';

const MODEL = 'e2e-org/vllm-spans-7b';
const SEED = 4321;
const SPAN_TIMEOUT = 10000;
const FIXTURE = `${FIXTURES_DIR}/vllm-llm_request-otlp-0.29.0-SANITIZED.json`;

// docs/telemetry-reference.md, "llm_request, V1".
const V1_DURATIONS = [
  'gen_ai.latency.e2e',
  'gen_ai.latency.time_in_queue',
  'gen_ai.latency.time_to_first_token',
  'gen_ai.latency.time_in_model_prefill',
  'gen_ai.latency.time_in_model_decode',
  'gen_ai.latency.time_in_model_inference',
];
const V1_ABSENT = [
  'gen_ai.latency.time_in_tokenize',
  'gen_ai.latency.time_in_detokenize',
  'gen_ai.latency.time_in_kv_transfer',
  'gen_ai.request.preemption_count',
];
// docs/telemetry-reference.md, "llm_request, V0" (with --collect-detailed-traces).
const V0_KEYS = {
  'gen_ai.request.id': 'string',
  'gen_ai.response.model': 'string',
  'gen_ai.request.temperature': 'double',
  'gen_ai.request.top_p': 'double',
  'gen_ai.request.max_tokens': 'int',
  'gen_ai.request.n': 'int',
  'gen_ai.usage.num_sequences': 'int',
  'gen_ai.usage.prompt_tokens': 'int',
  'gen_ai.usage.completion_tokens': 'int',
  'gen_ai.latency.e2e': 'double',
  'gen_ai.latency.time_in_queue': 'double',
  'gen_ai.latency.time_to_first_token': 'double',
  'gen_ai.latency.time_in_scheduler': 'double',
  'gen_ai.latency.time_in_model_forward': 'double',
  'gen_ai.latency.time_in_model_execute': 'double',
};
const PHASE_KEYS = ['gen_ai.request.id', 'gen_ai.request.model_name', 'gen_ai.engine.index', 'gen_ai.pd_role'];
const PHASES = ['wait', 'prefill', 'decode', 'kv_transfer'];

// A prompt long enough to fill several KV blocks, so that repeating it hits the prefix cache.
const LONG_PROMPT = Array.from({ length: 120 }, (_, i) => `word${i}`).join(' ');

const xrid = (tag) => `e2e-${tag}-${randomSpanId()}`;
const chat = (extra = {}) => ({ model: MODEL, messages: [{ role: 'user', content: 'Name three prime numbers.' }], max_tokens: 12, ...extra });
const dur = (s) => Number(s.endTimeUnixNano - s.startTimeUnixNano);
// The doc: cache_read = usage.prompt_tokens_details.cached_tokens of the engine's response, 0
// when the details object has no count, absent when there is no details object (vLLM sends
// `null` details when nothing was cached, even with --enable-prompt-tokens-details).
const expectedCached = (r) => {
  const d = r.usage?.prompt_tokens_details;
  if (!d || typeof d !== 'object') return undefined;
  return d.cached_tokens ?? 0;
};

// One test receiver for the whole file: every span is found by its request id and trace.
let rx;
const procs = [];

/**
 * An agent in front of a simulator whose native spans go to the agent's receiver. The agent
 * exports to `rx` over gRPC. Resolves {agent, sim, client}.
 */
async function startPair({ simExtra = [], agentExtra = [], agentEnv = {}, simEnv = {}, speed = 1 } = {}) {
  const port = await closedPort();
  const agent = await startAgent({
    upstream: `http://127.0.0.1:${port}`,
    otlp: { endpoint: rx.endpoint, protocol: 'grpc' },
    extra: agentExtra,
    env: { OTEL_INSTRUMENTATION_VLLM_TRACING_LEVEL: '1', ...agentEnv },
  });
  procs.push(agent);
  const sim = await startSim({
    model: MODEL,
    seed: SEED,
    speed,
    listen: `127.0.0.1:${port}`,
    extra: ['--otlp-traces-endpoint', `grpc://${agent.receiverGrpc}`, ...simExtra],
    env: { OTEL_BSP_SCHEDULE_DELAY: '100', ...simEnv },
  });
  procs.push(sim);
  const prev = rx.diag;
  rx.diag = () => `${prev ? prev() + '\n' : ''}${agent.describe()}\n${sim.describe()}`;
  return { agent, sim, client: openaiClient(agent.url) };
}

const entryOf = (id, op = 'chat') => (s) => s.name === `${op} ${MODEL}` && s.attributes['gen_ai.response.id'] === `${op === 'chat' ? 'chatcmpl' : 'cmpl'}-${id}`;
const llmOf = (id) => (s) => s.name === 'llm_request' && s.attributes['gen_ai.request.id'] === `chatcmpl-${id}`;

/**
 * A decoded message with proto3 zero-valued scalars removed: the JS exporter writes
 * `dropped*Count: 0` and `status.code: 0` explicitly, a proto3 encoder leaves them out; both mean the same on the
 * wire. Everything else (ids, attributes and their types, times, status) is kept.
 */
function wire(v) {
  if (Array.isArray(v)) return v.map(wire);
  if (Buffer.isBuffer(v) || !v || typeof v !== 'object') return v;
  const out = {};
  for (const [k, x] of Object.entries(v)) {
    if ((/^dropped.*Count$/.test(k) || k === 'code' || k === 'flags') && (x === 0 || x === '0')) continue;
    out[k] = wire(x);
  }
  return out;
}

/** The entry span and `count` llm_request spans of the request sent with X-Request-Id `id`. */
async function spansOf(id, { count = 1 } = {}) {
  const entry = await rx.waitForSpan(entryOf(id), SPAN_TIMEOUT);
  const llms = await rx.waitForSpans(llmOf(id), SPAN_TIMEOUT, { count });
  return { entry, llms, llm: llms[0] };
}

/** Phase children of `llm` received so far (waits `settleMs` first: they travel with it). */
async function phasesOf(llm, settleMs = 300) {
  await new Promise((r) => setTimeout(r, settleMs));
  return rx.spans.filter((s) => s.traceId === llm.traceId && PHASES.includes(s.name) && (s.parentSpanId === llm.spanId || rx.spans.some((w) => w.name === 'wait' && w.spanId === s.parentSpanId && w.parentSpanId === llm.spanId)));
}

async function adminMetric(agent, name, pred) {
  const r = await get(`${agent.adminUrl}/metrics`);
  assert.equal(r.status, 200);
  return metricSum(parsePrometheus(r.text), name, pred);
}

function assertJoined(llm, entry) {
  assert.equal(llm.traceId, entry.traceId, `llm_request in the entry span's trace\n${showSpan(llm)}\n${showSpan(entry)}`);
  assert.equal(llm.parentSpanId, entry.spanId, `llm_request is a child of the entry span\n${showSpan(llm)}`);
  assert.equal(llm.kind, SPAN_KIND.INTERNAL, `llm_request kind INTERNAL\n${showSpan(llm)}`);
}

/** The V1 attribute set of the doc, exactly, with types; durations consistent. */
function assertV1Attributes(llm, { pdRole = 'none', cached, prompt } = {}) {
  for (const k of V1_DURATIONS) {
    assert.equal(llm.attributeTypes[k], 'int', `${k} must be integer ns\n${showSpan(llm)}`);
    assert.ok(llm.attributes[k] >= 0, `${k} >= 0`);
  }
  for (const k of V1_ABSENT) assertNoAttr(llm, k);
  assert.equal(llm.attributeTypes['gen_ai.request.id'], 'string');
  assertAttr(llm, 'gen_ai.request.model_name', MODEL, 'string');
  assert.equal(llm.attributeTypes['gen_ai.usage.prompt_tokens'], 'int');
  assert.equal(llm.attributeTypes['gen_ai.usage.completion_tokens'], 'int');
  assertAttr(llm, 'gen_ai.engine.index', 0, 'int');
  assertAttr(llm, 'gen_ai.pd_role', pdRole, 'string');
  if (cached === undefined) assertNoAttr(llm, 'gen_ai.usage.cache_read.input_tokens');
  else assertAttr(llm, 'gen_ai.usage.cache_read.input_tokens', cached, 'int');
  // infertel's addition (telemetry-reference.md, "Latency causes"): cached / prompt tokens of
  // the engine's usage (`prompt`, else the span's own count).
  if (cached === undefined) assertNoAttr(llm, 'infertel.cache.hit_ratio');
  else assertAttr(llm, 'infertel.cache.hit_ratio', Math.min(1, cached / (prompt ?? llm.attributes['gen_ai.usage.prompt_tokens'])), 'double');
  const allowed = new Set([
    ...V1_DURATIONS,
    'gen_ai.request.id',
    'gen_ai.request.model_name',
    'gen_ai.request.temperature',
    'gen_ai.request.top_p',
    'gen_ai.request.max_tokens',
    'gen_ai.request.n',
    'gen_ai.usage.prompt_tokens',
    'gen_ai.usage.completion_tokens',
    'gen_ai.usage.cache_read.input_tokens',
    'infertel.cache.hit_ratio',
    'gen_ai.engine.index',
    'gen_ai.pd_role',
  ]);
  const extra = Object.keys(llm.attributes).filter((k) => !allowed.has(k));
  assert.deepEqual(extra, [], `attributes the doc does not list\n${showSpan(llm)}`);
  const a = llm.attributes;
  // e2e is measured in the front end from arrival to finish, as is the span.
  assert.ok(Math.abs(a['gen_ai.latency.e2e'] - dur(llm)) <= 2e6, `e2e ${a['gen_ai.latency.e2e']} vs span duration ${dur(llm)}\n${showSpan(llm)}`);
  assert.ok(a['gen_ai.latency.time_to_first_token'] <= a['gen_ai.latency.e2e'], 'ttft <= e2e');
  if (pdRole === 'none') {
    const sum = a['gen_ai.latency.time_in_model_prefill'] + a['gen_ai.latency.time_in_model_decode'];
    assert.ok(Math.abs(a['gen_ai.latency.time_in_model_inference'] - sum) <= 2, `inference = prefill + decode within rounding\n${showSpan(llm)}`);
    assert.ok(a['gen_ai.latency.time_in_model_prefill'] > 0, 'prefill > 0');
    assert.ok(a['gen_ai.latency.time_in_model_decode'] > 0, 'decode > 0');
  }
}

/** Phases as the doc lays them out around start + TTFT, with the four phase attributes. */
function assertPhases(llm, phases, expected) {
  const names = phases.map((p) => p.name).sort();
  assert.deepEqual(names, [...expected].sort(), `phases of ${llm.attributes['gen_ai.request.id']}`);
  const s = llm.startTimeUnixNano;
  const e = llm.endTimeUnixNano;
  const a = llm.attributes;
  const first = s + BigInt(a['gen_ai.latency.time_to_first_token']);
  for (const p of phases) {
    assert.equal(p.traceId, llm.traceId);
    assert.equal(p.parentSpanId, llm.spanId, `${p.name} is a child of llm_request`);
    assert.equal(p.kind, SPAN_KIND.INTERNAL);
    assert.ok(p.startTimeUnixNano >= s && p.endTimeUnixNano <= e && p.startTimeUnixNano <= p.endTimeUnixNano, `${p.name} inside llm_request\n${showSpan(p)}\n${showSpan(llm)}`);
    assert.deepEqual(Object.keys(p.attributes).sort(), [...PHASE_KEYS].sort(), `${p.name} attributes\n${showSpan(p)}`);
    for (const k of PHASE_KEYS) assert.deepEqual(p.attributes[k], a[k], `${p.name} ${k} as on llm_request`);
  }
  const by = Object.fromEntries(phases.map((p) => [p.name, p]));
  if (by.prefill) {
    assert.equal(by.prefill.endTimeUnixNano, first, 'prefill ends at the first token');
    assert.equal(dur(by.prefill), Math.min(a['gen_ai.latency.time_in_model_prefill'], Number(first - s)), 'prefill length');
  }
  if (by.decode) {
    assert.equal(by.decode.startTimeUnixNano, first, 'decode starts at the first token');
    assert.equal(dur(by.decode), Math.min(a['gen_ai.latency.time_in_model_decode'], Number(e - first)), 'decode length');
  }
  if (by.wait && by.prefill) {
    assert.equal(by.wait.endTimeUnixNano, by.prefill.startTimeUnixNano, 'wait ends where prefill starts');
    assert.equal(dur(by.wait), Math.min(a['gen_ai.latency.time_in_queue'], Number(by.prefill.startTimeUnixNano - s)), 'wait length');
  }
}

before(async () => {
  rx = await startGrpcReceiver();
});

after(async () => {
  await stopAll(...procs);
  await rx?.close();
});

// ---------------------------------------------------------------------------------------------
describe('V1, level 1, --enable-prompt-tokens-details', () => {
  let p;
  before(async () => {
    p = await startPair({ simExtra: ['--enable-prompt-tokens-details'] });
  });

  test('llm_request joined under the entry span with every V1 attribute of the doc', async () => {
    const id = xrid('v1');
    const r = await p.client.chat.completions.create(chat({ temperature: 0.5, top_p: 0.9 }), { headers: { 'X-Request-Id': id } });
    const { entry, llm } = await spansOf(id);
    assertJoined(llm, entry);
    assert.equal(llm.scope.name, 'vllm.tracing.otel', 'vLLM scope kept');
    assert.equal(llm.resource['vllm.instrumenting_module_name'], 'vllm.llm_engine', 'vLLM resource kept');
    assertAttr(llm, 'gen_ai.request.id', `chatcmpl-${id}`, 'string');
    assertAttr(llm, 'gen_ai.usage.prompt_tokens', r.usage.prompt_tokens, 'int');
    assertAttr(llm, 'gen_ai.usage.completion_tokens', r.usage.completion_tokens, 'int');
    assertAttr(llm, 'gen_ai.request.temperature', 0.5, 'double');
    assertAttr(llm, 'gen_ai.request.top_p', 0.9, 'double');
    assertAttr(llm, 'gen_ai.request.max_tokens', 12, 'int');
    assertAttr(llm, 'gen_ai.request.n', 1, 'int');
    assertV1Attributes(llm, { cached: expectedCached(r), prompt: r.usage?.prompt_tokens });
    assert.ok(llm.startTimeUnixNano >= entry.startTimeUnixNano - 5_000_000n && llm.endTimeUnixNano <= entry.endTimeUnixNano + 5_000_000n, 'llm_request within the entry span');
  });

  // A response not streamed shows the gateway no first token: vLLM's TTFT and TPOT families
  // take what the engine's own span measured, as vLLM counts every request.
  test('non-streamed request: TTFT and TPOT from its llm_request span, with engine_index', async () => {
    const ttftSum = () => adminMetric(p.agent, 'genai_llm_first_token_seconds_total', (l) => l.engine_index === '0');
    const tpotSum = () => adminMetric(p.agent, 'gen_ai_server_time_per_output_token_total', (l) => l.engine_index === '0');
    const [ttft0, tpot0] = [await ttftSum(), await tpotSum()];
    const id = xrid('ttft');
    const r = await p.client.chat.completions.create(chat(), { headers: { 'X-Request-Id': id } });
    const { llm } = await spansOf(id);
    const ttft = Number(llm.attributes['gen_ai.latency.time_to_first_token']) / 1e9;
    const decode = Number(llm.attributes['gen_ai.latency.time_in_model_decode']) / 1e9;
    assert.ok(ttft > 0, showSpan(llm));
    const added = await pollUntil(async () => {
      const d = (await ttftSum()) - ttft0;
      return d > 0 ? d : 0;
    });
    assert.ok(Math.abs(added - ttft) < 1e-6, `TTFT counted ${added} s, the span says ${ttft} s`);
    if (r.usage.completion_tokens > 1) {
      const tpot = (await tpotSum()) - tpot0;
      const want = decode / (r.usage.completion_tokens - 1);
      assert.ok(Math.abs(tpot - want) < 1e-6, `TPOT counted ${tpot} s, the span gives ${want} s`);
    }
  });

  test('greedy request: temperature 0 is absent (vLLM omits zero values)', async () => {
    const id = xrid('greedy');
    await p.client.chat.completions.create(chat({ temperature: 0 }), { headers: { 'X-Request-Id': id } });
    const { llm } = await spansOf(id);
    assertNoAttr(llm, 'gen_ai.request.temperature');
  });

  test('repeated prompt: gen_ai.usage.cache_read.input_tokens = the cached tokens the client saw', async () => {
    const body = { model: MODEL, messages: [{ role: 'user', content: LONG_PROMPT }], max_tokens: 4 };
    const id1 = xrid('cache1');
    const r1 = await p.client.chat.completions.create(body, { headers: { 'X-Request-Id': id1 } });
    const id2 = xrid('cache2');
    const r2 = await p.client.chat.completions.create(body, { headers: { 'X-Request-Id': id2 } });
    assert.ok(r2.usage.prompt_tokens_details, `sim reports prompt_tokens_details: ${JSON.stringify(r2.usage)}`);
    const cached2 = r2.usage.prompt_tokens_details.cached_tokens;
    assert.ok(cached2 > 0, `the repeated prompt hit the prefix cache: ${JSON.stringify(r2.usage)}`);
    const { llm: l1 } = await spansOf(id1);
    const { llm: l2 } = await spansOf(id2);
    if (expectedCached(r1) === undefined) {
      // No details in the response: absent while this engine never reported cached tokens, else
      // known to be 0 (docs/telemetry-reference.md).
      const v = l1.attributes['gen_ai.usage.cache_read.input_tokens'];
      assert.ok(v === undefined || v === 0, `cold prompt: absent or 0, got ${v}`);
    } else {
      assertAttr(l1, 'gen_ai.usage.cache_read.input_tokens', expectedCached(r1), 'int');
    }
    // Now that the engine has reported cached tokens, a cold prompt is known to have none.
    const id3 = xrid('cache3');
    const r3 = await p.client.chat.completions.create(
      { model: MODEL, messages: [{ role: 'user', content: `A prompt never seen before ${Date.now()}` }], max_tokens: 2 },
      { headers: { 'X-Request-Id': id3 } });
    if (!r3.usage.prompt_tokens_details) {
      const { llm: l3 } = await spansOf(id3);
      assertAttr(l3, 'gen_ai.usage.cache_read.input_tokens', 0, 'int');
    }
    assertAttr(l2, 'gen_ai.usage.cache_read.input_tokens', cached2, 'int');
  });

  test('level 1: wait, prefill, decode children laid out around the first token', async () => {
    const id = xrid('phases');
    await p.client.chat.completions.create(chat({ max_tokens: 20 }), { headers: { 'X-Request-Id': id } });
    const { llm } = await spansOf(id);
    const phases = await phasesOf(llm);
    assertPhases(llm, phases, ['wait', 'prefill', 'decode']);
  });

  test('n=2: two llm_request spans, both under the one entry span', async () => {
    const id = xrid('n2');
    const r = await p.client.chat.completions.create(chat({ n: 2 }), { headers: { 'X-Request-Id': id } });
    assert.equal(r.choices.length, 2);
    const { entry, llms } = await spansOf(id, { count: 2 });
    await new Promise((res) => setTimeout(res, 300));
    const all = rx.spans.filter(llmOf(id));
    assert.equal(all.length, 2, 'exactly one llm_request per child sequence');
    assert.notEqual(llms[0].spanId, llms[1].spanId);
    for (const l of llms) {
      assertJoined(l, entry);
      assertAttr(l, 'gen_ai.request.n', 1, 'int');
    }
    const entries = rx.spans.filter(entryOf(id));
    assert.equal(entries.length, 1, 'one entry span');
    assert.equal(llms[0].attributes['gen_ai.usage.completion_tokens'] + llms[1].attributes['gen_ai.usage.completion_tokens'], r.usage.completion_tokens);
  });

  test('client aborts mid-stream: no llm_request (vLLM emits none), entry span ERROR', async () => {
    const before0 = await adminMetric(p.agent, 'infertel_assembler_engine_spans_total');
    const simAborted0 = (await get(`${p.sim.url}/_sim/stats`)).json.aborted;
    const id = xrid('abort');
    const ac = new AbortController();
    const stream = await p.client.chat.completions.create(
      { model: MODEL, messages: [{ role: 'user', content: 'Tell me everything.' }], max_tokens: 4000, ignore_eos: true, stream: true },
      { signal: ac.signal, headers: { 'X-Request-Id': id } },
    );
    let got = 0;
    try {
      for await (const ch of stream) {
        if (ch) got++;
        if (got === 3) ac.abort();
      }
    } catch (e) {
      assert.match(`${e.name} ${e.message}`, /abort/i);
    }
    assert.ok(got >= 3 && got < 100, `chunks before the abort: ${got}`);
    const entry = await rx.waitForSpan(entryOf(id), SPAN_TIMEOUT);
    assertError(entry);
    assertAttr(entry, 'error.type', 'client_disconnected', 'string');
    const aborted = await pollUntil(async () => (await get(`${p.sim.url}/_sim/stats`)).json.aborted > simAborted0, { timeoutMs: 5000 });
    assert.ok(aborted, 'the engine aborted the request');
    // The sim batches every 100 ms; anything it sent would be joined at once (the record exists).
    await new Promise((res) => setTimeout(res, 1500));
    assert.equal(rx.spans.filter(llmOf(id)).length, 0, 'no llm_request for an aborted request');
    assert.equal(rx.spans.filter((s) => s.traceId === entry.traceId && s.name !== entry.name).length, 0, 'nothing else in the trace');
    assert.equal(await adminMetric(p.agent, 'infertel_assembler_engine_spans_total'), before0, 'the agent received no engine span');
  });

  test('pass-through: a span of an unrelated service (OpenTelemetry JS SDK) comes out unchanged', async () => {
    const direct = await startGrpcReceiver();
    const provider = new BasicTracerProvider({
      resource: new Resource({ 'service.name': 'e2e-unrelated', 'deployment.environment': 'test', 'e2e.int': 7, 'e2e.bool': true }),
    });
    provider.addSpanProcessor(new SimpleSpanProcessor(new OTLPGrpcExporter({ url: `http://${p.agent.receiverGrpc}` })));
    provider.addSpanProcessor(new SimpleSpanProcessor(new OTLPGrpcExporter({ url: direct.endpoint })));
    const tracer = provider.getTracer('e2e-unrelated-lib', '3.2.1');
    const parent = trace.setSpanContext(ROOT_CONTEXT, { traceId: randomTraceId(), spanId: randomSpanId(), traceFlags: TraceFlags.SAMPLED, isRemote: true });
    const span = tracer.startSpan(
      'GET /inventory',
      {
        kind: SpanKind.CLIENT,
        attributes: { 'http.method': 'GET', 'http.status_code': 200, ratio: 0.25, ok: true, tags: ['a', 'b'], nums: [1, 2, 3] },
      },
      parent,
    );
    span.addEvent('retry', { attempt: 2 });
    span.setStatus({ code: 2, message: 'upstream said no' });
    // Looks like vLLM's span name, but without gen_ai.request.id it is not one.
    const lookalike = tracer.startSpan('llm_request', { kind: SpanKind.SERVER, attributes: { 'gen_ai.latency.e2e': 0.5 } });
    span.end();
    lookalike.end();
    await provider.forceFlush();
    await provider.shutdown();
    try {
      const ids = [span.spanContext().spanId, lookalike.spanContext().spanId];
      for (const sid of ids) {
        const [viaAgent] = await Promise.all([rx.waitForSpan((s) => s.spanId === sid, SPAN_TIMEOUT), direct.waitForSpan((s) => s.spanId === sid, SPAN_TIMEOUT)]);
        const sent = direct.spans.find((s) => s.spanId === sid);
        assert.deepEqual(wire(viaAgent.raw), wire(sent.raw), `span ${viaAgent.name} unchanged`);
        assert.deepEqual(wire(viaAgent.resourceRaw), wire(sent.resourceRaw), 'resource unchanged');
        assert.deepEqual(wire(viaAgent.scopeRaw), wire(sent.scopeRaw), 'scope unchanged');
      }
      const got = rx.spans.find((s) => s.spanId === ids[0]);
      assert.equal(got.kind, SPAN_KIND.CLIENT);
      assert.equal(got.parentSpanId, trace.getSpanContext(parent).spanId);
      assert.equal(got.attributes['http.status_code'], 200);
      assert.equal(rx.spans.find((s) => s.spanId === ids[1]).kind, SPAN_KIND.SERVER, 'a lookalike keeps its kind');
    } finally {
      await direct.close();
    }
  });

  test('a second emitter (OpenTelemetry JS SDK, OTLP/HTTP protobuf) with vLLM attributes is normalized and joined', async () => {
    const id = xrid('sdk');
    const r = await p.client.chat.completions.create(chat({ max_tokens: 6 }), { headers: { 'X-Request-Id': id } });
    const { entry } = await spansOf(id);
    const provider = new BasicTracerProvider({ resource: new Resource({ 'service.name': 'e2e-second-emitter' }) });
    provider.addSpanProcessor(new SimpleSpanProcessor(new OTLPProtoExporter({ url: `${p.agent.receiverHttp}/v1/traces` })));
    const tracer = provider.getTracer('e2e.second.emitter');
    const wrongParent = trace.setSpanContext(ROOT_CONTEXT, { traceId: randomTraceId(), spanId: randomSpanId(), traceFlags: TraceFlags.SAMPLED, isRemote: true });
    const startNs = entry.startTimeUnixNano + 1_000_000n;
    const hr = (ns) => [Number(ns / 1_000_000_000n), Number(ns % 1_000_000_000n)];
    // Within the exchange as the gateway saw it (a span dated outside it would be moved to the
    // gateway's clock: its engine's clock evidently off), with latencies that fit its length,
    // in seconds as vLLM sends them (non-integral, so the SDK encodes doubles), to 0.1 ms.
    const units = Number((entry.endTimeUnixNano - 2_000_000n - startNs) / 100_000n);
    assert.ok(units >= 20, `the exchange lasted ${units / 10} ms after its first millisecond`);
    const s4 = (u) => Math.floor(u) / 10000;
    const secs = { ttft: s4(units / 3), e2e: s4(units), queue: s4(units / 18), prefill: s4((units * 2) / 9), decode: s4(units * 0.6) };
    const endNs = startNs + BigInt(units) * 100_000n;
    const sdkSpan = tracer.startSpan(
      'llm_request',
      {
        kind: SpanKind.SERVER,
        startTime: hr(startNs),
        attributes: {
          'gen_ai.latency.time_to_first_token': secs.ttft,
          'gen_ai.latency.e2e': secs.e2e,
          'gen_ai.latency.time_in_queue': secs.queue,
          'gen_ai.usage.prompt_tokens': 9,
          'gen_ai.usage.completion_tokens': 6,
          'gen_ai.latency.time_in_model_prefill': secs.prefill,
          'gen_ai.latency.time_in_model_decode': secs.decode,
          'gen_ai.latency.time_in_model_inference': secs.prefill + secs.decode,
          'gen_ai.request.id': `chatcmpl-${id}`,
          'gen_ai.request.top_p': 0.9,
          'gen_ai.request.max_tokens': 6,
          'gen_ai.request.temperature': 0.7,
          'gen_ai.request.n': 1,
        },
      },
      wrongParent,
    );
    sdkSpan.end(hr(endNs));
    await provider.forceFlush();
    await provider.shutdown();
    const sid = sdkSpan.spanContext().spanId;
    const llm = await rx.waitForSpan((s) => s.spanId === sid, SPAN_TIMEOUT);
    assertJoined(llm, entry);
    assert.equal(llm.scope.name, 'e2e.second.emitter');
    assert.equal(llm.resource['service.name'], 'e2e-second-emitter');
    const ns = (x) => Math.round(x * 1e9);
    assertAttr(llm, 'gen_ai.latency.time_to_first_token', ns(secs.ttft), 'int');
    assertAttr(llm, 'gen_ai.latency.e2e', ns(secs.e2e), 'int');
    assertAttr(llm, 'gen_ai.latency.time_in_queue', ns(secs.queue), 'int');
    assertAttr(llm, 'gen_ai.latency.time_in_model_prefill', ns(secs.prefill), 'int');
    assertAttr(llm, 'gen_ai.latency.time_in_model_decode', ns(secs.decode), 'int');
    assertAttr(llm, 'gen_ai.latency.time_in_model_inference', ns(secs.prefill + secs.decode), 'int');
    assertV1Attributes(llm, { cached: expectedCached(r), prompt: r.usage?.prompt_tokens });
    const phases = await phasesOf(llm);
    assertPhases(llm, phases, ['wait', 'prefill', 'decode']);
  });

  test('fixture vllm-llm_request-otlp-0.29.0-SANITIZED.json (no trace/span ids): refused and counted', async () => {
    const before0 = await adminMetric(p.agent, 'infertel_receiver_refused_items_total', (l) => l.transport === 'http' && l.signal === 'traces');
    const items0 = await adminMetric(p.agent, 'infertel_receiver_items_total', (l) => l.transport === 'http' && l.signal === 'traces');
    const body = fs.readFileSync(FIXTURE);
    const r = await fetch(`${p.agent.receiverHttp}/v1/traces`, { method: 'POST', headers: { 'content-type': 'application/json' }, body });
    const text = await r.text();
    // Every span refused: the request fails with InvalidArgument in a google.rpc.Status.
    assert.equal(r.status, 400, text);
    const st = JSON.parse(text);
    assert.equal(st.code, 3, text);
    assert.match(st.message, /trace_id/, text);
    assert.equal(await adminMetric(p.agent, 'infertel_receiver_refused_items_total', (l) => l.transport === 'http' && l.signal === 'traces'), before0 + 1);
    assert.equal(await adminMetric(p.agent, 'infertel_receiver_items_total', (l) => l.transport === 'http' && l.signal === 'traces'), items0);
    // The same span with ids added is accepted and normalized (unmatched: its own trace).
    const doc = JSON.parse(body.toString('utf8'));
    const span = doc.resourceSpans[0].scopeSpans[0].spans[0];
    span.traceId = randomTraceId();
    span.spanId = randomSpanId();
    const r2 = await fetch(`${p.agent.receiverHttp}/v1/traces`, { method: 'POST', headers: { 'content-type': 'application/json' }, body: JSON.stringify(doc) });
    assert.equal(r2.status, 200, await r2.text());
    const got = await rx.waitForSpan((s) => s.spanId === span.spanId, SPAN_TIMEOUT);
    assert.equal(got.kind, SPAN_KIND.INTERNAL);
    assert.equal(got.traceId, span.traceId, 'unmatched: own trace');
    assertAttr(got, 'gen_ai.latency.e2e', Math.round(0.25359678268432617 * 1e9), 'int');
    assertAttr(got, 'gen_ai.pd_role', 'none', 'string');
  });
});

// ---------------------------------------------------------------------------------------------
describe('V1, level 0, no prompt-tokens details', () => {
  let p;
  before(async () => {
    p = await startPair({ agentEnv: { OTEL_INSTRUMENTATION_VLLM_TRACING_LEVEL: '0' } });
  });

  test('llm_request only, no phases; no cache_read attribute when the engine says nothing', async () => {
    const id = xrid('l0');
    const r = await p.client.chat.completions.create(chat(), { headers: { 'X-Request-Id': id } });
    assert.equal(r.usage.prompt_tokens_details ?? undefined, undefined, 'sim without --enable-prompt-tokens-details');
    const { entry, llm } = await spansOf(id);
    assertJoined(llm, entry);
    assertV1Attributes(llm, { cached: undefined });
    const phases = await phasesOf(llm, 500);
    assert.deepEqual(phases.map((s) => s.name), [], 'level 0: no phases');
    assert.equal(llm.events.length, 0, 'level 0: no events');
  });
});

// ---------------------------------------------------------------------------------------------
describe('V1, level 2 events', () => {
  let p;
  let p3;
  before(async () => {
    [p, p3] = await Promise.all([
      startPair({ agentEnv: { OTEL_INSTRUMENTATION_VLLM_TRACING_LEVEL: '2' } }),
      startPair({ agentEnv: { OTEL_INSTRUMENTATION_VLLM_TRACING_LEVEL: '2', OTEL_SPAN_EVENT_COUNT_LIMIT: '3' } }),
    ]);
  });

  test('WAIT, PREFILL, DECODE with token texts/count/logprobs; the client gets no logprobs', async () => {
    const id = xrid('l2');
    const body = chat({ max_tokens: 10, stream: true, seed: 11 });
    const chunks = await collectStream(await p.client.chat.completions.create(body, { headers: { 'X-Request-Id': id } }));
    const direct = await collectStream(await openaiClient(p.sim.url).chat.completions.create(body));
    for (const c of chunks) for (const ch of c.choices || []) assert.ok(ch.logprobs === undefined || ch.logprobs === null, `client got logprobs: ${JSON.stringify(c)}`);
    assert.deepEqual(normalize(chunks), normalize(direct), 'the client sees what the engine sends a request without logprobs');
    const text = chunks.map((c) => c.choices?.[0]?.delta?.content ?? '').join('');

    const { llm } = await spansOf(id);
    const ev = llm.events;
    assert.equal(ev[0].name, 'WAIT', JSON.stringify(ev.map((e) => e.name)));
    assert.deepEqual(Object.keys(ev[0].attributes), ['gen_ai.engine.index', 'infertel.event.measured', 'infertel.event.derived']);
    assert.deepEqual(ev[0].attributes['infertel.event.derived'], ['time'], 'the time is the gateway\'s, not the engine iteration\'s');
    assert.equal(ev[1].name, 'PREFILL');
    assert.ok(ev.length >= 3, 'at least one DECODE');
    for (const e of ev.slice(2)) assert.equal(e.name, 'DECODE');
    let joined = '';
    for (const e of ev.slice(1)) {
      const a = e.attributes;
      assert.equal(a['gen_ai.engine.index'], 0);
      assert.ok(Array.isArray(a['gen_ai.token.texts']), JSON.stringify(a));
      assert.equal(a['gen_ai.token.count'], a['gen_ai.token.texts'].length);
      assert.equal(a['gen_ai.token.logprobs'].length, a['gen_ai.token.count'], 'one logprob per token');
      for (const lp of a['gen_ai.token.logprobs']) assert.ok(typeof lp === 'number' && lp <= 0, `logprob ${lp}`);
      assert.deepEqual(a['infertel.event.measured'], ['gen_ai.token.count', 'gen_ai.token.texts', 'gen_ai.token.logprobs', 'gen_ai.token.ids'].filter((k) => k in a));
      joined += a['gen_ai.token.texts'].join('');
    }
    assert.equal(joined, text, 'token texts of the events = the streamed text');
    for (let i = 1; i < ev.length; i++) assert.ok(ev[i].timeUnixNano >= ev[i - 1].timeUnixNano, 'events in time order');
    // Event times are the gateway's (dispatch, deltas seen), so they lie within the entry span;
    // the engine's own start/end may be a few ms inside them.
    const entry = await rx.waitForSpan(entryOf(id), SPAN_TIMEOUT);
    assert.ok(ev[0].timeUnixNano >= entry.startTimeUnixNano && ev.at(-1).timeUnixNano <= entry.endTimeUnixNano, `events within the entry span\n${showSpan(llm)}\n${showSpan(entry)}`);
    assert.equal(Number(llm.raw.droppedEventsCount ?? 0), 0);
    assert.equal(ev.filter((e) => e.name === 'PREEMPTED').length, 0);
  });

  test('non-streamed request at level 2: only WAIT, logprobs removed from the response', async () => {
    const id = xrid('l2ns');
    const body = chat({ max_tokens: 6, seed: 12 });
    const r = await p.client.chat.completions.create(body, { headers: { 'X-Request-Id': id } });
    const d = await openaiClient(p.sim.url).chat.completions.create(body);
    assert.ok(r.choices[0].logprobs === null || r.choices[0].logprobs === undefined, JSON.stringify(r));
    assert.deepEqual(normalize(r), normalize(d));
    const { llm } = await spansOf(id);
    assert.deepEqual(llm.events.map((e) => e.name), ['WAIT']);
  });

  test('OTEL_SPAN_EVENT_COUNT_LIMIT=3: 3 events kept, the rest counted in dropped_events_count', async () => {
    const id = xrid('limit');
    const chunks = await collectStream(await p3.client.chat.completions.create(chat({ max_tokens: 12, stream: true }), { headers: { 'X-Request-Id': id } }));
    const deltas = chunks.filter((c) => c.choices?.[0]?.delta?.content).length;
    const { llm } = await spansOf(id);
    assert.equal(llm.events.length, 3, JSON.stringify(llm.events.map((e) => e.name)));
    assert.deepEqual(llm.events.map((e) => e.name), ['WAIT', 'PREFILL', 'DECODE']);
    const dropped = Number(llm.raw.droppedEventsCount ?? 0);
    assert.ok(dropped > 0, 'dropped_events_count > 0');
    assert.equal(dropped + 3, 1 + deltas, `WAIT + one event per content delta (${deltas})`);
  });
});

// ---------------------------------------------------------------------------------------------
describe('PD roles', () => {
  let prod;
  let cons;
  before(async () => {
    [prod, cons] = await Promise.all([
      startPair({ agentExtra: ['--pd-role', 'producer'], simExtra: ['--kv-role', 'kv_producer'] }),
      startPair({ agentExtra: ['--pd-role', 'consumer'], simExtra: ['--kv-role', 'kv_consumer'] }),
    ]);
  });

  test('producer: only prefill, time_in_model_decode 0', async () => {
    const id = xrid('prod');
    await prod.client.chat.completions.create(chat(), { headers: { 'X-Request-Id': id } });
    const { entry, llm } = await spansOf(id);
    assertJoined(llm, entry);
    assertV1Attributes(llm, { pdRole: 'producer' });
    assertAttr(llm, 'gen_ai.latency.time_in_model_decode', 0, 'int');
    assert.ok(llm.attributes['gen_ai.latency.time_in_model_prefill'] > 0);
    assertPhases(llm, await phasesOf(llm), ['prefill']);
  });

  test('consumer: only decode, time_in_model_prefill 0', async () => {
    const id = xrid('cons');
    await cons.client.chat.completions.create(chat(), { headers: { 'X-Request-Id': id } });
    const { entry, llm } = await spansOf(id);
    assertJoined(llm, entry);
    assertV1Attributes(llm, { pdRole: 'consumer' });
    assertAttr(llm, 'gen_ai.latency.time_in_model_prefill', 0, 'int');
    assert.ok(llm.attributes['gen_ai.latency.time_in_model_decode'] > 0);
    assertPhases(llm, await phasesOf(llm), ['decode']);
  });
});

// ---------------------------------------------------------------------------------------------
describe('parent repair (sim --drop-trace-context)', () => {
  let p;
  before(async () => {
    p = await startPair({ simExtra: ['--drop-trace-context'] });
  });

  test('the simulator really loses the context (its span starts a new trace)', async () => {
    const direct = await startGrpcReceiver();
    const sim = await startSim({ model: MODEL, extra: ['--drop-trace-context', '--otlp-traces-endpoint', `grpc://${direct.endpoint.replace('http://', '')}`], env: { OTEL_BSP_SCHEDULE_DELAY: '100' } });
    try {
      const traceId = randomTraceId();
      const id = xrid('lost');
      await openaiClient(sim.url).chat.completions.create(chat({ max_tokens: 3 }), { headers: { 'X-Request-Id': id, traceparent: `00-${traceId}-${randomSpanId()}-01` } });
      const s = await direct.waitForSpan(llmOf(id), SPAN_TIMEOUT);
      assert.notEqual(s.traceId, traceId);
      assert.equal(s.parentSpanId, '');
    } finally {
      await sim.stop();
      await direct.close();
    }
  });

  test('llm_request still ends up under the entry span, in its trace', async () => {
    const id = xrid('repair');
    await p.client.chat.completions.create(chat(), { headers: { 'X-Request-Id': id } });
    const { entry, llm } = await spansOf(id);
    assertJoined(llm, entry);
    const phases = await phasesOf(llm);
    assertPhases(llm, phases, ['wait', 'prefill', 'decode']);
  });
});

// ---------------------------------------------------------------------------------------------
describe('V0 engine (sim --engine-version v0 --collect-detailed-traces all)', () => {
  let p;
  before(async () => {
    p = await startPair({ simExtra: ['--engine-version', 'v0', '--collect-detailed-traces', 'all'] });
  });

  test('llm_request with the V0 keys in seconds, joined, no phases', async () => {
    const id = xrid('v0');
    const r = await p.client.chat.completions.create(chat({ temperature: 0.5 }), { headers: { 'X-Request-Id': id } });
    const { entry, llm } = await spansOf(id);
    assertJoined(llm, entry);
    assert.equal(llm.scope.name, 'vllm.llm_engine');
    assert.deepEqual(llm.attributeTypes, V0_KEYS, `exactly the V0 keys of the doc\n${showSpan(llm)}`);
    assertAttr(llm, 'gen_ai.usage.prompt_tokens', r.usage.prompt_tokens);
    assertAttr(llm, 'gen_ai.usage.completion_tokens', r.usage.completion_tokens);
    assertAttr(llm, 'gen_ai.request.temperature', 0.5);
    const e2e = llm.attributes['gen_ai.latency.e2e'];
    assert.ok(e2e > 0 && e2e < 30, `e2e in seconds: ${e2e}`);
    assert.ok(Math.abs(e2e * 1e9 - dur(llm)) <= 2e6, 'e2e (s) ≈ span duration');
    const phases = await phasesOf(llm, 500);
    assert.deepEqual(phases.map((s) => s.name), [], 'no phases for V0');
  });
});
