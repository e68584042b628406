// End-to-end: HTTP/2 abuse on the OTLP/gRPC receiver (docs/limits.md, "OTLP/gRPC receiver").
// A raw HTTP/2 client (node `net`, frames written by hand, HPACK literals without indexing)
// plays rapid reset, 100k concurrent streams, a CONTINUATION flood, a gzip bomb and a prefix
// announcing 1.5 GB. Each attack must end in GOAWAY or RST_STREAM, be counted in
// infertel_receiver_grpc_refused_total{reason}, and leave the agent's peak RSS (VmHWM) within
// its bounds plus a few MiB, its RSS back within a few MiB of where it was before the attack
// once the connection is closed; a normal grpc-js export must succeed right after.
import assert from 'node:assert/strict';
import fs from 'node:fs';
import net from 'node:net';
import zlib from 'node:zlib';
import { after, before, beforeEach, describe, test } from 'node:test';

import { ExportResultCode } from '@opentelemetry/core';
import { OTLPTraceExporter as OTLPGrpcExporter } from '@opentelemetry/exporter-trace-otlp-grpc';
import { BasicTracerProvider, InMemorySpanExporter, SimpleSpanProcessor } from '@opentelemetry/sdk-trace-base';

import { pollUntil, rssBoundMiB, rssSettles, startAgent, startSim, stopAll, memoryOf } from './lib/proc.mjs';
import { get, metricSum, parsePrometheus } from './lib/util.mjs';

const MIB = 1024 * 1024;
const TRACE_PATH = '/opentelemetry.proto.collector.trace.v1.TraceService/Export';
const BUFFER_MB = 16; // --receiver-grpc-buffer-mb
const SLACK = 24 * MIB; // decode, inflate output (16 MiB limit) and allocator slack
const T = { DATA: 0, HEADERS: 1, RST_STREAM: 3, SETTINGS: 4, GOAWAY: 7, WINDOW_UPDATE: 8, CONTINUATION: 9 };
const F = { END_STREAM: 1, END_HEADERS: 4, ACK: 1 };

function frame(type, flags, stream, payload = Buffer.alloc(0)) {
  const h = Buffer.alloc(9);
  h.writeUIntBE(payload.length, 0, 3);
  h[3] = type;
  h[4] = flags;
  h.writeUInt32BE(stream, 5);
  return Buffer.concat([h, payload]);
}

/** HPACK: a string literal (no Huffman), 7-bit prefix length. */
function hpackString(s) {
  const b = Buffer.from(s);
  const len = b.length;
  if (len < 127) return Buffer.concat([Buffer.from([len]), b]);
  const out = [127];
  let rest = len - 127;
  while (rest >= 128) {
    out.push((rest & 127) | 128);
    rest >>= 7;
  }
  out.push(rest);
  return Buffer.concat([Buffer.from(out), b]);
}

/** HPACK: literal header fields without indexing, new names. */
function hpack(fields) {
  return Buffer.concat(fields.map(([n, v]) => Buffer.concat([Buffer.from([0]), hpackString(n), hpackString(v)])));
}

const requestHeaders = (extra = []) =>
  hpack([[':method', 'POST'], [':scheme', 'http'], [':path', TRACE_PATH], [':authority', 'agent'],
    ['content-type', 'application/grpc'], ['te', 'trailers'], ...extra]);

/** A raw HTTP/2 connection that records what the server sends. */
class RawH2 {
  constructor(hostPort) {
    const [host, port] = hostPort.split(':');
    this.sock = net.connect(Number(port), host);
    this.sock.on('error', () => {});
    this.goaway = null; // error code
    this.rst = new Map(); // stream → error code
    this.headers = new Map(); // stream → flags of the last HEADERS
    this.windowOpened = false;
    this.closed = false;
    let buf = Buffer.alloc(0);
    this.sock.on('data', (d) => {
      buf = Buffer.concat([buf, d]);
      while (buf.length >= 9) {
        const len = buf.readUIntBE(0, 3);
        if (buf.length < 9 + len) break;
        const type = buf[3];
        const flags = buf[4];
        const stream = buf.readUInt32BE(5) & 0x7fffffff;
        const p = buf.subarray(9, 9 + len);
        if (type === T.GOAWAY) this.goaway = p.readUInt32BE(4);
        else if (type === T.RST_STREAM) this.rst.set(stream, p.readUInt32BE(0));
        else if (type === T.HEADERS) this.headers.set(stream, flags);
        else if (type === T.WINDOW_UPDATE && stream === 0) this.windowOpened = true;
        buf = buf.subarray(9 + len);
      }
    });
    this.sock.on('close', () => { this.closed = true; });
    this.ready = new Promise((resolve) => this.sock.on('connect', resolve));
  }

