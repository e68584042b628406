// End-to-end: back-pressure is honest. Senders flood the agent's OTLP receiver, many requests
// at a time, with the embedded store as the only destination and a small export queue, so that
// the queue is full most of the time. Each request is either accepted (gRPC OK / HTTP 200,
// minus any partial_success.rejected_spans) or refused with a retryable status (gRPC
// UNAVAILABLE, HTTP 503 + Retry-After). Every accepted span must then be in the store:
// accepted == delivered, exactly, with no drop counted anywhere.
//
// Senders: the official OpenTelemetry JS exporters (OTLP gRPC, OTLP/HTTP protobuf; the latter
// retries 503 by itself), and plain OTLP/JSON requests whose answers are read here.
import assert from 'node:assert/strict';
import path from 'node:path';
import { after, before, describe, test } from 'node:test';

import { ExportResultCode } from '@opentelemetry/core';
import { OTLPTraceExporter as OTLPGrpcExporter } from '@opentelemetry/exporter-trace-otlp-grpc';
import { OTLPTraceExporter as OTLPProtoExporter } from '@opentelemetry/exporter-trace-otlp-proto';
import { Resource } from '@opentelemetry/resources';
import { BasicTracerProvider, InMemorySpanExporter, SimpleSpanProcessor } from '@opentelemetry/sdk-trace-base';

import { storeSpans } from './lib/store.mjs';
import { pollUntil, runCommand, startAgent, startSim, stopAll, tempDir } from './lib/proc.mjs';
import { get, metricSum, parsePrometheus, randomSpanId, randomTraceId } from './lib/util.mjs';

const BATCH = 64;
const BATCHES = 120; // per sender
const CONCURRENCY = 32; // requests in flight per sender
const QUEUE = 512; // the export queue (OTEL_BSP_MAX_QUEUE_SIZE): a few requests fill it

const floodNames = async (db) => (await storeSpans(db)).map((s) => s.name).filter((n) => n.startsWith('flood-'));

// Finished spans named `<prefix>-<i>`, in batches of BATCH.
function makeBatches(prefix) {
  const memory = new InMemorySpanExporter();
  const provider = new BasicTracerProvider({ resource: new Resource({ 'service.name': 'e2e-nothing-lost' }) });
  provider.addSpanProcessor(new SimpleSpanProcessor(memory));
  const tracer = provider.getTracer('e2e.nothing_lost');
  for (let i = 0; i < BATCH * BATCHES; i++) tracer.startSpan(`${prefix}-${i}`).end();
  const spans = memory.getFinishedSpans();
  return Array.from({ length: BATCHES }, (_, b) => spans.slice(b * BATCH, (b + 1) * BATCH));
}

// An OTLP/JSON request of BATCH spans named `<prefix>-<b>-<i>`.
function jsonBatch(prefix, b) {
  const now = BigInt(Date.now()) * 1000000n;
  const spans = Array.from({ length: BATCH }, (_, i) => ({
    traceId: randomTraceId(),
    spanId: randomSpanId(),
    name: `${prefix}-${b}-${i}`,
    kind: 1,
    startTimeUnixNano: String(now),
    endTimeUnixNano: String(now + 1000n),
  }));
  return JSON.stringify({
    resourceSpans: [{
      resource: { attributes: [{ key: 'service.name', value: { stringValue: 'e2e-nothing-lost' } }] },
      scopeSpans: [{ scope: { name: 'e2e.nothing_lost' }, spans }],
    }],
  });
}

// Runs `jobs` (functions returning promises) CONCURRENCY at a time.
async function pool(jobs) {
  let next = 0;
  const worker = async () => {
    while (next < jobs.length) await jobs[next++]();
  };
  await Promise.all(Array.from({ length: CONCURRENCY }, worker));
}

