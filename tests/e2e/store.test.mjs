// End-to-end: with no OTLP endpoint the agent's spans land in the embedded store (`--store DIR`),
// read back with `infertel spans --json` and `infertel traces`; the store's files stay within
// --store-max-mb under a flood, survive kill -9 (every file passes sqlite3's integrity check),
// the old single-file format is refused, and retention is counted and told.
import assert from 'node:assert/strict';
import fs from 'node:fs';
import path from 'node:path';
import { after, before, describe, test } from 'node:test';

import { pollUntil, runCommand, runInfertel, startAgent, startSim, stopAll, tempDir } from './lib/proc.mjs';
import { removedButOpen, storeDiskBytes, storeSpans } from './lib/store.mjs';
import { collectStream, get, metricSum, openaiClient, parsePrometheus, randomSpanId, randomTraceId } from './lib/util.mjs';

const MODEL = 'e2e-store/model-1b';

async function sqlite(file, query) {
  const r = await runCommand('sqlite3', ['-readonly', file, query], { timeoutMs: 20000 });
  assert.equal(r.code, 0, `sqlite3 ${file} failed: ${r.stderr}`);
  return r.stdout.trim();
}

const dbFiles = (dir) => fs.readdirSync(dir).filter((n) => n.endsWith('.db')).map((n) => path.join(dir, n));

// OTLP/JSON: `n` spans of one service, each with `pad` random characters (hardly compressible),
// names `${prefix}-${i}`.
function floodBody(prefix, n, pad) {
  const now = BigInt(Date.now()) * 1000000n;
  const spans = Array.from({ length: n }, (_, i) => ({
    traceId: randomTraceId(),
    spanId: randomSpanId(),
    name: `${prefix}-${i}`,
    kind: 1,
    startTimeUnixNano: String(now),
    endTimeUnixNano: String(now + 1000000n),
    attributes: [{ key: 'pad', value: { stringValue: Array.from({ length: pad / 8 }, () => Math.random().toString(36).slice(2, 10)).join('') } }],
  }));
  return JSON.stringify({ resourceSpans: [{ resource: { attributes: [{ key: 'service.name', value: { stringValue: 'e2e-flood' } }] }, scopeSpans: [{ scope: { name: 'flood' }, spans }] }] });
}

async function postSpans(agent, body) {
  const r = await fetch(`${agent.receiverHttp}/v1/traces`, { method: 'POST', headers: { 'content-type': 'application/json' }, body });
  await r.arrayBuffer();
  return r.status;
}

const counters = async (agent) => parsePrometheus((await get(`${agent.adminUrl}/metrics`)).text);

