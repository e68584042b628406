// OTLP receivers for the end-to-end tests, decoding with the official OpenTelemetry protos
// shipped in @opentelemetry/otlp-grpc-exporter-base: a gRPC receiver (TraceService,
// LogsService, MetricsService via @grpc/proto-loader + @grpc/grpc-js) and an OTLP/HTTP receiver
// (protobuf via protobufjs, or OTLP/JSON). Both collect spans in one normalised shape:
//   {traceId, spanId, parentSpanId (lowercase hex, '' when absent), name, kind (number),
//    startTimeUnixNano, endTimeUnixNano (BigInt), status: {code, message}, attributes (plain
//    object), attributeTypes ({key: 'string'|'int'|'double'|'bool'|'bytes'|'kvlist'|
//    'array<T>'}), events, links, resource (plain object), scope: {name, version}, raw (the
//    decoded Span), resourceRaw, scopeRaw (the decoded Resource and InstrumentationScope)}
// and log records in `logs` (see flattenLogs), awaited with waitForLogs.
import fs from 'node:fs';
import http from 'node:http';
import { createRequire } from 'node:module';
import path from 'node:path';
import zlib from 'node:zlib';

import * as grpc from '@grpc/grpc-js';
import * as protoLoader from '@grpc/proto-loader';
import protobuf from 'protobufjs';

const require = createRequire(import.meta.url);
export const PROTO_DIR = path.join(
  path.dirname(require.resolve('@opentelemetry/otlp-grpc-exporter-base/package.json')),
  'build',
  'protos',
);
const SERVICE_FILES = {
  traces: 'opentelemetry/proto/collector/trace/v1/trace_service.proto',
  metrics: 'opentelemetry/proto/collector/metrics/v1/metrics_service.proto',
  logs: 'opentelemetry/proto/collector/logs/v1/logs_service.proto',
};
for (const f of Object.values(SERVICE_FILES)) {
  if (!fs.existsSync(path.join(PROTO_DIR, f))) throw new Error(`missing OTLP proto ${f} under ${PROTO_DIR}`);
}

export const SPAN_KIND = { UNSPECIFIED: 0, INTERNAL: 1, SERVER: 2, CLIENT: 3, PRODUCER: 4, CONSUMER: 5 };
export const STATUS_CODE = { UNSET: 0, OK: 1, ERROR: 2 };
const KIND_NAMES = {
  SPAN_KIND_UNSPECIFIED: 0,
  SPAN_KIND_INTERNAL: 1,
  SPAN_KIND_SERVER: 2,
  SPAN_KIND_CLIENT: 3,
  SPAN_KIND_PRODUCER: 4,
  SPAN_KIND_CONSUMER: 5,
};
const STATUS_NAMES = { STATUS_CODE_UNSET: 0, STATUS_CODE_OK: 1, STATUS_CODE_ERROR: 2 };

// ---------------------------------------------------------------------------------------------
// Value helpers. They accept the three decodings in use: proto-loader objects (oneofs: true,
// longs as String, bytes as Buffer), protobufjs toObject (same options) and OTLP/JSON (ids as
// hex strings, bytes as base64, int64 as string or number, enums as numbers).

/** Bytes of an id (Buffer/Uint8Array from protobuf, hex string from OTLP/JSON) as lowercase hex. */
export function idToHex(v, { json = false } = {}) {
  if (v === undefined || v === null) return '';
  if (typeof v === 'string') return json ? v.toLowerCase() : Buffer.from(v, 'base64').toString('hex');
  return Buffer.from(v).toString('hex');
}

function toBigInt(v) {
  if (v === undefined || v === null || v === '') return 0n;
  if (typeof v === 'bigint') return v;
  if (typeof v === 'object' && typeof v.toString === 'function') return BigInt(v.toString());
  return BigInt(v);
}

const VALUE_FIELDS = ['stringValue', 'boolValue', 'intValue', 'doubleValue', 'arrayValue', 'kvlistValue', 'bytesValue'];

