// Small helpers shared by the end-to-end tests: openai clients, response normalisation for
// direct-vs-gateway comparison, a recording pass-through proxy (to see what the engine receives),
// Prometheus text parsing and id generators.
import crypto from 'node:crypto';
import http from 'node:http';
import path from 'node:path';
import { fileURLToPath } from 'node:url';

import OpenAI from 'openai';

/** The real engine outputs the tests replay: tests/fixtures/ (see its SOURCES.md). */
export const FIXTURES_DIR = path.resolve(path.dirname(fileURLToPath(import.meta.url)), '../../fixtures');

export const API_KEY = 'sk-e2e-secret-do-not-capture-0123456789';

/** The official client pointed at `baseUrl` (no retries: every attempt must be visible). */
export function openaiClient(baseUrl, opts = {}) {
  return new OpenAI({ baseURL: `${baseUrl}/v1`, apiKey: API_KEY, maxRetries: 0, timeout: 30000, ...opts });
}

/** Consumes a stream from the openai client into an array of chunks (plain JSON copies). */
export async function collectStream(stream) {
  const chunks = [];
  for await (const c of stream) chunks.push(JSON.parse(JSON.stringify(c)));
  return chunks;
}

/**
 * A deep copy of an API result with the fields that legitimately differ between two identical
 * requests replaced by placeholders: the response `id`, `created`, tool-call ids.
 */
export function normalize(v) {
  const seen = JSON.parse(JSON.stringify(v));
  const walk = (o, depth) => {
    if (Array.isArray(o)) {
      o.forEach((x) => walk(x, depth + 1));
      return;
    }
    if (!o || typeof o !== 'object') return;
    if (depth === 0 && 'id' in o) o.id = '<id>';
    // vLLM's /v1/models gives every permission entry a fresh random id.
    if (typeof o.id === 'string' && o.id.startsWith('modelperm-')) o.id = '<modelperm-id>';
    if ('created' in o) o.created = 0;
    if (Array.isArray(o.tool_calls)) for (const tc of o.tool_calls) if (tc && 'id' in tc && tc.id) tc.id = '<tool-call-id>';
    for (const k of Object.keys(o)) walk(o[k], depth + 1);
  };
  if (Array.isArray(seen)) seen.forEach((x) => walk(x, 0));
  else walk(seen, 0);
  return seen;
}

/**
 * The chunks of a stream grouped per choice index, in order ({index: [{...chunk, choices:[c]}]};
 * chunks without choices under 'none'). With n > 1 the engine may interleave the choices
 * differently from one run to the next; each choice's own sequence must still be equal.
 */
export function byChoice(chunks) {
  const out = {};
  for (const c of chunks) {
    const { choices, ...rest } = c;
    if (!choices || choices.length === 0) (out.none ||= []).push(rest);
    for (const ch of choices || []) (out[ch.index] ||= []).push({ ...rest, choices: [ch] });
  }
  return out;
}

/** Concatenated text of a chat/completions stream, per choice index. */
export function streamText(chunks) {
  const out = {};
  for (const c of chunks) {
    for (const ch of c.choices || []) {
      const t = ch.delta?.content ?? ch.text ?? '';
      out[ch.index] = (out[ch.index] || '') + (t || '');
    }
  }
  return out;
}

/** Finish reasons of a stream, per choice index. */
export function streamFinishReasons(chunks) {
  const out = {};
  for (const c of chunks) for (const ch of c.choices || []) if (ch.finish_reason) out[ch.index] = ch.finish_reason;
  return out;
}

/** POST JSON with fetch; resolves {status, headers, text, json}. */
export async function postJson(url, body, headers = {}) {
  const r = await fetch(url, {
    method: 'POST',
    headers: { 'content-type': 'application/json', authorization: `Bearer ${API_KEY}`, ...headers },
    body: JSON.stringify(body),
    signal: AbortSignal.timeout(30000),
  });
  const text = await r.text();
  let json;
  try {
    json = JSON.parse(text);
  } catch {
    json = undefined;
  }
  return { status: r.status, headers: r.headers, text, json };
}

/** GET with fetch; resolves {status, headers, text, json}. */
export async function get(url, headers = {}) {
  const r = await fetch(url, { headers, signal: AbortSignal.timeout(30000) });
  const text = await r.text();
  let json;
  try {
    json = JSON.parse(text);
  } catch {
    json = undefined;
  }
  return { status: r.status, headers: r.headers, text, json };
}

/** A random W3C trace id (32 hex) / span id (16 hex). */
export const randomTraceId = () => crypto.randomBytes(16).toString('hex');
export const randomSpanId = () => crypto.randomBytes(8).toString('hex');

/**
 * A transparent recording proxy on 127.0.0.1:0 in front of `target` (base URL). Every request
 * is recorded as {method, url, headers, body} in `requests`; a downstream disconnect closes
 * the upstream request too.
 */
export async function startTap(target) {
  const t = new URL(target);
  const requests = [];
  const server = http.createServer((req, res) => {
    const chunks = [];
    req.on('data', (d) => chunks.push(d));
    req.on('end', () => {
      const body = Buffer.concat(chunks);
      requests.push({ method: req.method, url: req.url, headers: req.headers, body: body.toString('utf8') });
      const headers = { ...req.headers, host: t.host };
      const up = http.request({ host: t.hostname, port: t.port, method: req.method, path: req.url, headers }, (ures) => {
        res.writeHead(ures.statusCode, ures.headers);
        ures.pipe(res);
      });
      up.on('error', () => res.destroy());
      res.on('close', () => {
        if (!res.writableFinished) up.destroy();
      });
      up.end(body);
    });
  });
  await new Promise((r) => server.listen(0, '127.0.0.1', r));
  return {
    url: `http://127.0.0.1:${server.address().port}`,
    requests,
    close: () =>
      new Promise((resolve) => {
        server.closeAllConnections?.();
        server.close(() => resolve());
      }),
  };
}

/**
 * Parses Prometheus text exposition into [{name, labels, value}] (comments skipped).
 * Enough for the self-metrics checks; promtool does the strict lint.
 */
export function parsePrometheus(text) {
  const out = [];
  for (const line of text.split('\n')) {
    if (!line || line.startsWith('#')) continue;
    const m = /^([a-zA-Z_:][a-zA-Z0-9_:]*)(\{(.*)\})?\s+(\S+)(\s+\S+)?$/.exec(line);
    if (!m) continue;
    const labels = {};
    if (m[3]) for (const lm of m[3].matchAll(/([a-zA-Z_][a-zA-Z0-9_]*)="((?:[^"\\]|\\.)*)"/g)) labels[lm[1]] = lm[2];
    out.push({ name: m[1], labels, value: Number(m[4]) });
  }
  return out;
}

/** Sum of the samples of metric `name` (optionally filtered by a label predicate). */
export function metricSum(samples, name, pred = () => true) {
  return samples.filter((s) => s.name === name && pred(s.labels)).reduce((a, s) => a + s.value, 0);
}
