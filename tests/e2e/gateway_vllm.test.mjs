// End-to-end: the official openai client talks to `infertel agent` in front of `infertel sim`
// (vLLM), and the same requests go to an identical simulator directly. The client must get the
// same results both ways; every request must produce one entry span (spec M1, M2.1), exported
// over OTLP and decoded here with the official OTLP protos.
//
// Two simulators with the same seed receive the same request sequence (one directly, one behind
// the agent), so their deterministic outputs can be compared whatever the simulator's seeding.
import assert from 'node:assert/strict';
import { after, before, describe, test } from 'node:test';

import { startGrpcReceiver, startHttpReceiver } from './lib/otlp.mjs';
import { closedPort, pollUntil, startAgent, startSim, stopAll } from './lib/proc.mjs';
import {
  assertAttr,
  assertEntrySpan,
  assertError,
  assertNoAttr,
  assertOk,
  assertUsage,
  assertWithin,
  jsonAttr,
  textMessage,
} from './lib/spans.mjs';
import {
  API_KEY,
  byChoice,
  collectStream,
  get,
  normalize,
  openaiClient,
  postJson,
  randomSpanId,
  randomTraceId,
  startTap,
  streamFinishReasons,
  streamText,
} from './lib/util.mjs';

const MODEL = 'e2e-org/e2e-llm-8b';
const SEED = 1234;
const SPEED = Number(process.env.E2E_SIM_SPEED || 20);
const SPAN_TIMEOUT = 10000;

const SYSTEM = 'You are a terse assistant.';
const USER = 'Name three prime numbers.';

const WEATHER_TOOL = {
  type: 'function',
  function: {
    name: 'get_weather',
    description: 'Current weather for a city',
    parameters: { type: 'object', properties: { city: { type: 'string' } }, required: ['city'] },
  },
};

function chatBody(extra = {}) {
  return {
    model: MODEL,
    messages: [
      { role: 'system', content: SYSTEM },
      { role: 'user', content: USER },
    ],
    max_tokens: 12,
    ...extra,
  };
}

const byResponseId = (id) => (s) => s.attributes['gen_ai.response.id'] === id;

