// End-to-end: exporting to a dead endpoint costs bounded memory. The agent's only trace
// destination is an OTLP gRPC endpoint on a closed port, its queue bound in bytes
// (--export-queue-mb); a flood of large spans through the receiver is accepted (a failing
// destination takes no part in admission), the queue stays within its bound, the drops are
// counted with their reason, resident memory stays bounded, and /healthz names the failing
// exporter while still answering 200.
import assert from 'node:assert/strict';
import fs from 'node:fs';
import { after, before, describe, test } from 'node:test';

import { closedPort, pollUntil, rssBoundMiB, startAgent, startSim, stopAll } from './lib/proc.mjs';
import { get, metricSum, parsePrometheus, randomSpanId, randomTraceId } from './lib/util.mjs';

const QUEUE_MB = 2;
const REQUESTS = 120;
const SPANS = 200; // per request, each with a 2 KiB attribute: about 50 MB sent in all
const PAD = 'x'.repeat(2048);
// Resident memory allowed after the flood. Measured after 300 such requests: 36 MiB with a
// 2 MiB bound, 58 MiB with 16, 84 MiB with the default 64 (where the 16,384-item bound binds).
const MAX_RSS_MIB = rssBoundMiB(100);

function rssMib(pid) {
  const status = fs.readFileSync(`/proc/${pid}/status`, 'utf8');
  return Number(/VmRSS:\s+(\d+) kB/.exec(status)[1]) / 1024;
}

function body(r) {
  const now = BigInt(Date.now()) * 1000000n;
  const spans = Array.from({ length: SPANS }, (_, i) => ({
    traceId: randomTraceId(),
    spanId: randomSpanId(),
    name: `dead-${r}-${i}`,
    startTimeUnixNano: String(now),
    endTimeUnixNano: String(now + 1000n),
    attributes: [{ key: 'pad', value: { stringValue: PAD } }],
  }));
  return JSON.stringify({
    resourceSpans: [{
      resource: { attributes: [{ key: 'service.name', value: { stringValue: 'e2e-dead-endpoint' } }] },
      scopeSpans: [{ scope: { name: 'e2e.dead' }, spans }],
    }],
  });
}

describe('exporting to a dead endpoint', () => {
  let sim;
  let agent;

  before(async () => {
    sim = await startSim({ model: 'e2e-dead/model', seed: 13, speed: 20 });
    const port = await closedPort();
    agent = await startAgent({
      upstream: sim.url,
      otlp: { endpoint: `http://127.0.0.1:${port}`, protocol: 'grpc' },
      env: { OTEL_BSP_MAX_QUEUE_SIZE: '1000000' }, // the bytes bound decides
      extra: ['--export-queue-mb', String(QUEUE_MB)],
    });
  });

  after(async () => {
    await stopAll(agent, sim);
  });

  test('the queue stays within --export-queue-mb, drops are counted, /healthz says degraded', async () => {
    const metrics = async () => parsePrometheus((await get(`${agent.adminUrl}/metrics`)).text);
    const traces = (l) => l.signal === 'traces' && l.exporter === 'otlp_grpc';
    let maxQueueBytes = 0;
    let accepted = 0;
    for (let r = 0; r < REQUESTS; r++) {
      const res = await fetch(`${agent.receiverHttp}/v1/traces`, {
        method: 'POST',
        headers: { 'content-type': 'application/json' },
        body: body(r),
      });
      await res.arrayBuffer();
      if (res.status === 200) accepted += SPANS;
      else assert.equal(res.status, 503);
      if (r % 10 === 9) {
        const s = await metrics();
        maxQueueBytes = Math.max(maxQueueBytes, metricSum(s, 'infertel_exporter_queue_bytes', traces));
      }
    }
    assert.ok(accepted >= SPANS * REQUESTS / 2, `the dead endpoint made the agent refuse: ${accepted} accepted`);
    assert.ok(maxQueueBytes <= QUEUE_MB * 1024 * 1024, `queue at ${maxQueueBytes} bytes`);

    const s = await pollUntil(async () => {
      const x = await metrics();
      return metricSum(x, 'infertel_exporter_dropped_items_total', (l) => traces(l) && l.reason === 'queue_full') > 0 ? x : null;
    }, { timeoutMs: 10000, intervalMs: 200 });
    assert.ok(s, `no queue_full drop counted\n${agent.describe()}`);
    assert.equal(metricSum(s, 'infertel_exporter_failing', traces), 1);
    assert.equal(metricSum(s, 'infertel_exporter_sent_items_total', traces), 0);

    const rss = rssMib(agent.child.pid);
    assert.ok(rss < MAX_RSS_MIB, `resident memory ${rss.toFixed(1)} MiB after the flood`);

    const health = await get(`${agent.adminUrl}/healthz`);
    assert.equal(health.status, 200);
    assert.match(health.text, /^degraded\n/);
    assert.match(health.text, /exporter otlp_grpc \(traces\) failing: \d+ failed attempts in a row, \d+ items dropped/);
  });
});
