// End-to-end: stopping and signalling the agent (docs/operations.md, "Shutdown and drain" and
// "Other signals"). SIGTERM while a long stream is in flight: new connections are refused, the
// stream reaches the official `openai` client whole with its [DONE], the agent exits 0 after it,
// and the request's entry span is in the store although the export delay had not passed (the
// final flush). A stream longer than the drain timeout is cut at the timeout, its span flushed
// with an ERROR status and error.type "shutdown". SIGHUP re-reads the console file; SIGUSR1,
// SIGUSR2 and SIGALRM do not end the agent and lose nothing. Item 8 of issue 36: a missing
// console file is one clear error, and a metric export interval without a unit is refused.
import assert from 'node:assert/strict';
import fs from 'node:fs';
import path from 'node:path';
import { after, before, describe, test } from 'node:test';

import { storeSpans } from './lib/store.mjs';
import { pollUntil, runInfertel, startAgent, startSim, stopAll, tempDir } from './lib/proc.mjs';
import { contentDeltas, exitOf, parseSse, refused, startRawStream } from './lib/drain.mjs';
import { get, openaiClient } from './lib/util.mjs';

const MODEL = 'e2e-shutdown/model';
// Long enough that nothing reaches the store before the agent's final flush.
const EXPORT_DELAY_MS = 120000;

const spansOf = async (db, responseId) =>
  (await storeSpans(db)).filter((s) => s.attributes['gen_ai.response.id'] === responseId);

describe('SIGTERM drains the requests in flight', () => {
  let sim;
  let tmp;

  before(async () => {
    tmp = tempDir('infertel-shutdown-');
    // 1,000 tokens take about 2.5 s at speed 1: in flight when the signal comes.
    sim = await startSim({ model: MODEL, seed: 3, speed: 1 });
  });

  after(async () => {
    await stopAll(sim);
    tmp?.cleanup();
  });

  test('a 1,000-token stream finishes with [DONE], new connections are refused, exit 0, its span is flushed', async () => {
    const db = path.join(tmp.dir, 'drain.db');
    const agent = await startAgent({ upstream: sim.url, store: db, exportDelayMs: EXPORT_DELAY_MS });
    try {
      const stream = await startRawStream(agent.url, MODEL, 1000);
      agent.child.kill('SIGTERM');
      const isRefused = await pollUntil(() => refused(agent.url), { timeoutMs: 2000, intervalMs: 20 });
      assert.ok(isRefused, `new connections are refused once SIGTERM arrived\n${agent.describe()}`);
      const { text, error } = await stream.rest;
      assert.equal(error, undefined, `the stream was cut: ${error}\n${agent.describe()}`);
      assert.equal(agent.exit, null, 'the agent was still running when the stream ended');
      const { chunks, done } = parseSse(text);
      assert.ok(done, `the stream ends with [DONE] (${chunks.length} events)`);
      assert.equal(contentDeltas(chunks), 1000, 'every token reached the client');
      const exit = await exitOf(agent, 15000);
      assert.equal(exit.code, 0, agent.describe());
      const rows = await spansOf(db, chunks[0].id);
      assert.equal(rows.length, 1, `the entry span was flushed to the store\n${agent.describe()}`);
      assert.notEqual(rows[0].status_code, 2, 'not an error');
    } finally {
      await agent.stop();
    }
  });

  test('a stream longer than --drain-timeout-ms is cut at the timeout; its ERROR span is flushed', async () => {
    const db = path.join(tmp.dir, 'cut.db');
    const agent = await startAgent({ upstream: sim.url, store: db, exportDelayMs: EXPORT_DELAY_MS, extra: ['--drain-timeout-ms', '500'] });
    try {
      // 8,000 tokens (the model's context is 8,192) take about 20 s: far beyond the timeout.
      const stream = await startRawStream(agent.url, MODEL, 8000);
      const signalled = Date.now();
      agent.child.kill('SIGTERM');
      const { text, error } = await stream.rest;
      const cutAfter = Date.now() - signalled;
      assert.ok(error, 'the client sees the stream cut');
      assert.ok(cutAfter >= 400 && cutAfter < 10000, `cut ${cutAfter} ms after the signal`);
      const { chunks, done } = parseSse(text.slice(0, text.lastIndexOf('\n') + 1));
      assert.ok(!done);
      const exit = await exitOf(agent, 15000);
      assert.equal(exit.code, 0, `a drain that had to cut still exits 0\n${agent.describe()}`);
      assert.match(agent.stdout + agent.stderr, /1 request\(s\) still in flight at the drain timeout were cut/);
      const rows = await spansOf(db, chunks[0].id);
      assert.equal(rows.length, 1, `the cut request's entry span was flushed\n${agent.describe()}`);
      assert.equal(rows[0].status_code, 2, 'status ERROR');
      assert.equal(rows[0].attributes['error.type'], 'shutdown');
    } finally {
      await agent.stop();
    }
  });
});