// ---------------------------------------------------------------------------------------------
describe('gateway (vLLM) with OTLP gRPC export', () => {
  let rx;
  let simDirect;
  let simBehind;
  let agent;
  let direct; // client -> simDirect
  let behindDirect; // client -> simBehind, bypassing the agent (keeps the two sims in step)
  let viaAgent; // client -> agent -> simBehind

  before(async () => {
    rx = await startGrpcReceiver();
    [simDirect, simBehind] = await Promise.all([
      startSim({ model: MODEL, seed: SEED, speed: SPEED }),
      startSim({ model: MODEL, seed: SEED, speed: SPEED }),
    ]);
    agent = await startAgent({
      upstream: simBehind.url,
      otlp: { endpoint: rx.endpoint, protocol: 'grpc' },
      env: {
        OTEL_SERVICE_NAME: 'e2e-gateway',
        OTEL_RESOURCE_ATTRIBUTES: 'deployment.environment=e2e,e2e.team=observability',
      },
    });
    rx.diag = () => agent.describe();
    direct = openaiClient(simDirect.url);
    behindDirect = openaiClient(simBehind.url);
    viaAgent = openaiClient(agent.url);
  });

  after(async () => {
    await stopAll(agent, simDirect, simBehind);
    await rx?.close();
  });

  /** Runs `fn(client)` against the direct simulator, then through the agent. */
  async function pair(fn) {
    const d = await fn(direct);
    const t0 = Date.now();
    const a = await fn(viaAgent);
    return { d, a, t0, t1: Date.now() };
  }

  /** Runs `fn(client)` against both simulators directly; returns the first result. */
  async function reference(fn) {
    const r = await fn(direct);
    await fn(behindDirect);
    return r;
  }

  test('chat, not streamed: same result as direct; every M2.1 attribute on the entry span', async () => {
    const body = chatBody({ temperature: 0.7, top_p: 0.9, top_k: 40, n: 1, user: 'user-e2e-42' });
    const { d, a, t0, t1 } = await pair((c) => c.chat.completions.create(body));
    assert.deepEqual(normalize(a), normalize(d));
    assert.equal(a.object, 'chat.completion');
    assert.match(a.id, /^chatcmpl-/);

    const span = await rx.waitForSpan(byResponseId(a.id), SPAN_TIMEOUT);
    assertEntrySpan(span, { name: `chat ${MODEL}`, spanKind: 'LLM', operation: 'chat', model: MODEL });
    assertOk(span);
    assertWithin(span, t0, t1);
    assertAttr(span, 'gen_ai.request.choice.count', 1, 'int');
    assertAttr(span, 'gen_ai.request.temperature', 0.7, 'double');
    assertAttr(span, 'gen_ai.request.top_p', 0.9, 'double');
    assertAttr(span, 'gen_ai.request.top_k', 40, 'int');
    assertAttr(span, 'gen_ai.request.max_tokens', 12, 'int');
    assertAttr(span, 'gen_ai.request.is_stream', false, 'bool');
    assertAttr(span, 'gen_ai.user.id', 'user-e2e-42', 'string');
    assertAttr(span, 'gen_ai.response.id', a.id, 'string');
    assertAttr(span, 'gen_ai.response.model', a.model, 'string');
    assertAttr(span, 'gen_ai.response.finish_reasons', [a.choices[0].finish_reason], 'array<string>');
    assertUsage(span, a.usage);
    assert.deepEqual(jsonAttr(span, 'gen_ai.input.messages'), [textMessage('system', SYSTEM), textMessage('user', USER)]);
    assert.deepEqual(jsonAttr(span, 'gen_ai.output.messages'), [
      textMessage('assistant', a.choices[0].message.content, a.choices[0].finish_reason),
    ]);
    // No client traceparent: a new trace, the entry span is its root.
    assert.equal(span.parentSpanId, '');
    // Resource from OTEL_SERVICE_NAME / OTEL_RESOURCE_ATTRIBUTES.
    assert.equal(span.resource['service.name'], 'e2e-gateway');
    assert.equal(span.resource['deployment.environment'], 'e2e');
    assert.equal(span.resource['e2e.team'], 'observability');
    assert.ok(span.scope.name, 'instrumentation scope name is set');
  });

  test('chat, not streamed, without optional parameters: absent request attributes stay absent', async () => {
    const body = { model: MODEL, messages: [{ role: 'user', content: 'Say hi.' }], max_tokens: 5 };
    const { d, a } = await pair((c) => c.chat.completions.create(body));
    assert.deepEqual(normalize(a), normalize(d));
    const span = await rx.waitForSpan(byResponseId(a.id), SPAN_TIMEOUT);
    assertEntrySpan(span, { name: `chat ${MODEL}`, spanKind: 'LLM', operation: 'chat', model: MODEL });
    for (const k of ['gen_ai.request.choice.count', 'gen_ai.request.temperature', 'gen_ai.request.top_p', 'gen_ai.request.top_k', 'gen_ai.user.id']) {
      assertNoAttr(span, k);
    }
    assertAttr(span, 'gen_ai.request.max_tokens', 5, 'int');
    assertAttr(span, 'gen_ai.response.finish_reasons', [a.choices[0].finish_reason], 'array<string>');
    assertUsage(span, a.usage);
  });

  test('chat, max_tokens reached: finish reason length on response and span', async () => {
    const body = { model: MODEL, messages: [{ role: 'user', content: 'Write a long story about the sea.' }], max_tokens: 3 };
    const { d, a } = await pair((c) => c.chat.completions.create(body));
    assert.deepEqual(normalize(a), normalize(d));
    assert.equal(a.choices[0].finish_reason, 'length');
    assert.equal(a.usage.completion_tokens, 3);
    const span = await rx.waitForSpan(byResponseId(a.id), SPAN_TIMEOUT);
    assertAttr(span, 'gen_ai.response.finish_reasons', ['length'], 'array<string>');
    assertUsage(span, a.usage);
  });

  test('chat, streamed without include_usage: client sees no usage chunk, span has exact usage', async () => {
    const body = chatBody({ stream: true, temperature: 0.5, user: 'streamer' });
    const { d, a, t0, t1 } = await pair(async (c) => collectStream(await c.chat.completions.create(body)));
    assert.ok(a.length >= 2, `expected several chunks, got ${a.length}`);
    assert.deepEqual(normalize(a), normalize(d), 'stream chunks equal to the direct ones');
    for (const ch of a) {
      assert.ok(ch.usage === undefined || ch.usage === null, `client must not see usage: ${JSON.stringify(ch)}`);
      assert.ok(ch.choices.length > 0, `client must not see the empty-choices usage chunk: ${JSON.stringify(ch)}`);
    }
    // What the simulator reports as usage for this very request.
    const ref = await reference(async (c) =>
      collectStream(await c.chat.completions.create({ ...body, stream_options: { include_usage: true } })),
    );
    const refUsage = ref.at(-1).usage;
    assert.ok(refUsage && refUsage.completion_tokens > 0, 'reference usage from the simulator');
    assert.deepEqual(streamText(ref), streamText(a), 'same generated text as the reference request');

    const id = a[0].id;
    const span = await rx.waitForSpan(byResponseId(id), SPAN_TIMEOUT);
    assertEntrySpan(span, { name: `chat ${MODEL}`, spanKind: 'LLM', operation: 'chat', model: MODEL });
    assertOk(span);
    assertWithin(span, t0, t1);
    assertAttr(span, 'gen_ai.request.is_stream', true, 'bool');
    assertAttr(span, 'gen_ai.request.temperature', 0.5, 'double');
    assertAttr(span, 'gen_ai.request.max_tokens', 12, 'int');
    assertAttr(span, 'gen_ai.user.id', 'streamer', 'string');
    assertAttr(span, 'gen_ai.response.model', a[0].model, 'string');
    const sid = span.attributes['session.id'];
    assert.ok(typeof sid === 'string' && sid.length > 0, 'session.id set on a streamed request');
    assert.ok(id === sid || id.endsWith(sid), `session.id (${sid}) is the request id of ${id}`);
    assertAttr(span, 'gen_ai.response.finish_reasons', [streamFinishReasons(a)[0]], 'array<string>');
    assertUsage(span, refUsage);
    assert.deepEqual(jsonAttr(span, 'gen_ai.output.messages'), [
      textMessage('assistant', streamText(a)[0], streamFinishReasons(a)[0]),
    ]);
  });

  test('chat, streamed with include_usage: client gets the usage chunk, span usage equals it', async () => {
    const body = chatBody({ stream: true, stream_options: { include_usage: true } });
    const { d, a } = await pair(async (c) => collectStream(await c.chat.completions.create(body)));
    assert.deepEqual(normalize(a), normalize(d));
    const usageChunks = a.filter((c) => c.usage);
    assert.equal(usageChunks.length, 1, 'exactly one usage chunk');
    assert.deepEqual(a.at(-1).choices, [], 'usage chunk is the last one, with no choices');
    const span = await rx.waitForSpan(byResponseId(a[0].id), SPAN_TIMEOUT);
    assertAttr(span, 'gen_ai.request.is_stream', true, 'bool');
    assertUsage(span, a.at(-1).usage);
    assertOk(span);
  });

  test('chat, streamed with continuous_usage_stats: forwarded unchanged', async () => {
    const body = chatBody({ stream: true, stream_options: { include_usage: true, continuous_usage_stats: true } });
    const { d, a } = await pair(async (c) => collectStream(await c.chat.completions.create(body)));
    assert.deepEqual(normalize(a), normalize(d));
    assert.ok(a.filter((c) => c.usage).length >= 2, 'usage on every chunk');
    const span = await rx.waitForSpan(byResponseId(a[0].id), SPAN_TIMEOUT);
    assertUsage(span, a.at(-1).usage);
  });

  test('chat with logprobs: forwarded unchanged', async () => {
    const body = chatBody({ logprobs: true, top_logprobs: 2, max_tokens: 4 });
    const { d, a } = await pair((c) => c.chat.completions.create(body));
    assert.deepEqual(normalize(a), normalize(d));
    assert.ok(a.choices[0].logprobs?.content?.length > 0, 'logprobs present');
    await rx.waitForSpan(byResponseId(a.id), SPAN_TIMEOUT);
  });

  test('completions, not streamed', async () => {
    const prompt = 'The capital of France is';
    const body = { model: MODEL, prompt, max_tokens: 8, temperature: 0.2, top_p: 0.95, top_k: 5, user: 'completer' };
    const { d, a, t0, t1 } = await pair((c) => c.completions.create(body));
    assert.deepEqual(normalize(a), normalize(d));
    assert.equal(a.object, 'text_completion');
    assert.match(a.id, /^cmpl-/);
    const span = await rx.waitForSpan(byResponseId(a.id), SPAN_TIMEOUT);
    assertEntrySpan(span, { name: `text_completion ${MODEL}`, spanKind: 'LLM', operation: 'text_completion', model: MODEL });
    assertOk(span);
    assertWithin(span, t0, t1);
    assertAttr(span, 'gen_ai.request.temperature', 0.2, 'double');
    assertAttr(span, 'gen_ai.request.top_p', 0.95, 'double');
    assertAttr(span, 'gen_ai.request.top_k', 5, 'int');
    assertAttr(span, 'gen_ai.request.max_tokens', 8, 'int');
    assertAttr(span, 'gen_ai.request.is_stream', false, 'bool');
    assertAttr(span, 'gen_ai.user.id', 'completer', 'string');
    assertAttr(span, 'gen_ai.response.model', a.model, 'string');
    assertAttr(span, 'gen_ai.response.finish_reasons', [a.choices[0].finish_reason], 'array<string>');
    assertUsage(span, a.usage);
    const input = jsonAttr(span, 'gen_ai.input.messages');
    const output = jsonAttr(span, 'gen_ai.output.messages');
    assert.ok(Array.isArray(input) && JSON.stringify(input).includes(JSON.stringify(prompt).slice(1, -1)), `prompt in input messages: ${JSON.stringify(input)}`);
    assert.ok(Array.isArray(output) && output.length === 1, `one output message: ${JSON.stringify(output)}`);
    assert.equal(output[0].finish_reason, a.choices[0].finish_reason);
    assert.deepEqual(output[0].parts, [{ type: 'text', content: a.choices[0].text }]);
  });

  test('completions, streamed without usage: no usage chunk to the client, exact usage on the span', async () => {
    const body = { model: MODEL, prompt: 'Once upon a time', max_tokens: 10, stream: true };
    const { d, a } = await pair(async (c) => collectStream(await c.completions.create(body)));
    assert.deepEqual(normalize(a), normalize(d));
    for (const ch of a) {
      assert.ok(!ch.usage, `client must not see usage: ${JSON.stringify(ch)}`);
      assert.ok(ch.choices.length > 0, 'no empty-choices chunk');
    }
    const ref = await reference(async (c) =>
      collectStream(await c.completions.create({ ...body, stream_options: { include_usage: true } })),
    );
    assert.deepEqual(streamText(ref), streamText(a));
    const span = await rx.waitForSpan(byResponseId(a[0].id), SPAN_TIMEOUT);
    assertEntrySpan(span, { name: `text_completion ${MODEL}`, spanKind: 'LLM', operation: 'text_completion', model: MODEL });
    assertAttr(span, 'gen_ai.request.is_stream', true, 'bool');
    assertAttr(span, 'gen_ai.response.finish_reasons', [streamFinishReasons(a)[0]], 'array<string>');
    assertUsage(span, ref.at(-1).usage);
    assert.ok(typeof span.attributes['session.id'] === 'string' && span.attributes['session.id'].length > 0, 'session.id');
  });

  test('completions, streamed with include_usage', async () => {
    const body = { model: MODEL, prompt: 'Roses are red', max_tokens: 6, stream: true, stream_options: { include_usage: true } };
    const { d, a } = await pair(async (c) => collectStream(await c.completions.create(body)));
    assert.deepEqual(normalize(a), normalize(d));
    assert.equal(a.filter((c) => c.usage).length, 1);
    const span = await rx.waitForSpan(byResponseId(a[0].id), SPAN_TIMEOUT);
    assertUsage(span, a.at(-1).usage);
  });

  test('embeddings via client.embeddings.create', async () => {
    const body = { model: MODEL, input: ['first sentence', 'second sentence'], user: 'embedder' };
    const { d, a } = await pair((c) => c.embeddings.create(body));
    assert.deepEqual(normalize(a), normalize(d));
    assert.equal(a.data.length, 2);
    assert.ok(a.data[0].embedding.length > 0);
    const pred = a.id ? byResponseId(a.id) : (s) => s.name === `embeddings ${MODEL}`;
    const span = await rx.waitForSpan(pred, SPAN_TIMEOUT);
    assertEntrySpan(span, { name: `embeddings ${MODEL}`, spanKind: 'EMBEDDING', operation: 'embeddings', model: MODEL });
    assertOk(span);
    if (a.id) assertAttr(span, 'gen_ai.response.id', a.id, 'string');
    assertAttr(span, 'gen_ai.response.model', a.model, 'string');
    assertAttr(span, 'gen_ai.user.id', 'embedder', 'string');
    assertAttr(span, 'gen_ai.usage.input_tokens', a.usage.prompt_tokens, 'int');
  });

  for (const [path, body] of [
    ['/v1/rerank', { model: MODEL, query: 'What is a GPU?', documents: ['A GPU is a processor.', 'Bananas are yellow.', 'CUDA runs on GPUs.'], top_n: 2 }],
    ['/rerank', { model: MODEL, query: 'capital of France', documents: ['Paris', 'Berlin'] }],
    ['/v1/score', { model: MODEL, text_1: 'What is the capital of France?', text_2: ['Paris is the capital.', 'The sky is blue.'] }],
  ]) {
    test(`rerank entry span for POST ${path} (plain HTTP)`, async () => {
      const { d, a, t0, t1 } = await pair((c) => postJson(`${c === direct ? simDirect.url : agent.url}${path}`, body));
      assert.equal(a.status, 200, a.text);
      assert.equal(a.status, d.status);
      assert.equal(a.headers.get('content-type'), d.headers.get('content-type'));
      assert.deepEqual(normalize(a.json), normalize(d.json));
      const id = a.json.id;
      assert.ok(id, `response id: ${a.text}`);
      const span = await rx.waitForSpan(byResponseId(id), SPAN_TIMEOUT);
      assertEntrySpan(span, { name: `rerank ${MODEL}`, spanKind: 'RERANKER', operation: 'rerank', model: MODEL });
      assertOk(span);
      assertWithin(span, t0, t1);
      assertAttr(span, 'gen_ai.response.model', a.json.model, 'string');
      if (a.json.usage?.prompt_tokens !== undefined) assertAttr(span, 'gen_ai.usage.input_tokens', a.json.usage.prompt_tokens, 'int');
    });
  }

  test('tools: tool_calls finish reason, not streamed and streamed', async () => {
    const body = {
      model: MODEL,
      messages: [{ role: 'user', content: 'What is the weather in Paris?' }],
      tools: [WEATHER_TOOL],
      tool_choice: 'auto',
      max_tokens: 64,
    };
    const { d, a } = await pair((c) => c.chat.completions.create(body));
    assert.deepEqual(normalize(a), normalize(d));
    assert.equal(a.choices[0].finish_reason, 'tool_calls');
    const call = a.choices[0].message.tool_calls?.[0];
    assert.equal(call?.function?.name, 'get_weather');
    const span = await rx.waitForSpan(byResponseId(a.id), SPAN_TIMEOUT);
    assertAttr(span, 'gen_ai.response.finish_reasons', ['tool_calls'], 'array<string>');
    assertUsage(span, a.usage);
    const out = jsonAttr(span, 'gen_ai.output.messages');
    assert.equal(out.length, 1);
    assert.ok(['tool_call', 'tool_calls'].includes(out[0].finish_reason), `output finish_reason: ${out[0].finish_reason}`);
    const part = out[0].parts.find((p) => p.type === 'tool_call');
    assert.ok(part, `a tool_call part in output messages: ${JSON.stringify(out)}`);
    assert.equal(part.name, 'get_weather');

    const s = await pair(async (c) => collectStream(await c.chat.completions.create({ ...body, stream: true })));
    assert.deepEqual(normalize(s.a), normalize(s.d));
    assert.equal(streamFinishReasons(s.a)[0], 'tool_calls');
    const sspan = await rx.waitForSpan(byResponseId(s.a[0].id), SPAN_TIMEOUT);
    assertAttr(sspan, 'gen_ai.response.finish_reasons', ['tool_calls'], 'array<string>');
    assertAttr(sspan, 'gen_ai.request.is_stream', true, 'bool');
  });

  test('n=2: two choices, choice.count 2, two finish reasons, two output messages', async () => {
    const body = chatBody({ n: 2, temperature: 0.9, max_tokens: 6 });
    const { d, a } = await pair((c) => c.chat.completions.create(body));
    assert.deepEqual(normalize(a), normalize(d));
    assert.equal(a.choices.length, 2);
    const span = await rx.waitForSpan(byResponseId(a.id), SPAN_TIMEOUT);
    assertAttr(span, 'gen_ai.request.choice.count', 2, 'int');
    assertAttr(span, 'gen_ai.response.finish_reasons', a.choices.map((c) => c.finish_reason), 'array<string>');
    assertUsage(span, a.usage);
    const out = jsonAttr(span, 'gen_ai.output.messages');
    assert.deepEqual(out, a.choices.map((c) => textMessage('assistant', c.message.content, c.finish_reason)));

    const s = await pair(async (c) => collectStream(await c.chat.completions.create({ ...body, stream: true })));
    assert.deepEqual(byChoice(normalize(s.a)), byChoice(normalize(s.d)));
    const fr = streamFinishReasons(s.a);
    const sspan = await rx.waitForSpan(byResponseId(s.a[0].id), SPAN_TIMEOUT);
    assertAttr(sspan, 'gen_ai.request.choice.count', 2, 'int');
    assertAttr(sspan, 'gen_ai.response.finish_reasons', [fr[0], fr[1]], 'array<string>');
  });

  test('engine error (stream_options without stream): same 400 error, ERROR span', async () => {
    const body = chatBody({ stream_options: { include_usage: true } });
    const { d, a } = await pair((c) => postJson(`${c === direct ? simDirect.url : agent.url}/v1/chat/completions`, body));
    assert.equal(d.status, 400, d.text);
    assert.equal(a.status, d.status);
    assert.deepEqual(a.json, d.json);
    const span = await rx.waitForSpan((s) => s.name === `chat ${MODEL}` && s.status.code === 2, SPAN_TIMEOUT);
    assertError(span);
    assertAttr(span, 'gen_ai.request.model', MODEL, 'string');
  });

  test('other paths are forwarded unchanged: /v1/models, /health, /version', async () => {
    for (const path of ['/v1/models', '/health', '/version']) {
      const { d, a } = await pair((c) => get(`${c === direct ? simDirect.url : agent.url}${path}`));
      assert.equal(a.status, d.status, path);
      assert.equal(a.headers.get('content-type'), d.headers.get('content-type'), path);
      if (d.json !== undefined) assert.deepEqual(normalize(a.json), normalize(d.json), path);
      else assert.equal(a.text, d.text, path);
    }
  });

  test('no credentials in any exported span', async () => {
    assert.ok(rx.spans.length >= 10, `spans received: ${rx.summary()}`);
    for (const s of rx.spans) {
      const text = JSON.stringify({ a: s.attributes, r: s.resource, e: s.events });
      assert.ok(!text.includes(API_KEY), `span ${s.name} contains the API key`);
      assert.ok(!/authorization/i.test(Object.keys(s.attributes).join(' ')), `span ${s.name} has an authorization attribute`);
    }
  });
});