function presentField(v) {
  if (!v || typeof v !== 'object') return undefined;
  if (typeof v.value === 'string' && VALUE_FIELDS.includes(v.value)) return v.value;
  return VALUE_FIELDS.find((f) => v[f] !== undefined && v[f] !== null);
}

/** An AnyValue as {value, type}: intValue as Number (exact for the sizes used here). */
export function anyValue(v) {
  const f = presentField(v);
  switch (f) {
    case 'stringValue':
      return { value: v.stringValue, type: 'string' };
    case 'boolValue':
      return { value: Boolean(v.boolValue), type: 'bool' };
    case 'intValue':
      return { value: Number(v.intValue), type: 'int' };
    case 'doubleValue':
      return { value: Number(v.doubleValue), type: 'double' };
    case 'bytesValue':
      return { value: Buffer.from(v.bytesValue, typeof v.bytesValue === 'string' ? 'base64' : undefined), type: 'bytes' };
    case 'arrayValue': {
      const items = (v.arrayValue.values || []).map(anyValue);
      const types = [...new Set(items.map((i) => i.type))];
      return { value: items.map((i) => i.value), type: `array<${types.join('|') || 'empty'}>` };
    }
    case 'kvlistValue':
      return { value: attributesToObject(v.kvlistValue.values || []), type: 'kvlist' };
    default:
      return { value: undefined, type: 'empty' };
  }
}

/** A KeyValue list as a plain object {key: value}. */
export function attributesToObject(kvs = []) {
  const out = {};
  for (const kv of kvs || []) out[kv.key] = anyValue(kv.value).value;
  return out;
}

/** A KeyValue list as {key: type} (see anyValue). */
export function attributeTypes(kvs = []) {
  const out = {};
  for (const kv of kvs || []) out[kv.key] = anyValue(kv.value).type;
  return out;
}

function enumValue(v, names) {
  if (v === undefined || v === null) return 0;
  if (typeof v === 'number') return v;
  if (typeof v === 'string' && v in names) return names[v];
  return Number(v);
}

/** Flattens an ExportTraceServiceRequest (any decoding) into normalised spans. */
export function flattenTraces(req, { json = false, transport = '' } = {}) {
  const out = [];
  for (const rs of req.resourceSpans || []) {
    const resource = attributesToObject(rs.resource?.attributes);
    for (const ss of rs.scopeSpans || rs.instrumentationLibrarySpans || []) {
      const sc = ss.scope || ss.instrumentationLibrary || {};
      const scope = { name: sc.name || '', version: sc.version || '' };
      for (const s of ss.spans || []) {
        out.push({
          traceId: idToHex(s.traceId, { json }),
          spanId: idToHex(s.spanId, { json }),
          parentSpanId: idToHex(s.parentSpanId, { json }),
          traceState: s.traceState || '',
          name: s.name,
          kind: enumValue(s.kind, KIND_NAMES),
          startTimeUnixNano: toBigInt(s.startTimeUnixNano),
          endTimeUnixNano: toBigInt(s.endTimeUnixNano),
          status: { code: enumValue(s.status?.code, STATUS_NAMES), message: s.status?.message || '' },
          attributes: attributesToObject(s.attributes),
          attributeTypes: attributeTypes(s.attributes),
          events: (s.events || []).map((e) => ({ name: e.name, timeUnixNano: toBigInt(e.timeUnixNano), attributes: attributesToObject(e.attributes) })),
          links: (s.links || []).map((l) => ({ traceId: idToHex(l.traceId, { json }), spanId: idToHex(l.spanId, { json }), attributes: attributesToObject(l.attributes) })),
          resource,
          scope,
          transport,
          raw: s,
          resourceRaw: rs.resource,
          scopeRaw: sc,
        });
      }
    }
  }
  return out;
}