describe('other signals', () => {
  let sim;
  let tmp;

  before(async () => {
    tmp = tempDir('infertel-signals-');
    sim = await startSim({ model: MODEL, seed: 4, speed: 20 });
  });

  after(async () => {
    await stopAll(sim);
    tmp?.cleanup();
  });

  test('SIGHUP re-reads the console file; SIGUSR1, SIGUSR2, SIGALRM end nothing and lose nothing', async () => {
    const MAXLEN = 'otel.instrumentation.genai.message-content.max-length';
    const file = path.join(tmp.dir, 'console.yaml');
    const db = path.join(tmp.dir, 'signals.db');
    fs.writeFileSync(file, `${MAXLEN}: 100\n`);
    const agent = await startAgent({ upstream: sim.url, store: db, exportDelayMs: EXPORT_DELAY_MS, extra: ['--console-file', file] });
    try {
      const client = openaiClient(agent.url);
      const ask = () => client.chat.completions.create({ model: MODEL, messages: [{ role: 'user', content: 'hi' }], max_tokens: 3 });
      const ids = [(await ask()).id];
      for (const sig of ['SIGUSR1', 'SIGUSR2', 'SIGALRM']) {
        agent.child.kill(sig);
        ids.push((await ask()).id);
      }
      // Same size, same mtime: only a forced read sees the change.
      const { mtime } = fs.statSync(file);
      fs.writeFileSync(file, `${MAXLEN}: 200\n`);
      fs.utimesSync(file, mtime, mtime);
      agent.child.kill('SIGHUP');
      const value = await pollUntil(async () => {
        const doc = (await get(`${agent.adminUrl}/api/config`)).json;
        const v = doc?.keys.find((k) => k.key === MAXLEN)?.value;
        return v === 200 ? v : null;
      }, { timeoutMs: 5000 });
      assert.equal(value, 200, `SIGHUP applied the console file\n${agent.describe()}`);
      ids.push((await ask()).id);
      assert.equal(agent.exit, null, 'no signal but SIGINT/SIGTERM ends the agent');
      agent.child.kill('SIGTERM');
      const exit = await exitOf(agent, 15000);
      assert.equal(exit.code, 0, agent.describe());
      for (const id of ids) assert.equal((await spansOf(db, id)).length, 1, `span of ${id} flushed`);
    } finally {
      await agent.stop();
    }
  });
});

describe('clear errors on bad flags (issue 36, item 8)', () => {
  const base = (upstream) => ['agent', '--upstream', upstream, '--listen', '127.0.0.1:0', '--admin', '127.0.0.1:0',
    '--receiver-grpc', 'off', '--receiver-http', 'off', '--no-store'];

  test('a missing --console-file is one clear error', async () => {
    const missing = '/nonexistent/infertel-console.yaml';
    const r = await runInfertel([...base('http://127.0.0.1:1'), '--console-file', missing], { timeoutMs: 10000 });
    assert.equal(r.code, 2, r.stdout + r.stderr);
    assert.doesNotMatch(r.stdout + r.stderr, /keeping the last good values/, 'no warning that contradicts the exit');
    const lines = r.stderr.trim().split('\n');
    assert.equal(lines.length, 1, `one line:\n${r.stderr}`);
    assert.match(lines[0], /^infertel agent: --console-file \/nonexistent\/infertel-console\.yaml: cannot read: No such file or directory$/);
  });

  test('--metric-export-interval needs a unit and a sensible value', async () => {
    for (const bad of ['2000', '0ms', '10ms', '48h', 'soon']) {
      const r = await runInfertel([...base('http://127.0.0.1:1'), '--metric-export-interval', bad], { timeoutMs: 10000 });
      assert.equal(r.code, 2, `${bad}: ${r.stdout}${r.stderr}`);
      assert.match(r.stderr, /--metric-export-interval: expected/);
    }
    const env = await runInfertel(base('http://127.0.0.1:1'), { timeoutMs: 10000, env: { OTEL_METRIC_EXPORT_INTERVAL: '-5' } });
    assert.equal(env.code, 2, env.stderr);
    assert.match(env.stderr, /OTEL_METRIC_EXPORT_INTERVAL: expected milliseconds/);
    const help = await runInfertel(['agent', '--help']);
    assert.match(help.stdout, /--metric-export-interval[^\n]*\n?[^\n]*with its unit/);
  });
});