describe('embedded store', () => {
  let sim;
  let agent;
  let tmp;
  let db;
  let client;

  before(async () => {
    tmp = tempDir();
    db = path.join(tmp.dir, 'store');
    sim = await startSim({ model: MODEL, seed: 7, speed: 20 });
    agent = await startAgent({ upstream: sim.url, store: db, env: { OTEL_SERVICE_NAME: 'e2e-store' } });
    client = openaiClient(agent.url);
  });

  after(async () => {
    await stopAll(agent, sim);
    tmp?.cleanup();
  });

  const rowsFor = async (responseId) => (await storeSpans(db)).filter((s) => s.attributes['gen_ai.response.id'] === responseId);

  test('spans have the documented fields and one per request', async () => {
    const traceId = randomTraceId();
    const parentId = randomSpanId();
    const r = await client.chat.completions.create(
      { model: MODEL, messages: [{ role: 'user', content: 'Store me.' }], max_tokens: 6, temperature: 0.25 },
      { headers: { traceparent: `00-${traceId}-${parentId}-01` } },
    );
    const rows = await pollUntil(async () => {
      try {
        const x = await rowsFor(r.id);
        return x.length ? x : null;
      } catch {
        return null; // the store may not exist yet
      }
    }, { timeoutMs: 10000, intervalMs: 100 });
    assert.ok(rows, `no span for ${r.id} in ${db}\n${agent.describe()}`);
    assert.equal(rows.length, 1);

    // The files are SQLite databases in WAL mode while the agent writes.
    const files = dbFiles(db);
    assert.ok(files.some((f) => /spans-\d{13}\.db$/.test(f)), `partition files: ${files.join(', ')}`);
    assert.equal(await sqlite(path.join(db, 'metrics.db'), 'pragma journal_mode'), 'wal');

    const row = rows[0];
    assert.equal(row.trace_id, traceId);
    assert.equal(row.parent_span_id, parentId);
    assert.match(row.span_id, /^[0-9a-f]{16}$/);
    assert.equal(row.name, `chat ${MODEL}`);
    assert.equal(Number(row.kind), 1);
    assert.ok(BigInt(row.end_time_unix_nano) >= BigInt(row.start_time_unix_nano));
    assert.ok(Math.abs(Number(BigInt(row.start_time_unix_nano) / 1000000n) - Date.now()) < 60000, 'start time is recent epoch nanoseconds');
    assert.notEqual(Number(row.status_code), 2);

    const attrs = row.attributes;
    assert.equal(typeof attrs, 'object');
    assert.ok(!Array.isArray(attrs));
    assert.equal(attrs['gen_ai.span.kind'], 'LLM');
    assert.equal(attrs['gen_ai.operation.name'], 'chat');
    assert.equal(attrs['gen_ai.request.model'], MODEL);
    assert.equal(attrs['gen_ai.request.temperature'], 0.25);
    assert.equal(attrs['gen_ai.request.max_tokens'], 6);
    assert.equal(attrs['gen_ai.request.is_stream'], false, 'booleans stored as JSON booleans');
    assert.deepEqual(attrs['gen_ai.response.finish_reasons'], [r.choices[0].finish_reason], 'arrays as JSON arrays');
    assert.equal(attrs['gen_ai.usage.input_tokens'], r.usage.prompt_tokens, 'numbers as JSON numbers');
    assert.ok(Number.isInteger(attrs['gen_ai.usage.input_tokens']));
    assert.equal(attrs['gen_ai.usage.output_tokens'], r.usage.completion_tokens);
    assert.equal(attrs['gen_ai.usage.total_tokens'], r.usage.total_tokens);
    assert.ok(Array.isArray(row.events), 'events is a JSON array');
    assert.ok(Array.isArray(row.links), 'links is a JSON array');
    const resource = row.resource;
    assert.ok(resource && typeof resource === 'object' && !Array.isArray(resource));
    assert.equal(resource['service.name'], 'e2e-store');
    assert.ok(row.scope !== null && row.scope !== undefined && String(row.scope).length > 0, 'scope recorded');

    // By trace id too.
    const byTrace = await storeSpans(db, { trace: traceId });
    assert.deepEqual(byTrace.map((s) => s.span_id), [row.span_id]);
  });

  test('streamed and embeddings requests are stored too; `infertel traces` prints the trees', async () => {
    const chunks = await collectStream(
      await client.chat.completions.create({ model: MODEL, messages: [{ role: 'user', content: 'Stream me.' }], max_tokens: 5, stream: true }),
    );
    const emb = await client.embeddings.create({ model: MODEL, input: 'embed me' });
    const rows = await pollUntil(async () => {
      const s = await rowsFor(chunks[0].id);
      const e = await storeSpans(db, { name: `embeddings ${MODEL}` });
      return s.length && e.length ? { s, e } : null;
    }, { timeoutMs: 10000, intervalMs: 100 });
    assert.ok(rows, `stream/embeddings spans not stored\n${agent.describe()}`);
    const sattrs = rows.s[0].attributes;
    assert.equal(sattrs['gen_ai.request.is_stream'], true);
    assert.ok(sattrs['gen_ai.usage.output_tokens'] > 0, 'exact usage for a stream without include_usage');
    assert.equal(rows.e[0].attributes['gen_ai.span.kind'], 'EMBEDDING');
    assert.ok(emb.data.length === 1);

    const out = await runInfertel(['traces', '--store', db]);
    assert.equal(out.code, 0, `infertel traces failed: ${out.stderr}`);
    assert.ok(out.stdout.includes(`chat ${MODEL}`), `trace tree lacks chat ${MODEL}:\n${out.stdout}`);
    assert.ok(out.stdout.includes(`embeddings ${MODEL}`), `trace tree lacks embeddings ${MODEL}:\n${out.stdout}`);
    assert.match(out.stdout, /\d+(\.\d+)?\s*(ns|µs|us|ms|s)\b/, 'durations printed');
  });

  test('`infertel traces` on a missing store fails with a message', async () => {
    const out = await runInfertel(['traces', '--store', path.join(tmp.dir, 'does-not-exist')]);
    assert.notEqual(out.code, 0);
    assert.ok((out.stderr + out.stdout).trim().length > 0);
  });
});