/**
 * Flattens an ExportLogsServiceRequest (any decoding) into normalised log records:
 * {traceId, spanId (lowercase hex, '' when absent), timeUnixNano, observedTimeUnixNano (BigInt),
 *  severityNumber, severityText, flags, body (plain value), attributes, attributeTypes,
 *  resource, scope: {name, version}, transport, raw}.
 */
export function flattenLogs(req, { json = false, transport = '' } = {}) {
  const out = [];
  for (const rl of req.resourceLogs || []) {
    const resource = attributesToObject(rl.resource?.attributes);
    for (const sl of rl.scopeLogs || rl.instrumentationLibraryLogs || []) {
      const sc = sl.scope || sl.instrumentationLibrary || {};
      const scope = { name: sc.name || '', version: sc.version || '' };
      for (const r of sl.logRecords || []) {
        out.push({
          traceId: idToHex(r.traceId, { json }),
          spanId: idToHex(r.spanId, { json }),
          timeUnixNano: toBigInt(r.timeUnixNano),
          observedTimeUnixNano: toBigInt(r.observedTimeUnixNano),
          severityNumber: Number(r.severityNumber || 0),
          severityText: r.severityText || '',
          flags: Number(r.flags || 0),
          body: anyValue(r.body).value,
          attributes: attributesToObject(r.attributes),
          attributeTypes: attributeTypes(r.attributes),
          resource,
          scope,
          transport,
          raw: r,
        });
      }
    }
  }
  return out;
}

// ---------------------------------------------------------------------------------------------
// Collection shared by both receivers.

class Collector {
  constructor() {
    this.spans = [];
    this.logs = [];
    this.traceRequests = [];
    this.metricsRequests = [];
    this.logsRequests = [];
    this.errors = [];
    this.waiters = new Set();
    this.diag = null; // () => string, appended to timeout messages (e.g. the agent's output)
  }

  addSpans(spans) {
    this.spans.push(...spans);
    for (const w of [...this.waiters]) w();
  }

  addLogs(records) {
    this.logs.push(...records);
    for (const w of [...this.waiters]) w();
  }

  /** Like waitForSpans, over the collected log records. */
  waitForLogs(predicate, timeoutMs = 10000, { count = 1 } = {}) {
    return this.#waitFor(() => this.logs, predicate, timeoutMs, count, () => {
      const names = this.logs.map((l) => l.attributes['event.name'] ?? '?');
      return `no ${count} matching log record(s) within ${timeoutMs} ms; received ${this.logs.length}: ${names.slice(-30).join(', ')}` + (this.errors.length ? `; errors: ${this.errors.join('; ')}` : '');
    });
  }

  /**
   * Resolves with every collected span matching `predicate` once there are at least `count`
   * of them; rejects after `timeoutMs` with a summary of what was received.
   */
  waitForSpans(predicate, timeoutMs = 10000, { count = 1 } = {}) {
    return this.#waitFor(() => this.spans, predicate, timeoutMs, count,
      () => `no ${count} matching span(s) within ${timeoutMs} ms; received ${this.summary()}`);
  }

  /** Resolves once `items()` holds `count` matches of `predicate`; rejects with `why()` after `timeoutMs`. */
  #waitFor(items, predicate, timeoutMs, count, why) {
    return new Promise((resolve, reject) => {
      const check = () => {
        const m = items().filter(predicate);
        if (m.length >= count) {
          this.waiters.delete(check);
          clearTimeout(timer);
          resolve(m);
          return true;
        }
        return false;
      };
      const timer = setTimeout(() => {
        this.waiters.delete(check);
        reject(new Error(why() + (this.diag ? `\n${this.diag()}` : '')));
      }, timeoutMs);
      if (check()) return;
      this.waiters.add(check);
    });
  }

  /** First span matching `predicate` (see waitForSpans). */
  async waitForSpan(predicate, timeoutMs = 10000) {
    return (await this.waitForSpans(predicate, timeoutMs))[0];
  }

  summary() {
    const names = this.spans.map((s) => `${s.name}[${s.attributes['gen_ai.response.id'] ?? ''}]`);
    return `${this.spans.length} span(s)${names.length ? ': ' + names.slice(-30).join(', ') : ''}` + (this.errors.length ? `; errors: ${this.errors.join('; ')}` : '');
  }

  clear() {
    this.spans.length = 0;
  }
}

