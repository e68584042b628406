// End-to-end: what outside input can make the agent keep in its metrics is bounded.
// - Model names chosen by clients: `infertel sim --engine sglang` answers any model name, and
//   the official openai client names many; the model label keeps the served model, at most
//   --metric-model-cap others (default 100), and `other`, with the folded values counted.
// - A scrape target serving 200k series whose labels change on every scrape (a Node HTTP
//   server): series capped per target, vanished ones expired, counters moved, the agent's RSS
//   (from /proc) bounded, its own /metrics small and fast.
// Both admin expositions pass `promtool check metrics`.
import assert from 'node:assert/strict';
import fs from 'node:fs';
import http from 'node:http';
import { after, before, describe, test } from 'node:test';

import { promtoolCheck } from './lib/prom.mjs';
import { pollUntil, rssBoundMiB, startAgent, startSim, stopAll, memoryOf } from './lib/proc.mjs';
import { get, metricSum, openaiClient, parsePrometheus } from './lib/util.mjs';

const adminMetrics = async (agent) => {
  const r = await get(`${agent.adminUrl}/metrics`);
  assert.equal(r.status, 200);
  return r.text;
};

const MIB = 1024 * 1024;

/** VmRSS and VmHWM (peak) of a process, in MiB. */
function memoryMiB(pid) {
  const { rss, peak } = memoryOf(pid);
  return { rss: rss / MIB, peak: peak / MIB };
}

describe('model label values chosen by clients', () => {
  const CAP = 100; // the default --metric-model-cap
  const NAMES = 130;
  let sim;
  let agent;
  let served;

  before(async () => {
    sim = await startSim({ engine: 'sglang', model: 'e2e-org/served-model', speed: 50 });
    served = (await get(`${sim.url}/v1/models`)).json.data[0].id;
    agent = await startAgent({ upstream: sim.url, engine: 'sglang' });
    // The agent learns the served model from the engine's /v1/models, off the data path.
    const known = await pollUntil(async () => metricSum(parsePrometheus(await adminMetrics(agent)), 'infertel_metric_label_known_values') >= 1, { timeoutMs: 5000 });
    assert.ok(known, 'the agent read the served models');
  });

  after(async () => stopAll(agent, sim));

  test('series stay at the cap plus the served model plus `other`; the folded values are counted', async () => {
    const client = openaiClient(agent.url);
    const ask = (model) => client.chat.completions.create({ model, messages: [{ role: 'user', content: 'hi' }], max_tokens: 2 });
    for (let i = 0; i < NAMES; i++) {
      const r = await ask(`client-chosen-${i}`);
      assert.equal(r.model, `client-chosen-${i}`, 'the engine answers any model name');
    }
    await ask(served); // after the cap is full
    const text = await adminMetrics(agent);
    await promtoolCheck(text);
    const samples = parsePrometheus(text);
    const input = samples.filter((s) => s.name === 'genai_llm_usage_tokens_total' && s.labels.usageType === 'input');
    const models = new Set(input.map((s) => s.labels.modelName));
    assert.equal(models.size, CAP + 2, [...models].join(', '));
    assert.ok(models.has(served), 'the served model keeps its own series');
    assert.ok(models.has('other'));
    assert.ok(models.has('client-chosen-0') && !models.has(`client-chosen-${NAMES - 1}`), 'first come, first kept');
    assert.equal(metricSum(samples, 'infertel_metric_label_folded_total', (l) => l.label === 'model' && l.reason === 'cap'), NAMES - CAP);
    assert.equal(metricSum(samples, 'infertel_metric_label_values', (l) => l.label === 'model'), CAP);
    // Folding loses no tokens: `other` carries what the folded requests used.
    const total = metricSum(samples, 'prompt_tokens_total');
    assert.equal(input.reduce((a, s) => a + s.value, 0), total);
  });
});

/**
 * A vLLM-looking /metrics of `series` prompt-token counters (and as many running-request
 * gauges) whose `engine` labels are new on every scrape.
 */
