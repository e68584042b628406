// End-to-end: with no OTLP endpoint the agent's entry spans land in the embedded SQLite store
// (`--store PATH`), checked with the sqlite3 CLI, and `infertel traces --store PATH` prints them.
import assert from 'node:assert/strict';
import path from 'node:path';
import { after, before, describe, test } from 'node:test';

import { pollUntil, runCommand, runInfertel, startAgent, startSim, stopAll, tempDir } from './lib/proc.mjs';
import { collectStream, openaiClient, randomSpanId, randomTraceId } from './lib/util.mjs';

const MODEL = 'e2e-store/model-1b';

async function sql(db, query) {
  const r = await runCommand('sqlite3', ['-json', '-readonly', db, query], { timeoutMs: 10000 });
  assert.equal(r.code, 0, `sqlite3 failed: ${r.stderr}`);
  return r.stdout.trim() ? JSON.parse(r.stdout) : [];
}

describe('embedded SQLite store', () => {
  let sim;
  let agent;
  let tmp;
  let db;
  let client;

  before(async () => {
    tmp = tempDir();
    db = path.join(tmp.dir, 'spans.db');
    sim = await startSim({ model: MODEL, seed: 7, speed: 20 });
    agent = await startAgent({ upstream: sim.url, store: db, env: { OTEL_SERVICE_NAME: 'e2e-store' } });
    client = openaiClient(agent.url);
  });

  after(async () => {
    await stopAll(agent, sim);
    tmp?.cleanup();
  });

  const rowsFor = (responseId) =>
    sql(db, `select * from spans where json_extract(attributes, '$."gen_ai.response.id"') = '${responseId.replace(/'/g, "''")}'`);

  test('spans table has the documented columns and one row per request', async () => {
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
        return null; // the file or table may not exist yet
      }
    }, { timeoutMs: 10000, intervalMs: 100 });
    assert.ok(rows, `no row for ${r.id} in ${db}\n${agent.describe()}`);
    assert.equal(rows.length, 1);

    const cols = (await sql(db, 'pragma table_info(spans)')).map((c) => c.name);
    for (const c of ['trace_id', 'span_id', 'parent_span_id', 'name', 'kind', 'start_time_unix_nano', 'end_time_unix_nano', 'status_code', 'attributes', 'events', 'links', 'resource', 'scope']) {
      assert.ok(cols.includes(c), `column ${c} missing: ${cols.join(', ')}`);
    }
    const journal = await sql(db, 'pragma journal_mode');
    assert.equal(journal[0].journal_mode, 'wal');

    const row = rows[0];
    assert.equal(row.trace_id, traceId);
    assert.equal(row.parent_span_id, parentId);
    assert.match(row.span_id, /^[0-9a-f]{16}$/);
    assert.equal(row.name, `chat ${MODEL}`);
    assert.equal(Number(row.kind), 1);
    assert.ok(Number(row.end_time_unix_nano) >= Number(row.start_time_unix_nano));
    assert.ok(Math.abs(Number(BigInt(row.start_time_unix_nano) / 1000000n) - Date.now()) < 60000, 'start time is recent epoch nanoseconds');
    assert.notEqual(Number(row.status_code), 2);

    const attrs = JSON.parse(row.attributes);
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
    assert.equal(attrs['gen_ai.usage.output_tokens'], r.usage.completion_tokens);
    assert.equal(attrs['gen_ai.usage.total_tokens'], r.usage.total_tokens);
    assert.ok(Array.isArray(JSON.parse(row.events)), 'events is a JSON array');
    assert.ok(Array.isArray(JSON.parse(row.links)), 'links is a JSON array');
    const resource = JSON.parse(row.resource);
    assert.ok(resource && typeof resource === 'object' && !Array.isArray(resource));
    assert.equal(resource['service.name'], 'e2e-store');
    assert.ok(row.scope !== null && row.scope !== undefined && String(row.scope).length > 0, 'scope recorded');

    // Queryable with SQLite's JSON functions, as documented for users.
    const typed = await sql(db, `select json_type(attributes, '$."gen_ai.usage.input_tokens"') as t from spans where span_id = '${row.span_id}'`);
    assert.equal(typed[0].t, 'integer');
  });

  test('streamed and embeddings requests are stored too; `infertel traces` prints the trees', async () => {
    const chunks = await collectStream(
      await client.chat.completions.create({ model: MODEL, messages: [{ role: 'user', content: 'Stream me.' }], max_tokens: 5, stream: true }),
    );
    const emb = await client.embeddings.create({ model: MODEL, input: 'embed me' });
    const rows = await pollUntil(async () => {
      const s = await rowsFor(chunks[0].id);
      const e = await sql(db, `select * from spans where name = 'embeddings ${MODEL}'`);
      return s.length && e.length ? { s, e } : null;
    }, { timeoutMs: 10000, intervalMs: 100 });
    assert.ok(rows, `stream/embeddings spans not stored\n${agent.describe()}`);
    const sattrs = JSON.parse(rows.s[0].attributes);
    assert.equal(sattrs['gen_ai.request.is_stream'], true);
    assert.ok(sattrs['gen_ai.usage.output_tokens'] > 0, 'exact usage for a stream without include_usage');
    assert.equal(JSON.parse(rows.e[0].attributes)['gen_ai.span.kind'], 'EMBEDDING');
    assert.ok(emb.data.length === 1);

    const out = await runInfertel(['traces', '--store', db]);
    assert.equal(out.code, 0, `infertel traces failed: ${out.stderr}`);
    assert.ok(out.stdout.includes(`chat ${MODEL}`), `trace tree lacks chat ${MODEL}:\n${out.stdout}`);
    assert.ok(out.stdout.includes(`embeddings ${MODEL}`), `trace tree lacks embeddings ${MODEL}:\n${out.stdout}`);
    assert.match(out.stdout, /\d+(\.\d+)?\s*(ns|µs|us|ms|s)\b/, 'durations printed');
  });

  test('`infertel traces` on a missing store fails with a message', async () => {
    const out = await runInfertel(['traces', '--store', path.join(tmp.dir, 'does-not-exist.db')]);
    assert.notEqual(out.code, 0);
    assert.ok((out.stderr + out.stdout).trim().length > 0);
  });
});