// ---------------------------------------------------------------------------------------------
// OTLP gRPC receiver.

const LOADER_OPTIONS = { keepCase: false, longs: String, enums: Number, bytes: Buffer, defaults: false, oneofs: true, includeDirs: [PROTO_DIR] };

/**
 * Starts an OTLP gRPC receiver on 127.0.0.1:0. `endpoint` is `http://127.0.0.1:PORT`.
 * `pause()` holds the answers to trace exports (a slow backend) until `resume()`.
 */
export async function startGrpcReceiver({ traceStatus } = {}) {
  const def = protoLoader.loadSync(Object.values(SERVICE_FILES), LOADER_OPTIONS);
  const pkg = grpc.loadPackageDefinition(def);
  const c = new Collector();
  const server = new grpc.Server();
  server.addService(pkg.opentelemetry.proto.collector.trace.v1.TraceService.service, {
    Export: (call, cb) => {
      c.traceRequests.push({ metadata: call.metadata.getMap(), body: call.request });
      try {
        c.addSpans(flattenTraces(call.request, { transport: 'grpc' }));
      } catch (e) {
        c.errors.push(String(e));
      }
      const answer = () => (traceStatus ? cb({ code: traceStatus, details: 'test receiver refuses' }) : cb(null, {}));
      if (c.held) c.held.push(answer);
      else answer();
    },
  });
  server.addService(pkg.opentelemetry.proto.collector.metrics.v1.MetricsService.service, {
    Export: (call, cb) => {
      c.metricsRequests.push({ metadata: call.metadata.getMap(), body: call.request });
      cb(null, {});
    },
  });
  server.addService(pkg.opentelemetry.proto.collector.logs.v1.LogsService.service, {
    Export: (call, cb) => {
      c.logsRequests.push({ metadata: call.metadata.getMap(), body: call.request });
      try {
        c.addLogs(flattenLogs(call.request, { transport: 'grpc' }));
      } catch (e) {
        c.errors.push(String(e));
      }
      cb(null, {});
    },
  });
  const port = await new Promise((resolve, reject) =>
    server.bindAsync('127.0.0.1:0', grpc.ServerCredentials.createInsecure(), (err, p) => (err ? reject(err) : resolve(p))),
  );
  c.endpoint = `http://127.0.0.1:${port}`;
  c.protocol = 'grpc';
  c.pause = () => {
    c.held ??= [];
  };
  c.resume = () => {
    const held = c.held ?? [];
    c.held = null;
    for (const answer of held) answer();
  };
  c.close = () =>
    new Promise((resolve) => {
      server.tryShutdown(() => resolve());
      setTimeout(() => {
        server.forceShutdown();
        resolve();
      }, 2000).unref();
    });
  return c;
}

// ---------------------------------------------------------------------------------------------
// OTLP/HTTP receiver (protobuf and JSON).

let protoRoot;
function loadRoot() {
  if (protoRoot) return protoRoot;
  const root = new protobuf.Root();
  root.resolvePath = (origin, target) => (path.isAbsolute(target) ? target : path.join(PROTO_DIR, target));
  root.loadSync(Object.values(SERVICE_FILES), { keepCase: false });
  root.resolveAll();
  protoRoot = root;
  return root;
}

const HTTP_TYPES = {
  '/v1/traces': ['opentelemetry.proto.collector.trace.v1.ExportTraceServiceRequest', 'opentelemetry.proto.collector.trace.v1.ExportTraceServiceResponse'],
  '/v1/metrics': ['opentelemetry.proto.collector.metrics.v1.ExportMetricsServiceRequest', 'opentelemetry.proto.collector.metrics.v1.ExportMetricsServiceResponse'],
  '/v1/logs': ['opentelemetry.proto.collector.logs.v1.ExportLogsServiceRequest', 'opentelemetry.proto.collector.logs.v1.ExportLogsServiceResponse'],
};

