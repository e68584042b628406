// End-to-end: the two dialects of GenAI telemetry (core/genai_dialect.h). Unset, the telemetry
// model's names exactly; with OTEL_SEMCONV_STABILITY_OPT_IN=gen_ai_latest_experimental (here set
// live through the console's API key otel.semconv-stability.opt-in) the latest OpenTelemetry
// GenAI conventions' instead, over OTLP (decoded with the official protos) and in the Prometheus
// exposition read by Debian's Prometheus; with …/dup both.
import assert from 'node:assert/strict';
import { after, before, describe, test } from 'node:test';

import { startGrpcReceiver } from './lib/otlp.mjs';
import { closedPort, pollUntil, startAgent, startSim, stopAll } from './lib/proc.mjs';
import { startPrometheus } from './lib/prom.mjs';
import { collectStream, get, openaiClient } from './lib/util.mjs';

const MODEL = 'e2e-semconv/model';
const KEY = 'otel.semconv-stability.opt-in';

const LATEST_METRICS = [
  'gen_ai.client.token.usage',
  'gen_ai.client.operation.duration',
  'gen_ai.server.request.duration',
  'gen_ai.server.time_to_first_token',
  'gen_ai.server.time_per_output_token',
];
// The model's families that the latest conventions' metrics replace.
const REPLACED = ['genai_llm_usage_tokens', 'genai_llm_first_token_seconds', 'gen_ai_server_time_per_output_token', 'gen_ai_server_request_duration'];