  async start() {
    await this.ready;
    this.sock.write(Buffer.concat([Buffer.from('PRI * HTTP/2.0\r\n\r\nSM\r\n\r\n'), frame(T.SETTINGS, 0, 0)]));
    await pollUntil(() => this.windowOpened, { timeoutMs: 5000 });
  }

  /** Writes `buf`, waiting for the socket to drain; false once the connection is gone. */
  async write(buf) {
    if (this.closed || this.sock.destroyed) return false;
    if (!this.sock.write(buf)) {
      await new Promise((resolve) => {
        this.sock.once('drain', resolve);
        this.sock.once('close', resolve);
      });
    }
    return !this.closed && !this.sock.destroyed;
  }

  /** DATA frames of at most 16 KiB carrying `payload` on `stream`. */
  async data(stream, payload, endStream) {
    for (let off = 0; off < payload.length; off += 16384) {
      const last = off + 16384 >= payload.length;
      if (!(await this.write(frame(T.DATA, last && endStream ? F.END_STREAM : 0, stream, payload.subarray(off, off + 16384))))) return false;
    }
    return true;
  }

  close() {
    this.sock.destroy();
  }
}

function grpcPrefix(length, compressed = 0) {
  const b = Buffer.alloc(5);
  b[0] = compressed;
  b.writeUInt32BE(length, 1);
  return b;
}

/** ~1 MB of gzip inflating to `total` bytes of zeros, made in pieces so the test stays small. */
async function gzipBomb(total) {
  const gz = zlib.createGzip({ level: 9 });
  const parts = [];
  gz.on('data', (d) => parts.push(d));
  const done = new Promise((resolve) => gz.on('end', resolve));
  const zeros = Buffer.alloc(MIB);
  for (let i = 0; i < total / MIB; i++) {
    if (!gz.write(zeros)) await new Promise((resolve) => gz.once('drain', resolve));
  }
  gz.end();
  await done;
  return Buffer.concat(parts);
}