// ---------------------------------------------------------------------------------------------
describe('trace context and request ids, OTLP http/protobuf export', () => {
  let rx;
  let sim;
  let tap; // records what the engine receives from the agent
  let agent;
  let client;

  before(async () => {
    rx = await startHttpReceiver();
    sim = await startSim({ model: MODEL, seed: SEED, speed: SPEED });
    tap = await startTap(sim.url);
    agent = await startAgent({ upstream: tap.url, otlp: { endpoint: rx.endpoint, protocol: 'http/protobuf' } });
    rx.diag = () => agent.describe();
    client = openaiClient(agent.url);
  });

  after(async () => {
    await stopAll(agent, sim);
    await tap?.close();
    await rx?.close();
  });

  const lastUpstream = (path) => tap.requests.filter((r) => r.url === path).at(-1);

  test('client traceparent continued; engine gets the entry span as parent and an X-Request-Id', async () => {
    const traceId = randomTraceId();
    const parentId = randomSpanId();
    const r = await client.chat.completions.create(chatBody(), {
      headers: { traceparent: `00-${traceId}-${parentId}-01`, tracestate: 'e2e=1' },
    });
    const span = await rx.waitForSpan(byResponseId(r.id), SPAN_TIMEOUT);
    assert.equal(span.transport, 'http/protobuf');
    assert.equal(span.traceId, traceId, 'same trace id as the client');
    assert.equal(span.parentSpanId, parentId, "parent is the client's span");
    assert.notEqual(span.spanId, parentId);
    assert.equal(span.traceState, 'e2e=1', 'tracestate kept on the span');

    const up = lastUpstream('/v1/chat/completions');
    assert.ok(up, 'engine received the request');
    const tp = /^00-([0-9a-f]{32})-([0-9a-f]{16})-([0-9a-f]{2})$/.exec(up.headers.traceparent || '');
    assert.ok(tp, `engine traceparent: ${up.headers.traceparent}`);
    assert.equal(tp[1], traceId);
    assert.equal(tp[2], span.spanId, "engine's parent is the entry span");
    assert.equal(tp[3], '01');
    assert.equal(up.headers.tracestate, 'e2e=1', 'tracestate forwarded');
    const xrid = up.headers['x-request-id'];
    assert.ok(xrid, 'gateway sent an X-Request-Id');
    assert.equal(r.id, `chatcmpl-${xrid}`, 'response id built from the X-Request-Id');
    assert.ok(!('authorization' in span.attributes));
    assert.ok(rx.httpRequests.every((q) => q.path === '/v1/traces' && q.contentType === 'application/x-protobuf'), JSON.stringify(rx.httpRequests.map((q) => [q.path, q.contentType])));
  });

  test('no client traceparent: a new trace, engine parent is the entry span', async () => {
    const r = await client.chat.completions.create(chatBody({ stream: true }));
    const chunks = await collectStream(r);
    const span = await rx.waitForSpan(byResponseId(chunks[0].id), SPAN_TIMEOUT);
    assert.equal(span.parentSpanId, '');
    const up = lastUpstream('/v1/chat/completions');
    assert.equal(up.headers.traceparent?.split('-')[1], span.traceId);
    assert.equal(up.headers.traceparent?.split('-')[2], span.spanId);
    assert.equal(chunks[0].id, `chatcmpl-${up.headers['x-request-id']}`);
  });

  test('client X-Request-Id is kept: response ids chatcmpl-<id> and cmpl-<id>', async () => {
    const chatId = `e2e-chat-${randomSpanId()}`;
    const r = await client.chat.completions.create(chatBody(), { headers: { 'X-Request-Id': chatId } });
    assert.equal(r.id, `chatcmpl-${chatId}`);
    assert.equal(lastUpstream('/v1/chat/completions').headers['x-request-id'], chatId);
    const span = await rx.waitForSpan(byResponseId(r.id), SPAN_TIMEOUT);
    assertAttr(span, 'gen_ai.response.id', `chatcmpl-${chatId}`, 'string');

    const cmplId = `e2e-cmpl-${randomSpanId()}`;
    const c = await client.completions.create({ model: MODEL, prompt: 'hello', max_tokens: 3 }, { headers: { 'X-Request-Id': cmplId } });
    assert.equal(c.id, `cmpl-${cmplId}`);
    assert.equal(lastUpstream('/v1/completions').headers['x-request-id'], cmplId);
    await rx.waitForSpan(byResponseId(c.id), SPAN_TIMEOUT);
  });
});