describe('OTLP receiver flooded: accepted spans all reach the store', () => {
  let sim;
  let agent;
  let tmp;
  let db;

  before(async () => {
    tmp = tempDir();
    db = path.join(tmp.dir, 'spans.db');
    sim = await startSim({ model: 'e2e-nothing-lost/model', seed: 11, speed: 20 });
    agent = await startAgent({
      upstream: sim.url,
      store: db,
      env: { OTEL_BSP_MAX_QUEUE_SIZE: String(QUEUE), OTEL_BSP_MAX_EXPORT_BATCH_SIZE: String(BATCH) },
      extra: ['--receiver-wait-ms', '50'],
    });
  });

  after(async () => {
    await stopAll(agent, sim);
    tmp?.cleanup();
  });

  test('gRPC, OTLP/HTTP protobuf and OTLP/JSON, 32 requests at a time each: accepted == delivered', async (t) => {
    const count = { sent: 0, accepted: 0, refused: 0, rejected: 0 };
    // The pool's workers are shared, so one exporter may have all of them in flight: above the
    // SDK's default of 30 concurrent exports, which it would refuse on the client side.
    const limits = { timeoutMillis: 30000, concurrencyLimit: CONCURRENCY };
    const grpc = new OTLPGrpcExporter({ url: `http://${agent.receiverGrpc}`, ...limits });
    const proto = new OTLPProtoExporter({ url: `${agent.receiverHttp}/v1/traces`, ...limits });
    const viaExporter = (exporter, spans) => async () => {
      count.sent += spans.length;
      const r = await new Promise((resolve) => exporter.export(spans, resolve));
      if (r.code === ExportResultCode.SUCCESS) count.accepted += spans.length;
      else {
        assert.match(String(r.error), /UNAVAILABLE|503|retry later|Service Unavailable/i, String(r.error));
        count.refused += spans.length;
      }
    };
    const viaJson = (b) => async () => {
      count.sent += BATCH;
      const res = await fetch(`${agent.receiverHttp}/v1/traces`, {
        method: 'POST',
        headers: { 'content-type': 'application/json' },
        body: jsonBatch('flood-json', b),
      });
      const body = await res.json();
      if (res.status === 503) {
        assert.equal(res.headers.get('retry-after'), '1');
        assert.equal(body.code, 14);
        count.refused += BATCH;
        return;
      }
      assert.equal(res.status, 200, JSON.stringify(body));
      const rejected = Number(body.partialSuccess?.rejectedSpans ?? 0);
      count.rejected += rejected;
      count.accepted += BATCH - rejected;
    };
    const jobs = [];
    const grpcBatches = makeBatches('flood-grpc');
    const protoBatches = makeBatches('flood-proto');
    for (let b = 0; b < BATCHES; b++) {
      jobs.push(viaExporter(grpc, grpcBatches[b]), viaExporter(proto, protoBatches[b]), viaJson(b));
    }
    await pool(jobs);
    await Promise.all([grpc.shutdown(), proto.shutdown()]);
    assert.equal(count.sent, 3 * BATCH * BATCHES);
    assert.ok(count.accepted > 0, JSON.stringify(count));

    // Delivered: rows in the store, once the agent's queue is empty and the count stops moving.
    const metrics = async () => parsePrometheus((await get(`${agent.adminUrl}/metrics`)).text);
    let last = -1;
    const delivered = await pollUntil(async () => {
      const s = await metrics();
      const queued = metricSum(s, 'infertel_exporter_queue_items', (l) => l.signal === 'traces');
      const waiting = metricSum(s, 'infertel_assembler_waiting_spans');
      let rows;
      try {
        rows = (await floodNames(db)).length;
      } catch {
        return null; // the store may not exist yet
      }
      const settled = queued === 0 && waiting === 0 && rows === last;
      last = rows;
      return settled ? rows : null;
    }, { timeoutMs: 60000, intervalMs: 500 });
    const s = await metrics();
    const dropped = metricSum(s, 'infertel_exporter_dropped_items_total', (l) => l.signal === 'traces');
    const throttled = metricSum(s, 'infertel_receiver_throttled_requests_total', (l) => l.signal === 'traces');
    const summary = `${JSON.stringify(count)} delivered=${delivered} dropped=${dropped} throttled=${throttled}`;
    t.diagnostic(summary);
    assert.notEqual(delivered, null, `the store never settled: ${summary}\n${agent.describe()}`);
    const distinct = new Set(await floodNames(db)).size;
    assert.equal(distinct, delivered, `spans stored twice: ${summary}`);
    assert.equal(delivered, count.accepted, `accepted != delivered: ${summary}`);
    assert.equal(dropped, 0, summary);
    // The flood did fill the queue: some requests were told to retry (else this proved nothing).
    assert.ok(throttled > 0, `no request was refused: ${summary}`);
  });
});