/** Decodes an OTLP/HTTP protobuf body of `path` into a plain object (as the gRPC receiver). */
export function decodeProtobuf(urlPath, body) {
  const root = loadRoot();
  const T = root.lookupType(HTTP_TYPES[urlPath][0]);
  return T.toObject(T.decode(body), { longs: String, enums: Number, bytes: Buffer, defaults: false, oneofs: true });
}

/** Encodes a plain object (protobufjs fromObject form) as the OTLP/HTTP protobuf body of `path`. */
export function encodeProtobuf(urlPath, obj) {
  const T = loadRoot().lookupType(HTTP_TYPES[urlPath][0]);
  return Buffer.from(T.encode(T.fromObject(obj)).finish());
}

/**
 * Starts an OTLP/HTTP receiver on 127.0.0.1:0 accepting POST /v1/traces, /v1/metrics, /v1/logs
 * as application/x-protobuf or application/json (gzip accepted). `endpoint` is the base URL.
 * Each request is recorded in `httpRequests` as {path, contentType, contentEncoding, bytes}.
 */
export async function startHttpReceiver() {
  const c = new Collector();
  c.httpRequests = [];
  const server = http.createServer((req, res) => {
    const chunks = [];
    req.on('data', (d) => chunks.push(d));
    req.on('end', () => {
      const types = HTTP_TYPES[req.url.split('?')[0]];
      const ctype = (req.headers['content-type'] || '').split(';')[0].trim().toLowerCase();
      const enc = (req.headers['content-encoding'] || '').toLowerCase();
      let body = Buffer.concat(chunks);
      c.httpRequests.push({ method: req.method, path: req.url, contentType: ctype, contentEncoding: enc, bytes: body.length, headers: req.headers });
      if (req.method !== 'POST' || !types) {
        res.writeHead(404, { 'content-type': 'text/plain' }).end('not found');
        return;
      }
      try {
        if (enc === 'gzip') body = zlib.gunzipSync(body);
        else if (enc && enc !== 'identity') throw new Error(`unsupported content-encoding ${enc}`);
        let decoded;
        const json = ctype === 'application/json';
        if (json) decoded = JSON.parse(body.toString('utf8'));
        else if (ctype === 'application/x-protobuf') decoded = decodeProtobuf(req.url.split('?')[0], body);
        else throw new Error(`unsupported content-type ${ctype}`);
        if (req.url.startsWith('/v1/traces')) {
          c.traceRequests.push({ contentType: ctype, body: decoded });
          c.addSpans(flattenTraces(decoded, { json, transport: `http/${json ? 'json' : 'protobuf'}` }));
        } else if (req.url.startsWith('/v1/metrics')) c.metricsRequests.push({ contentType: ctype, body: decoded });
        else {
          c.logsRequests.push({ contentType: ctype, body: decoded });
          c.addLogs(flattenLogs(decoded, { json, transport: `http/${json ? 'json' : 'protobuf'}` }));
        }
        if (json) res.writeHead(200, { 'content-type': 'application/json' }).end('{}');
        else {
          const R = loadRoot().lookupType(types[1]);
          res.writeHead(200, { 'content-type': 'application/x-protobuf' }).end(Buffer.from(R.encode(R.create({})).finish()));
        }
      } catch (e) {
        c.errors.push(`${req.url} ${ctype}: ${e.message}`);
        res.writeHead(400, { 'content-type': 'text/plain' }).end(String(e.message));
      }
    });
  });
  await new Promise((r) => server.listen(0, '127.0.0.1', r));
  c.endpoint = `http://127.0.0.1:${server.address().port}`;
  c.close = () =>
    new Promise((resolve) => {
      server.closeAllConnections?.();
      server.close(() => resolve());
    });
  return c;
}