// ---------------------------------------------------------------------------------------------
describe('content capture settings, OTLP http/json export', () => {
  let rx;
  let sim;
  let agentOff;
  let agentShort;

  before(async () => {
    rx = await startHttpReceiver();
    sim = await startSim({ model: MODEL, seed: SEED, speed: SPEED });
    [agentOff, agentShort] = await Promise.all([
      startAgent({
        upstream: sim.url,
        otlp: { endpoint: rx.endpoint, protocol: 'http/json' },
        env: { OTEL_INSTRUMENTATION_GENAI_CAPTURE_MESSAGE_CONTENT: 'false', OTEL_SERVICE_NAME: 'e2e-capture-off' },
      }),
      startAgent({
        upstream: sim.url,
        otlp: { endpoint: rx.endpoint, protocol: 'http/json' },
        env: { OTEL_INSTRUMENTATION_GENAI_MESSAGE_CONTENT_MAX_LENGTH: '10', OTEL_SERVICE_NAME: 'e2e-capture-short' },
      }),
    ]);
    rx.diag = () => `${agentOff.describe()}\n${agentShort.describe()}`;
  });

  after(async () => {
    await stopAll(agentOff, agentShort, sim);
    await rx?.close();
  });

  test('capture off: entry span without gen_ai.input/output.messages', async () => {
    const r = await openaiClient(agentOff.url).chat.completions.create(chatBody());
    const span = await rx.waitForSpan(byResponseId(r.id), SPAN_TIMEOUT);
    assert.equal(span.transport, 'http/json');
    assert.equal(span.resource['service.name'], 'e2e-capture-off');
    assertEntrySpan(span, { name: `chat ${MODEL}`, spanKind: 'LLM', operation: 'chat', model: MODEL });
    assertNoAttr(span, 'gen_ai.input.messages');
    assertNoAttr(span, 'gen_ai.output.messages');
    assertUsage(span, r.usage);
    assertAttr(span, 'gen_ai.request.is_stream', false, 'bool');
    assertAttr(span, 'gen_ai.response.finish_reasons', [r.choices[0].finish_reason], 'array<string>');
    assert.ok(rx.httpRequests.every((q) => q.path === '/v1/traces' && q.contentType === 'application/json'), JSON.stringify(rx.httpRequests.map((q) => [q.path, q.contentType])));
  });

  test('max length 10: every content item truncated to 10 characters, JSON kept valid', async () => {
    const longUser = 'abcdefghijklmnopqrstuvwxyz "quoted" ünïcödé — end';
    const shortSys = 'Be brief.';
    const r = await openaiClient(agentShort.url).chat.completions.create({
      model: MODEL,
      messages: [
        { role: 'system', content: shortSys },
        { role: 'user', content: longUser },
      ],
      max_tokens: 20,
    });
    // Matched by service, not by response id: the id must not be truncated, checked below.
    const fromShort = (s) => s.resource['service.name'] === 'e2e-capture-short';
    const span = (await rx.waitForSpans(fromShort, SPAN_TIMEOUT, { count: 1 }))[0];
    assertAttr(span, 'gen_ai.response.id', r.id, 'string');
    assert.deepEqual(jsonAttr(span, 'gen_ai.input.messages'), [textMessage('system', shortSys), textMessage('user', [...longUser].slice(0, 10).join(''))]);
    const out = jsonAttr(span, 'gen_ai.output.messages');
    const full = r.choices[0].message.content;
    assert.ok([...full].length > 10, `need a reply longer than 10 characters to test truncation: ${JSON.stringify(full)}`);
    assert.deepEqual(out, [textMessage('assistant', [...full].slice(0, 10).join(''), r.choices[0].finish_reason)]);

    // Streamed output is truncated the same way.
    const chunks = await collectStream(
      await openaiClient(agentShort.url).chat.completions.create({ model: MODEL, messages: [{ role: 'user', content: longUser }], max_tokens: 20, stream: true }),
    );
    const sspan = (await rx.waitForSpans(fromShort, SPAN_TIMEOUT, { count: 2 }))[1];
    assertAttr(sspan, 'gen_ai.response.id', chunks[0].id, 'string');
    const sfull = streamText(chunks)[0];
    assert.deepEqual(jsonAttr(sspan, 'gen_ai.output.messages')[0].parts, [{ type: 'text', content: [...sfull].slice(0, 10).join('') }]);
  });
});