describe('OTLP/gRPC receiver under HTTP/2 abuse', () => {
  let sim;
  let agent;
  let baseline;

  before(async () => {
    sim = await startSim({ model: 'e2e-hostile-grpc/model' });
    agent = await startAgent({
      upstream: sim.url,
      extra: ['--receiver-grpc-buffer-mb', String(BUFFER_MB), '--receiver-grpc-max-resets-per-second', '100'],
    });
    baseline = memoryOf(agent.child.pid).peak;
  });

  after(async () => {
    await stopAll(agent, sim);
  });

  async function refused(reason) {
    const r = await get(`${agent.adminUrl}/metrics`);
    return metricSum(parsePrometheus(r.text), 'infertel_receiver_grpc_refused_total', (l) => l.reason === reason);
  }

  let rssBefore; // the agent's resident memory before the attack of the running test
  beforeEach(() => {
    rssBefore = memoryOf(agent.child.pid).rss;
  });

  // Within its bounds at the worst, and back near where it was once the attack's connection is
  // closed: memory an attack made the agent allocate is given back, not kept.
  async function assertPeak(what) {
    const { peak } = memoryOf(agent.child.pid);
    console.log(`${what}: agent peak RSS ${(peak / MIB).toFixed(1)} MiB (baseline ${(baseline / MIB).toFixed(1)} MiB)`);
    assert.ok(peak <= baseline + rssBoundMiB(BUFFER_MB + SLACK / MIB) * MIB, `${what}: peak RSS ${peak} > baseline ${baseline} + bounds`);
    const t0 = Date.now();
    const { rss, bound } = await rssSettles(agent.child.pid, rssBefore, { slackMiB: 4, timeoutMs: 30000 });
    console.log(`${what}: agent RSS ${(rssBefore / MIB).toFixed(1)} MiB before, ${(rss / MIB).toFixed(1)} MiB ${Date.now() - t0} ms after`);
    assert.ok(rss <= bound, `${what}: RSS ${(rss / MIB).toFixed(1)} MiB after the attack, ${(rssBefore / MIB).toFixed(1)} MiB before`);
  }

  async function grpcExportSucceeds() {
    const memory = new InMemorySpanExporter();
    const provider = new BasicTracerProvider();
    provider.addSpanProcessor(new SimpleSpanProcessor(memory));
    provider.getTracer('e2e.hostile_grpc').startSpan('after-attack').end();
    const exporter = new OTLPGrpcExporter({ url: `http://${agent.receiverGrpc}`, timeoutMillis: 10000 });
    const result = await new Promise((resolve) => exporter.export(memory.getFinishedSpans(), resolve));
    await exporter.shutdown();
    assert.equal(result.code, ExportResultCode.SUCCESS, `grpc-js export after the attack: ${result.error}`);
  }

  test('rapid reset: HEADERS then RST_STREAM, 300k streams on one connection → GOAWAY ENHANCE_YOUR_CALM', async () => {
    const before = await refused('reset_rate');
    const c = new RawH2(agent.receiverGrpc);
    await c.start();
    const headers = requestHeaders();
    const rst = Buffer.alloc(4);
    rst.writeUInt32BE(8); // CANCEL
    let sent = 0;
    for (let batch = 0; batch < 300; batch++) {
      const frames = [];
      for (let i = 0; i < 1000; i++) {
        const id = 1 + 2 * (batch * 1000 + i);
        frames.push(frame(T.HEADERS, F.END_HEADERS, id, headers), frame(T.RST_STREAM, 0, id, rst));
      }
      if (!(await c.write(Buffer.concat(frames)))) break;
      sent += 1000;
    }
    await pollUntil(() => c.goaway !== null || c.closed, { timeoutMs: 10000 });
    c.close();
    console.log(`rapid reset: ${sent} streams written before the connection ended`);
    assert.equal(c.goaway, 11, 'GOAWAY ENHANCE_YOUR_CALM');
    assert.ok((await refused('reset_rate')) > before);
    await assertPeak('rapid reset');
    await grpcExportSucceeds();
  });

  test('100k concurrent streams: refused beyond 100, the connection ended', async () => {
    const before = await refused('streams');
    const c = new RawH2(agent.receiverGrpc);
    await c.start();
    const headers = requestHeaders();
    for (let batch = 0; batch < 100; batch++) {
      const frames = [];
      for (let i = 0; i < 1000; i++) frames.push(frame(T.HEADERS, F.END_HEADERS, 1 + 2 * (batch * 1000 + i), headers));
      if (!(await c.write(Buffer.concat(frames)))) break;
    }
    await pollUntil(() => c.goaway !== null || c.closed, { timeoutMs: 10000 });
    c.close();
    const refusedStreams = [...c.rst.values()].filter((code) => code === 7).length;
    console.log(`concurrent streams: ${refusedStreams} REFUSED_STREAM, GOAWAY ${c.goaway}`);
    assert.ok(refusedStreams > 0, 'streams beyond the limit get REFUSED_STREAM');
    assert.notEqual(c.goaway, null, 'and the connection a GOAWAY');
    assert.ok((await refused('streams')) > before);
    await assertPeak('concurrent streams');
    await grpcExportSucceeds();
  });

  test('CONTINUATION flood: GOAWAY after a few CONTINUATION frames', async () => {
    const before = await refused('protocol');
    const c = new RawH2(agent.receiverGrpc);
    await c.start();
    await c.write(frame(T.HEADERS, 0, 1, requestHeaders()));
    const block = hpack([['x-flood', 'x'.repeat(16000)]]);
    for (let i = 0; i < 10000; i++) {
      if (!(await c.write(frame(T.CONTINUATION, 0, 1, block)))) break;
      if (c.goaway !== null) break;
    }
    await pollUntil(() => c.goaway !== null || c.closed, { timeoutMs: 10000 });
    c.close();
    assert.notEqual(c.goaway, null, 'GOAWAY');
    assert.ok((await refused('protocol')) > before);
    await assertPeak('CONTINUATION flood');
    await grpcExportSucceeds();
  });

  test('a prefix announcing 1.5 GB: RESOURCE_EXHAUSTED and RST_STREAM at once, nothing buffered', async () => {
    const before = await refused('message_size');
    const c = new RawH2(agent.receiverGrpc);
    await c.start();
    await c.write(frame(T.HEADERS, F.END_HEADERS, 1, requestHeaders()));
    await c.data(1, Buffer.concat([grpcPrefix(1.5 * 1024 * MIB), Buffer.alloc(16379)]), false);
    await pollUntil(() => c.rst.has(1), { timeoutMs: 5000 });
    assert.ok(c.headers.has(1) && (c.headers.get(1) & F.END_STREAM), 'a Trailers-Only answer');
    assert.equal(c.rst.get(1), 0, 'RST_STREAM NO_ERROR: the rest is not wanted');
    c.close();
    assert.ok((await refused('message_size')) > before);
    await assertPeak('1.5 GB prefix');
    await grpcExportSucceeds();
  });

  test('gzip bomb (~1 MB → 1 GB): RESOURCE_EXHAUSTED at the message limit', async () => {
    const bomb = await gzipBomb(1024 * MIB);
    console.log(`gzip bomb: ${bomb.length} bytes`);
    const before = await refused('inflated_size');
    const c = new RawH2(agent.receiverGrpc);
    await c.start();
    await c.write(frame(T.HEADERS, F.END_HEADERS, 1, requestHeaders([['grpc-encoding', 'gzip']])));
    await c.data(1, Buffer.concat([grpcPrefix(bomb.length, 1), bomb]), true);
    await pollUntil(() => c.headers.has(1), { timeoutMs: 10000 });
    assert.ok(c.headers.get(1) & F.END_STREAM, 'a Trailers-Only answer');
    c.close();
    assert.ok((await refused('inflated_size')) > before);
    await assertPeak('gzip bomb');
    await grpcExportSucceeds();
  });
});
