// End-to-end: when the agent's export queue is nearly full (its backend is slow), its OTLP
// receiver waits for room (--receiver-wait-ms) and then answers "retry later" (gRPC
// UNAVAILABLE, HTTP 503 + Retry-After) instead of taking spans it would have to drop. The
// senders are the official OpenTelemetry JS exporters; once the backend answers again, the
// refused batches are sent again (the OTLP/HTTP exporter does it by itself), every span
// arrives and the agent has dropped none.
import assert from 'node:assert/strict';
import { after, before, describe, test } from 'node:test';

import { ExportResultCode } from '@opentelemetry/core';
import { OTLPTraceExporter as OTLPGrpcExporter } from '@opentelemetry/exporter-trace-otlp-grpc';
import { OTLPTraceExporter as OTLPProtoExporter } from '@opentelemetry/exporter-trace-otlp-proto';
import { Resource } from '@opentelemetry/resources';
import { BasicTracerProvider, InMemorySpanExporter, SimpleSpanProcessor } from '@opentelemetry/sdk-trace-base';

import { startGrpcReceiver } from './lib/otlp.mjs';
import { pollUntil, startAgent, startSim, stopAll } from './lib/proc.mjs';
import { get, metricSum, parsePrometheus } from './lib/util.mjs';

const BATCH = 16;
const BATCHES = 6; // 96 spans against a queue of 64 items: saturated (3/4) after 48
// How long a request waits for room before the refusal (--receiver-wait-ms; 250 by default).
const WAIT_MS = 400;

// Finished spans of an unrelated service (they pass through the agent unchanged), in batches.
function makeBatches() {
  const memory = new InMemorySpanExporter();
  const provider = new BasicTracerProvider({ resource: new Resource({ 'service.name': 'e2e-backpressure' }) });
  provider.addSpanProcessor(new SimpleSpanProcessor(memory));
  const tracer = provider.getTracer('e2e.backpressure');
  for (let i = 0; i < BATCH * BATCHES; i++) tracer.startSpan(`bp-${i}`).end();
  const spans = memory.getFinishedSpans();
  assert.equal(spans.length, BATCH * BATCHES);
  return Array.from({ length: BATCHES }, (_, b) => spans.slice(b * BATCH, (b + 1) * BATCH));
}

const exportOnce = (exporter, spans) => new Promise((resolve) => exporter.export(spans, resolve));

describe('OTLP receiver under a full export queue', () => {
  let backend;
  let sim;
  let agent;

  before(async () => {
    backend = await startGrpcReceiver();
    sim = await startSim({ model: 'e2e-backpressure/model', seed: 3, speed: 20 });
    agent = await startAgent({
      upstream: sim.url,
      otlp: { endpoint: backend.endpoint, protocol: 'grpc' },
      env: { OTEL_BSP_MAX_QUEUE_SIZE: '64', OTEL_BSP_MAX_EXPORT_BATCH_SIZE: String(BATCH) },
      extra: ['--receiver-wait-ms', String(WAIT_MS)],
    });
  });

  after(async () => {
    backend?.resume();
    await stopAll(agent, sim);
    await backend?.close();
  });

  test('a slow backend makes the receiver answer retry-later; the exporters retry and nothing is lost', async () => {
    const batches = makeBatches();
    const grpcExporter = new OTLPGrpcExporter({ url: `http://${agent.receiverGrpc}`, timeoutMillis: 30000 });
    const httpExporter = new OTLPProtoExporter({ url: `${agent.receiverHttp}/v1/traces`, timeoutMillis: 30000 });
    backend.pause();
    // Each batch is queued before the next is sent, so the queue fills in a known order.
    const results = [];
    for (let b = 0; b < BATCHES; b++) {
      const exporter = b === BATCHES - 1 ? httpExporter : grpcExporter;
      results.push(exportOnce(exporter, batches[b]));
      await new Promise((r) => setTimeout(r, 150));
    }
    const metrics = async () => parsePrometheus((await get(`${agent.adminUrl}/metrics`)).text);
    const throttled = (samples, transport) =>
      metricSum(samples, 'infertel_receiver_throttled_requests_total', (l) => l.transport === transport && l.signal === 'traces');
    const saturated = await pollUntil(async () => {
      const s = await metrics();
      return throttled(s, 'grpc') >= 1 && throttled(s, 'http') >= 1 ? s : null;
    }, { timeoutMs: 8000 });
    assert.ok(saturated, `no retry-later answer on both transports:\n${agent.describe()}`);

    // A plain OTLP/HTTP request sees the answer itself, after waiting for room in vain: 503,
    // Retry-After, a google.rpc.Status.
    const sent = performance.now();
    const raw = await fetch(`${agent.receiverHttp}/v1/traces`, { method: 'POST', headers: { 'content-type': 'application/json' }, body: '{}' });
    const waited = performance.now() - sent;
    assert.equal(raw.status, 503);
    assert.ok(waited >= WAIT_MS - 50 && waited < WAIT_MS + 5000, `answered after ${waited.toFixed(0)} ms, want about ${WAIT_MS}`);
    assert.equal(raw.headers.get('retry-after'), '1');
    const status = await raw.json();
    assert.equal(status.code, 14);
    assert.match(status.message, /retry later/);

    backend.resume();
    // The JS gRPC exporter (0.57) reports UNAVAILABLE without retrying; resend those batches
    // as an exporter that retries (vLLM's and SGLang's Python exporters) would. The OTLP/HTTP
    // exporter retries by itself, after the Retry-After it was given.
    const outcomes = await Promise.all(results);
    let refused = 0;
    for (const [b, r] of outcomes.entries()) {
      if (r.code === ExportResultCode.SUCCESS) continue;
      assert.ok(b < BATCHES - 1, `the OTLP/HTTP batch failed: ${r.error}`);
      assert.match(String(r.error), /14 UNAVAILABLE: the agent's export queues are full; retry later/);
      refused++;
      const again = await exportOnce(grpcExporter, batches[b]);
      assert.equal(again.code, ExportResultCode.SUCCESS, `batch ${b} again: ${again.error}`);
    }
    assert.ok(refused >= 1, 'no gRPC batch was refused');
    const names = new Set();
    await backend.waitForSpans((s) => s.name.startsWith('bp-'), 20000, { count: BATCH * BATCHES });
    for (const s of backend.spans) if (s.name.startsWith('bp-')) names.add(s.name);
    assert.equal(names.size, BATCH * BATCHES, backend.summary());
    const end = await metrics();
    assert.equal(metricSum(end, 'infertel_exporter_dropped_items_total', (l) => l.signal === 'traces'), 0);
    await Promise.all([grpcExporter.shutdown(), httpExporter.shutdown()]);
  });
});