// ---------------------------------------------------------------------------------------------
describe('client aborts and upstream failures', () => {
  let rx;
  let sim;
  let agent;
  let deadAgent;

  const simStats = async () => (await get(`${sim.url}/_sim/stats`)).json;

  before(async () => {
    rx = await startGrpcReceiver();
    // Slow enough that a long generation is still running when the client gives up.
    sim = await startSim({ model: MODEL, seed: SEED, speed: 1 });
    const dead = `http://127.0.0.1:${await closedPort()}`;
    [agent, deadAgent] = await Promise.all([
      startAgent({ upstream: sim.url, otlp: { endpoint: rx.endpoint, protocol: 'grpc' } }),
      startAgent({ upstream: dead, otlp: { endpoint: rx.endpoint, protocol: 'grpc' }, env: { OTEL_SERVICE_NAME: 'e2e-dead-upstream' } }),
    ]);
    rx.diag = () => `${agent.describe()}\n${deadAgent.describe()}\n${sim.describe()}`;
  });

  after(async () => {
    await stopAll(agent, deadAgent, sim);
    await rx?.close();
  });

  test('client aborts a stream mid-way: engine aborts the request, span ERROR with error.type', async () => {
    const before0 = await simStats();
    assert.equal(typeof before0.aborted, 'number', `/_sim/stats: ${JSON.stringify(before0)}`);
    const ac = new AbortController();
    const stream = await openaiClient(agent.url).chat.completions.create(
      { model: MODEL, messages: [{ role: 'user', content: 'Tell me everything.' }], max_tokens: 4000, stream: true },
      { signal: ac.signal },
    );
    const got = [];
    try {
      for await (const ch of stream) {
        got.push(ch);
        if (got.length === 3) ac.abort();
      }
    } catch (e) {
      assert.match(`${e.name} ${e.message}`, /abort/i, 'the client saw its own abort');
    }
    assert.ok(got.length >= 3, `chunks before the abort: ${got.length}`);
    assert.ok(got.length < 100, 'the stream stopped after the abort');
    const id = got[0].id;
    const st = await pollUntil(async () => {
      const s = await simStats();
      return s.aborted > before0.aborted ? s : null;
    }, { timeoutMs: 5000 });
    assert.ok(st, `engine did not abort the request: ${JSON.stringify(await simStats())}`);
    const span = await rx.waitForSpan(byResponseId(id), SPAN_TIMEOUT);
    assertError(span);
    assertAttr(span, 'gen_ai.request.is_stream', true, 'bool');
    assertEntrySpan(span, { name: `chat ${MODEL}`, spanKind: 'LLM', operation: 'chat', model: MODEL });
  });

  test('client aborts a non-streamed request: engine aborts it too, span ERROR', async () => {
    const before0 = await simStats();
    const ac = new AbortController();
    const xrid = `e2e-abort-${randomSpanId()}`;
    const p = openaiClient(agent.url).completions.create(
      { model: MODEL, prompt: 'An endless essay:', max_tokens: 4000 },
      { signal: ac.signal, headers: { 'X-Request-Id': xrid } },
    );
    p.catch(() => {});
    const running = await pollUntil(async () => (await simStats()).requests_received > before0.requests_received, { timeoutMs: 5000, intervalMs: 20 });
    assert.ok(running, 'request reached the engine');
    ac.abort();
    await assert.rejects(p);
    const st = await pollUntil(async () => ((await simStats()).aborted > before0.aborted ? true : null), { timeoutMs: 5000 });
    assert.ok(st, `engine did not abort: ${JSON.stringify(await simStats())}`);
    const span = await rx.waitForSpan((s) => s.name === `text_completion ${MODEL}` && s.status.code === 2, SPAN_TIMEOUT);
    assertError(span);
  });

  test('upstream down: 502 with a JSON error body, span ERROR', async () => {
    const raw = await postJson(`${deadAgent.url}/v1/chat/completions`, chatBody());
    assert.equal(raw.status, 502, raw.text);
    assert.match(raw.headers.get('content-type') || '', /^application\/json/);
    assert.ok(raw.json && typeof raw.json === 'object', `JSON body: ${raw.text}`);
    assert.ok(raw.json.error || raw.json.message, `error body: ${raw.text}`);

    await assert.rejects(openaiClient(deadAgent.url).chat.completions.create(chatBody()), (e) => e.status === 502);

    const spans = await rx.waitForSpans((s) => s.resource['service.name'] === 'e2e-dead-upstream' && s.name === `chat ${MODEL}`, SPAN_TIMEOUT, { count: 2 });
    for (const s of spans) {
      assertError(s);
      assertAttr(s, 'gen_ai.request.model', MODEL, 'string');
    }
  });
});