describe('GenAI conventions: the model\'s names by default, the latest on opt-in', () => {
  let rx;
  let agent;
  let sim;
  let client;
  let marker = 0;

  before(async () => {
    rx = await startGrpcReceiver();
    const port = await closedPort();
    agent = await startAgent({
      upstream: `http://127.0.0.1:${port}`,
      otlp: { endpoint: rx.endpoint, protocol: 'grpc' },
      extra: ['--metric-export-interval', '500ms'],
      env: { OTEL_INSTRUMENTATION_VLLM_TRACING_LEVEL: '1' },
    });
    sim = await startSim({
      model: MODEL,
      speed: 20,
      listen: `127.0.0.1:${port}`,
      extra: ['--otlp-traces-endpoint', `grpc://${agent.receiverGrpc}`],
      env: { OTEL_BSP_SCHEDULE_DELAY: '100' },
    });
    client = openaiClient(agent.url);
  });

  after(async () => {
    await stopAll(agent, sim);
    await rx?.close();
  });

  const setDialect = async (value) => {
    const r = value === null
      ? await fetch(`${agent.adminUrl}/api/config/${KEY}`, { method: 'DELETE' })
      : await fetch(`${agent.adminUrl}/api/config/${KEY}`, { method: 'PUT', headers: { 'content-type': 'application/json' }, body: JSON.stringify({ value }) });
    assert.ok(r.status === 200 || r.status === 204, await r.text());
  };

  // One streamed chat; resolves with its entry span and the engine's llm_request span.
  const oneRequest = async () => {
    const content = `semconv ${++marker}`;
    await collectStream(await client.chat.completions.create({
      model: MODEL, messages: [{ role: 'user', content }], max_tokens: 4, stream: true, stream_options: { include_usage: true },
    }));
    return pollUntil(() => {
      const entry = rx.spans.find((s) => s.name === `chat ${MODEL}` && JSON.stringify(s.attributes).includes(content));
      if (!entry) return null;
      const engine = rx.spans.find((s) => s.traceId === entry.traceId && s.name === 'llm_request');
      return engine ? { entry, engine } : null;
    }, { timeoutMs: 10000 });
  };

  // The metric names of the newest export after `after` requests were sent.
  const exportedMetrics = async (predicate) => pollUntil(() => {
    const last = rx.metricsRequests.at(-1);
    if (!last) return null;
    const ms = last.body.resourceMetrics.flatMap((rm) => rm.scopeMetrics.flatMap((sm) => sm.metrics));
    return predicate(ms) ? ms : null;
  }, { timeoutMs: 10000, intervalMs: 100 });

  test('unset: exactly the model\'s names on spans and metrics', async () => {
    const { entry, engine } = await oneRequest();
    assert.equal(entry.attributes['gen_ai.request.is_stream'], true);
    assert.equal(entry.attributes['gen_ai.provider.name'], undefined);
    assert.equal(entry.attributes['gen_ai.request.stream'], undefined);
    assert.equal(entry.attributes['gen_ai.response.time_to_first_chunk'], undefined);
    assert.ok(engine.attributes['gen_ai.usage.prompt_tokens'] > 0);
    assert.equal(engine.attributes['gen_ai.usage.input_tokens'], undefined);
    assert.equal(engine.attributes['gen_ai.request.model_name'], MODEL);
    const ms = await exportedMetrics((m) => m.some((x) => x.name === 'genai_llm_usage_tokens'));
    const names = ms.map((m) => m.name);
    for (const n of REPLACED) assert.ok(names.includes(n), n);
    for (const n of LATEST_METRICS) assert.ok(!names.includes(n), n);
    const text = (await get(`${agent.adminUrl}/metrics`)).text;
    assert.ok(!text.includes('gen_ai_client_token_usage'));
    assert.ok(!text.includes('gen_ai_server_request_duration_seconds'));
  });

  test('gen_ai_latest_experimental: the latest conventions\' names instead', async () => {
    await setDialect('gen_ai_latest_experimental');
    const { entry, engine } = await oneRequest();
    assert.equal(entry.attributes['gen_ai.provider.name'], 'vllm');
    assert.equal(entry.attributes['gen_ai.operation.name'], 'chat');
    assert.equal(entry.attributes['gen_ai.request.stream'], true);
    assert.equal(entry.attributes['gen_ai.request.is_stream'], undefined);
    assert.ok(entry.attributes['gen_ai.response.time_to_first_chunk'] > 0);
    assert.ok(entry.attributes['gen_ai.usage.input_tokens'] > 0);
    assert.ok(engine.attributes['gen_ai.usage.input_tokens'] > 0, JSON.stringify(engine.attributes));
    assert.ok(engine.attributes['gen_ai.usage.output_tokens'] > 0);
    assert.equal(engine.attributes['gen_ai.usage.prompt_tokens'], undefined);
    assert.equal(engine.attributes['gen_ai.usage.completion_tokens'], undefined);
    assert.equal(engine.attributes['gen_ai.request.model'], MODEL);
    assert.equal(engine.attributes['gen_ai.request.model_name'], undefined);

    const ms = await exportedMetrics((m) => LATEST_METRICS.every((n) => m.some((x) => x.name === n)));
    const byName = Object.fromEntries(ms.map((m) => [m.name, m]));
    for (const n of REPLACED) assert.ok(!byName[n], `${n} is replaced`);
    assert.ok(byName.gen_ai_vllm_prompt_tokens || byName.infertel_request_duration_seconds, 'families with no counterpart stay');
    const usage = byName['gen_ai.client.token.usage'];
    assert.equal(usage.unit, '{token}');
    assert.deepEqual(usage.histogram.dataPoints[0].explicitBounds.slice(0, 3), [1, 4, 16]);
    const types = usage.histogram.dataPoints.map((p) => p.attributes.find((a) => a.key === 'gen_ai.token.type').value.stringValue).sort();
    assert.deepEqual([...new Set(types)], ['input', 'output']);
    const ttft = byName['gen_ai.server.time_to_first_token'].histogram.dataPoints[0];
    assert.equal(byName['gen_ai.server.time_to_first_token'].unit, 's');
    assert.equal(ttft.explicitBounds[0], 0.001);
    assert.equal(ttft.explicitBounds.at(-1), 10);
    const attrs = Object.fromEntries(ttft.attributes.map((a) => [a.key, a.value.stringValue]));
    assert.deepEqual(attrs, { 'gen_ai.operation.name': 'chat', 'gen_ai.provider.name': 'vllm', 'gen_ai.request.model': MODEL });
    assert.equal(byName['gen_ai.server.request.duration'].histogram.dataPoints[0].explicitBounds.at(-1), 81.92);

    // The same in the Prometheus exposition, as Debian's Prometheus reads it.
    const text = (await get(`${agent.adminUrl}/metrics`)).text;
    for (const n of REPLACED) assert.ok(!new RegExp(`^${n}[{ ]`, 'm').test(text), `${n} is replaced in the exposition`);
    const prom = await startPrometheus([agent.adminUrl.replace('http://', '')]);
    try {
      const result = await pollUntil(async () => {
        const r = await prom.query(`sum(gen_ai_server_request_duration_seconds_count{gen_ai_provider_name="vllm"})`);
        return r && r.length === 1 && Number(r[0].value[1]) >= 1 ? r : null;
      }, { timeoutMs: 20000, intervalMs: 250 }).catch((e) => {
        throw new Error(`${e.message}\n--- prometheus ---\n${prom.log().slice(-3000)}`);
      });
      assert.ok(Number(result[0].value[1]) >= 1);
      const tokens = await prom.query('sum by (gen_ai_token_type) (gen_ai_client_token_usage_sum)');
      assert.deepEqual(tokens.map((r) => r.metric.gen_ai_token_type).sort(), ['input', 'output']);
      const q = await prom.query('histogram_quantile(0.5, sum by (le) (gen_ai_server_time_to_first_token_seconds_bucket))');
      assert.ok(q.length === 1 && Number(q[0].value[1]) > 0, JSON.stringify(q));
      const up = await prom.query('up');
      assert.equal(up[0].value[1], '1');
    } finally {
      await prom.close();
    }
  });

  test('gen_ai_latest_experimental/dup: both, side by side; unset again: the model\'s', async () => {
    await setDialect('gen_ai_latest_experimental/dup');
    const { entry, engine } = await oneRequest();
    assert.equal(entry.attributes['gen_ai.request.is_stream'], true);
    assert.equal(entry.attributes['gen_ai.request.stream'], true);
    assert.equal(entry.attributes['gen_ai.provider.name'], 'vllm');
    assert.equal(engine.attributes['gen_ai.usage.prompt_tokens'], engine.attributes['gen_ai.usage.input_tokens']);
    const ms = await exportedMetrics((m) => m.some((x) => x.name === 'genai_llm_usage_tokens') && m.some((x) => x.name === 'gen_ai.client.token.usage'));
    assert.ok(ms);
    await setDialect(null);
    const plain = await oneRequest();
    assert.equal(plain.entry.attributes['gen_ai.provider.name'], undefined);
    assert.equal(plain.engine.attributes['gen_ai.usage.input_tokens'], undefined);
    // A value the key does not accept is refused, naming the accepted ones.
    const bad = await fetch(`${agent.adminUrl}/api/config/${KEY}`, { method: 'PUT', headers: { 'content-type': 'application/json' }, body: JSON.stringify({ value: 'gen_ai_newest' }) });
    assert.equal(bad.status, 400);
    assert.match(await bad.text(), /gen_ai_latest_experimental/);
  });
});