function startChurningTarget(series) {
  let scrape = 0;
  const server = http.createServer((req, res) => {
    if (req.url !== '/metrics') {
      res.writeHead(404).end();
      return;
    }
    const base = scrape++ * series;
    const parts = ['# TYPE vllm:prompt_tokens_total counter\n'];
    for (let i = 0; i < series / 2; i++) parts.push(`vllm:prompt_tokens_total{engine="${base + i}",model_name="m"} ${scrape}\n`);
    parts.push('# TYPE vllm:num_requests_running gauge\n');
    for (let i = 0; i < series / 2; i++) parts.push(`vllm:num_requests_running{engine="${base + i}",model_name="m"} 1\n`);
    res.writeHead(200, { 'content-type': 'text/plain; version=0.0.4' });
    res.end(parts.join(''));
  });
  return new Promise((resolve) =>
    server.listen(0, '127.0.0.1', () =>
      resolve({
        url: `http://127.0.0.1:${server.address().port}`,
        scrapes: () => scrape,
        close: () => new Promise((r) => {
          server.closeAllConnections();
          server.close(() => r());
        }),
      }),
    ),
  );
}

describe('a scrape target serving 200k series with labels that change on every scrape', () => {
  const SERIES = 200_000;
  const MAX_SERIES = 10_000;
  let target;
  let agent;

  before(async () => {
    target = await startChurningTarget(SERIES);
    agent = await startAgent({
      upstream: target.url,
      extra: ['--metrics-url', `${target.url}/metrics`, '--scrape-interval', '200ms', '--scrape-stale-after', '1s', '--scrape-max-series', String(MAX_SERIES)],
    });
  });

  after(async () => {
    await stopAll(agent);
    await target?.close();
  });

  test('series capped per target, vanished ones expire, counters move, memory and /metrics stay small', async () => {
    const self = (samples, name, reason) => metricSum(samples, name, (l) => l.upstream === 'default' && (!reason || l.reason === reason));
    // Enough scrapes for old series to have expired several times over.
    const samples = await pollUntil(async () => {
      const s = parsePrometheus(await adminMetrics(agent));
      return self(s, 'infertel_scrape_expired_series_total') >= 2 * MAX_SERIES && self(s, 'infertel_scrapes_total') >= 15 ? s : null;
    }, { timeoutMs: 60000, intervalMs: 250 });
    assert.ok(samples, `scrapes went on and series expired\n${agent.describe()}`);
    assert.ok(self(samples, 'infertel_scrape_series') <= MAX_SERIES);
    assert.ok(self(samples, 'infertel_scrape_refused_samples_total', 'series_limit') > 0);
    assert.ok(self(samples, 'infertel_scrape_refused_samples_total', 'sample_limit') > 0, '200k samples are more than the parse keeps');
    assert.equal(self(samples, 'infertel_scrape_failures_total'), 0);

    // The agent's own exposition: at most the cap of engine series, quick to render.
    const t0 = process.hrtime.bigint();
    const text = await adminMetrics(agent);
    const ms = Number(process.hrtime.bigint() - t0) / 1e6;
    const engineSeries = parsePrometheus(text).filter((s) => s.name.startsWith('gen_ai_vllm_')).length;
    assert.ok(engineSeries > 0 && engineSeries <= MAX_SERIES, `${engineSeries} engine series`);
    assert.ok(text.length < 4 << 20, `/metrics is ${text.length} bytes`);
    assert.ok(ms < 1000, `/metrics took ${ms} ms`);
    await promtoolCheck(text);

    const mem = memoryMiB(agent.child.pid);
    console.log(
      `# churning target: ${target.scrapes()} scrapes of ${SERIES} series; agent RSS ${mem.rss.toFixed(1)} MiB, ` +
        `peak ${mem.peak.toFixed(1)} MiB; /metrics ${text.length} bytes in ${ms.toFixed(1)} ms; ` +
        `${engineSeries} engine series; expired ${self(samples, 'infertel_scrape_expired_series_total')}`,
    );
    assert.ok(mem.peak < rssBoundMiB(200), `agent peak RSS ${mem.peak} MiB`);
  });
});
