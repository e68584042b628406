// End-to-end: the agent's admin address. /healthz answers 200; /metrics is valid Prometheus
// text (linted by promtool) whose infertel_ counters move with traffic.
import assert from 'node:assert/strict';
import { after, before, describe, test } from 'node:test';

import { startGrpcReceiver } from './lib/otlp.mjs';
import { promtoolCheck } from './lib/prom.mjs';
import fs from 'node:fs';
import path from 'node:path';

import { closedPort, pollUntil, runCommand, startAgent, startInfertel, startSim, stopAll, tempDir } from './lib/proc.mjs';
import { collectStream, get, metricSum, openaiClient, parsePrometheus } from './lib/util.mjs';

const MODEL = 'e2e-admin/model';

describe('admin endpoints', () => {
  let rx;
  let sim;
  let agent;

  before(async () => {
    rx = await startGrpcReceiver();
    sim = await startSim({ model: MODEL, seed: 3, speed: 20 });
    agent = await startAgent({ upstream: sim.url, otlp: { endpoint: rx.endpoint, protocol: 'grpc' } });
    rx.diag = () => agent.describe();
  });

  after(async () => {
    await stopAll(agent, sim);
    await rx?.close();
  });

  const scrape = async () => {
    const r = await get(`${agent.adminUrl}/metrics`);
    assert.equal(r.status, 200);
    return r;
  };

  test('/healthz answers 200', async () => {
    const r = await get(`${agent.adminUrl}/healthz`);
    assert.equal(r.status, 200, r.text);
  });

  test('/metrics passes promtool check metrics', async () => {
    // Some traffic first so that labelled series exist.
    await openaiClient(agent.url).chat.completions.create({ model: MODEL, messages: [{ role: 'user', content: 'hi' }], max_tokens: 2 });
    // The gateway records an exchange's metrics when it ends, after the response's last byte
    // is written: the client can hold the whole response and scrape before that.
    const hasTokens = (text) => parsePrometheus(text).some((s) => s.name === 'genai_llm_usage_tokens_total');
    const settled = await pollUntil(async () => {
      const x = await scrape();
      return hasTokens(x.text) ? x : null;
    }, { timeoutMs: 10000, intervalMs: 50 });
    const r = settled ?? (await scrape());
    assert.match(r.headers.get('content-type') || '', /^text\/plain/);
    await promtoolCheck(r.text);
    // infertel's own metrics start with infertel_; the rest are the documented families of
    // spec M3/M5 (tests/e2e/metrics.test.mjs checks those).
    const names = new Set(parsePrometheus(r.text).map((s) => s.name));
    assert.ok([...names].some((n) => n.startsWith('infertel_')), `self-metrics present: ${[...names].join(', ')}`);
    assert.ok(names.has('genai_llm_usage_tokens_total'), `gateway-measured tokens present: ${[...names].join(', ')}`);
  });

  test('infertel_ counters increase with requests and exports', async () => {
    const s0 = parsePrometheus((await scrape()).text);
    const req0 = metricSum(s0, 'infertel_gateway_requests_total');
    const sent0 = metricSum(s0, 'infertel_exporter_sent_items_total');
    const client = openaiClient(agent.url);
    const N = 5;
    for (let i = 0; i < N; i++) {
      if (i % 2) await collectStream(await client.chat.completions.create({ model: MODEL, messages: [{ role: 'user', content: `q${i}` }], max_tokens: 3, stream: true }));
      else await client.completions.create({ model: MODEL, prompt: `p${i}`, max_tokens: 3 });
    }
    await rx.waitForSpans((s) => s.resource && s.name.endsWith(MODEL), 10000, { count: N + 1 });
    const s1 = await pollUntil(async () => {
      const s = parsePrometheus((await scrape()).text);
      return metricSum(s, 'infertel_exporter_sent_items_total') >= sent0 + N ? s : null;
    }, { timeoutMs: 10000, intervalMs: 100 });
    const last = parsePrometheus((await scrape()).text);
    assert.ok(s1, `infertel_exporter_sent_items_total did not grow by ${N} (from ${sent0}): ${last.filter((s) => s.name.startsWith('infertel_exporter')).map((s) => `${s.name}${JSON.stringify(s.labels)} ${s.value}`).join('\n')}`);
    assert.ok(metricSum(s1, 'infertel_gateway_requests_total') >= req0 + N, `infertel_gateway_requests_total grew from ${req0} to ${metricSum(s1, 'infertel_gateway_requests_total')}`);
    assert.equal(metricSum(s1, 'infertel_exporter_failures_total'), 0, 'no export failures against a healthy receiver');
  });
});

// The agent file's `admin` is used when --admin is not given (--admin's default used to hide it).
test('the admin address comes from the agent file when --admin is not given', async () => {
  const sim = await startSim({ model: MODEL, seed: 4 });
  const dir = tempDir();
  let agent;
  try {
    const port = await closedPort();
    const file = path.join(dir.dir, 'agent.yaml');
    fs.writeFileSync(file, `admin: 127.0.0.1:${port}\n`);
    agent = await startInfertel(['agent', '--config', file, '--upstream', sim.url, '--listen', '127.0.0.1:0',
      '--receiver-grpc', 'off', '--receiver-http', 'off', '--no-store'], {
      name: 'agent',
      waitFor: { adminUrl: /^infertel agent: admin listening on (http:\/\/[0-9.]+:[0-9]+)/ },
    });
    assert.equal(agent.urls.adminUrl, `http://127.0.0.1:${port}`);
    assert.equal((await get(`${agent.urls.adminUrl}/healthz`)).status, 200);
  } finally {
    await stopAll(agent, sim);
    dir.cleanup();
  }
});
