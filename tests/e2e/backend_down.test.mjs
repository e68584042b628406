// End-to-end: a dead telemetry backend never slows requests. Agents export to a closed port
// (gRPC) and to a server that accepts connections but never answers (OTLP/HTTP); requests keep
// their normal latency and /metrics counts the export failures or drops.
import assert from 'node:assert/strict';
import net from 'node:net';
import { after, before, describe, test } from 'node:test';

import { closedPort, pollUntil, startAgent, startSim, stopAll } from './lib/proc.mjs';
import { collectStream, get, metricSum, openaiClient, parsePrometheus } from './lib/util.mjs';

const MODEL = 'e2e-backend-down/model';
const REQUESTS = 20;
const MAX_MS = 1000;

describe('telemetry backend down', () => {
  let sim;
  let closedAgent;
  let hangAgent;
  let blackhole;
  const sockets = new Set();

  before(async () => {
    sim = await startSim({ model: MODEL, seed: 5, speed: 20 });
    blackhole = net.createServer((s) => {
      sockets.add(s);
      s.on('close', () => sockets.delete(s));
      s.on('error', () => {});
      s.resume(); // read and ignore, never answer
    });
    await new Promise((r) => blackhole.listen(0, '127.0.0.1', r));
    const closed = await closedPort();
    [closedAgent, hangAgent] = await Promise.all([
      startAgent({ upstream: sim.url, otlp: { endpoint: `http://127.0.0.1:${closed}`, protocol: 'grpc' } }),
      startAgent({
        upstream: sim.url,
        otlp: { endpoint: `http://127.0.0.1:${blackhole.address().port}`, protocol: 'http/protobuf' },
        env: { OTEL_EXPORTER_OTLP_TIMEOUT: '1000' },
      }),
    ]);
  });

  after(async () => {
    await stopAll(closedAgent, hangAgent, sim);
    for (const s of sockets) s.destroy();
    await new Promise((r) => (blackhole ? blackhole.close(r) : r()));
  });

  async function timedRequests(agent) {
    const client = openaiClient(agent.url);
    const times = [];
    for (let i = 0; i < REQUESTS; i++) {
      const t0 = performance.now();
      if (i % 2) {
        const chunks = await collectStream(await client.chat.completions.create({ model: MODEL, messages: [{ role: 'user', content: `r${i}` }], max_tokens: 4, stream: true }));
        assert.ok(chunks.length > 0);
      } else {
        const r = await client.chat.completions.create({ model: MODEL, messages: [{ role: 'user', content: `r${i}` }], max_tokens: 4 });
        assert.ok(r.choices.length === 1);
      }
      times.push(performance.now() - t0);
    }
    return times;
  }

  // Export failures, retries or drops: any of them shows the agent noticed the dead backend.
  const exportTrouble = (samples) =>
    metricSum(samples, 'infertel_exporter_failures_total') + metricSum(samples, 'infertel_exporter_dropped_items_total');

  for (const [label, pick] of [
    ['closed port (gRPC)', () => closedAgent],
    ['backend that never answers (http/protobuf)', () => hangAgent],
  ]) {
    test(`${label}: ${REQUESTS} sequential requests each under ${MAX_MS} ms; failures counted`, async () => {
      const agent = pick();
      const times = await timedRequests(agent);
      const slow = times.filter((t) => t >= MAX_MS);
      assert.equal(slow.length, 0, `slow requests (ms): ${times.map((t) => t.toFixed(0)).join(', ')}\n${agent.describe()}`);
      const health = await get(`${agent.adminUrl}/healthz`);
      assert.equal(health.status, 200);
      const samples = await pollUntil(async () => {
        const s = parsePrometheus((await get(`${agent.adminUrl}/metrics`)).text);
        return exportTrouble(s) > 0 ? s : null;
      }, { timeoutMs: 30000, intervalMs: 250 });
      const last = (await get(`${agent.adminUrl}/metrics`)).text;
      assert.ok(samples, `no export failures or drops counted:\n${last}\n${agent.describe()}`);
      assert.equal(metricSum(samples, 'infertel_exporter_sent_items_total'), 0, 'nothing reported as sent');
    });
  }
});