describe('store bound, kill -9, old format, retention', () => {
  let sim;
  let tmp;

  before(async () => {
    tmp = tempDir('infertel-store-bound-');
    sim = await startSim({ model: MODEL, seed: 9 });
  });

  after(async () => {
    await stopAll(sim);
    tmp?.cleanup();
  });

  // Measured 12-05: peaks of 3.47-3.78 MiB against the bound of 4 MiB over five runs.
  test('under a flood of spans the files and WALs never exceed --store-max-mb by more than 5 %', async (t) => {
    const dir = path.join(tmp.dir, 'bounded');
    const MB = 4;
    const agent = await startAgent({ upstream: sim.url, store: dir, extra: ['--store-max-mb', String(MB)] });
    t.after(() => stopAll(agent));
    let peak = 0;
    let samples = 0;
    let sampling = true;
    const sampler = (async () => {
      while (sampling) {
        peak = Math.max(peak, await storeDiskBytes(dir));
        samples++;
        await new Promise((r) => setTimeout(r, 5));
      }
    })();
    let accepted = 0;
    let lastAccepted = null;
    // About 40 MB of hardly compressible spans: ten times the bound.
    for (let round = 0; round < 40; round++) {
      const statuses = await Promise.all(Array.from({ length: 4 }, (_, i) => postSpans(agent, floodBody(`flood-${round}-${i}`, 250, 1000))));
      accepted += statuses.filter((s) => s === 200).length * 250;
      statuses.forEach((s, i) => { if (s === 200) lastAccepted = `flood-${round}-${i}-249`; });
    }
    await pollUntil(async () => metricSum(await counters(agent), 'infertel_exporter_queue_items', (l) => l.signal === 'traces') === 0, { timeoutMs: 20000, intervalMs: 100 });
    sampling = false;
    await sampler;
    const m = await counters(agent);
    const removed = metricSum(m, 'infertel_store_retention_removed_total', (l) => l.signal === 'traces' && l.reason === 'size');
    t.diagnostic(`accepted ${accepted} spans, peak ${(peak / 1048576).toFixed(2)} MiB over ${samples} samples, removed by size ${removed}`);
    assert.ok(accepted >= 10000, `the flood was accepted: ${accepted}`);
    assert.ok(peak <= MB * 1048576 * 1.05, `peak ${peak} bytes > ${MB} MiB + 5 %`);
    assert.ok(removed > 0, 'retention by size counted');
    // What retention removed left the disk: no removed file is still held open (a partition's
    // connection left open once kept every removed file, and its space, until the agent exited).
    const held = await removedButOpen(agent.child.pid, dir);
    assert.equal(held.count, 0, `${held.count} removed files (${held.bytes} bytes) still open`);
    // The newest spans are there, once the writer has finished the batch it took last (the
    // queue's gauge falls when a batch is taken, before it is written).
    const last = await pollUntil(async () => {
      const rows = await storeSpans(dir, { name: lastAccepted });
      return rows.length > 0 ? rows : null;
    }, { timeoutMs: 10000, intervalMs: 200 });
    assert.equal(last?.length, 1, agent.describe());
  });

  test('kill -9 during heavy writing: the store reopens, every file passes integrity_check', async () => {
    const dir = path.join(tmp.dir, 'killed');
    let agent = await startAgent({ upstream: sim.url, store: dir, extra: ['--store-max-mb', '64'] });
    const flood = (async () => {
      for (let round = 0; round < 200; round++) {
        try {
          await Promise.all(Array.from({ length: 4 }, (_, i) => postSpans(agent, floodBody(`kill-${round}-${i}`, 500, 200))));
        } catch {
          return; // the agent is gone
        }
      }
    })();
    // Kill while the store writes: once some spans are on disk, and more keep coming.
    const written = await pollUntil(async () => {
      try {
        return (await storeSpans(dir)).length > 2000 ? true : null;
      } catch {
        return null;
      }
    }, { timeoutMs: 30000, intervalMs: 100 });
    assert.ok(written, 'spans written before the kill');
    agent.child.kill('SIGKILL');
    await agent.exited;
    await flood;
    const before = (await storeSpans(dir)).length;
    agent = await startAgent({ upstream: sim.url, store: dir });
    const files = dbFiles(dir);
    assert.ok(files.length >= 2, files.join(', '));
    for (const f of files) assert.equal(await sqlite(f, 'pragma integrity_check'), 'ok', f);
    const after = (await storeSpans(dir)).length;
    assert.ok(after >= before, `spans read before the restart ${before}, after ${after}`);
    assert.equal(await postSpans(agent, floodBody('after-restart', 10, 10)), 200);
    assert.ok(await pollUntil(async () => ((await storeSpans(dir, { name: 'after-restart-9' })).length === 1 ? true : null), { timeoutMs: 10000, intervalMs: 100 }));
    await stopAll(agent);
  });

  test('a store of the old format (one SQLite file) is refused with what to do', async () => {
    const file = path.join(tmp.dir, 'old.db');
    await runCommand('sqlite3', [file, 'create table spans (trace_id text); insert into spans values (\'x\')']);
    const size = fs.statSync(file).size;
    const out = await runInfertel(['agent', '--upstream', sim.url, '--listen', '127.0.0.1:0', '--admin', '127.0.0.1:0',
      '--receiver-grpc', '127.0.0.1:0', '--receiver-http', '127.0.0.1:0', '--store', file], { timeoutMs: 10000 });
    assert.notEqual(out.code, 0);
    assert.match(out.stderr + out.stdout, /single SQLite file.*Move the file away/s);
    const traces = await runInfertel(['traces', '--store', file]);
    assert.notEqual(traces.code, 0);
    assert.match(traces.stderr, /Move the file away/);
    assert.equal(fs.statSync(file).size, size, 'the old file is left as it was');
  });

  test('retention by age is counted and `infertel traces` says why the store is empty', async () => {
    const dir = path.join(tmp.dir, 'aged');
    let agent = await startAgent({ upstream: sim.url, store: dir });
    assert.equal(await postSpans(agent, floodBody('aged', 20, 10)), 200);
    assert.ok(await pollUntil(async () => ((await storeSpans(dir)).length === 20 ? true : null), { timeoutMs: 10000, intervalMs: 100 }));
    await stopAll(agent);
    await new Promise((r) => setTimeout(r, 2200));
    // Started again with a max age the spans' arrival is past: their file goes at start.
    agent = await startAgent({ upstream: sim.url, store: dir, extra: ['--store-max-age', '2s'] });
    const m = await counters(agent);
    assert.equal(metricSum(m, 'infertel_store_retention_removed_total', (l) => l.signal === 'traces' && l.reason === 'age'), 20);
    const out = await runInfertel(['traces', '--store', dir]);
    assert.equal(out.code, 0, out.stderr);
    assert.match(out.stdout, /no traces in/);
    assert.match(out.stdout, /retention removed 20 spans from this store \(20 older than --store-max-age/);
    await stopAll(agent);
  });
});
