// End-to-end: the store's JSON API (/api/v1, src/ui/api_v1.h) on the agent's admin address and
// from `infertel ui` over the same store after the agent stopped: the search's filters, the
// free-text search through captured content, one whole trace, bad parameters, the token.
import assert from 'node:assert/strict';
import path from 'node:path';
import { after, before, describe, test } from 'node:test';

import { closedPort, pollUntil, startAgent, startInfertel, startSim, stopAll, tempDir } from './lib/proc.mjs';
import { collectStream, get, openaiClient } from './lib/util.mjs';

const MODEL = 'e2e-api/model';

describe('the store\'s JSON API', () => {
  let sim;
  let agent;
  let dir;
  const MARK = 'zebra-crossing-7731';

  before(async () => {
    dir = tempDir('infertel-api-').dir;
    const port = await closedPort();
    agent = await startAgent({
      upstream: `http://127.0.0.1:${port}`,
      store: path.join(dir, 'store'),
      env: { INFERTEL_TENANT_FROM: 'header:x-tenant-id', INFERTEL_UPSTREAM_FIRST_BYTE_TIMEOUT_MS: '60000' },
    });
    sim = await startSim({ model: MODEL, listen: `127.0.0.1:${port}`, speed: 20 });
    for (let i = 0; i < 6; i++) {
      const client = openaiClient(agent.url, { defaultHeaders: { 'x-tenant-id': i < 4 ? 'acme' : 'beta' } });
      const content = i === 3 ? `tell me about the ${MARK}` : `question ${i}`;
      await collectStream(await client.chat.completions.create({ model: MODEL, messages: [{ role: 'user', content }], max_tokens: 3, stream: true }));
    }
    // A request the engine refuses: an error trace.
    await openaiClient(agent.url).chat.completions.create({ model: MODEL, messages: [{ role: 'user', content: 'x' }], max_tokens: 999999 }).catch(() => {});
    await pollUntil(async () => {
      const r = await get(`${agent.adminUrl}/api/v1/traces?limit=500`);
      return r.status === 200 && JSON.parse(r.text).traces.length >= 7 ? r : null;
    }, { timeoutMs: 10000 });
  });

  after(async () => {
    await stopAll(agent, sim);
  });

  const list = async (base, query) => {
    const r = await get(`${base}/api/v1/traces${query ? `?${query}` : ''}`);
    assert.equal(r.status, 200, r.text);
    return JSON.parse(r.text).traces;
  };

  test('search: newest first, filtered by tenant, status, duration and time, limited', async () => {
    const all = await list(agent.adminUrl, 'limit=500');
    assert.equal(all.length, 7);
    for (let i = 1; i < all.length; i++) assert.ok(BigInt(all[i - 1].start_time_unix_nano) >= BigInt(all[i].start_time_unix_nano), 'newest first');
    for (const t of all) {
      assert.match(t.trace_id, /^[0-9a-f]{32}$/);
      assert.equal(t.model, MODEL);
      assert.equal(typeof t.duration_ms, 'number');
    }
    assert.equal((await list(agent.adminUrl, 'tenant=acme')).length, 4);
    assert.equal((await list(agent.adminUrl, 'tenant=beta')).length, 2);
    const errors = await list(agent.adminUrl, 'status=error');
    assert.equal(errors.length, 1);
    assert.equal(errors[0].status, 'error');
    assert.equal((await list(agent.adminUrl, 'status=ok')).length, 6);
    assert.equal((await list(agent.adminUrl, 'limit=2')).length, 2);
    // The traces at least as long as the slowest's whole milliseconds: it and any within the
    // same millisecond of it, as the durations say.
    const minMs = Math.floor(Math.max(...all.map((t) => t.duration_ms)));
    const longEnough = all.filter((t) => BigInt(t.duration_ns) >= BigInt(minMs) * 1000000n).map((t) => t.trace_id);
    assert.ok(longEnough.length >= 1);
    assert.deepEqual((await list(agent.adminUrl, `min_ms=${minMs}`)).map((t) => t.trace_id), longEnough);
    assert.equal((await list(agent.adminUrl, `since=${Date.now() + 60000}`)).length, 0, 'nothing after now');
    assert.equal((await list(agent.adminUrl, 'since=1h')).length, 7);
    assert.equal((await list(agent.adminUrl, `until=${Date.now() - 3600000}`)).length, 0);
    assert.equal((await list(agent.adminUrl, `model=${encodeURIComponent('other/model')}`)).length, 0);
  });

  test('free text finds the trace whose captured prompt holds it', async () => {
    const found = await list(agent.adminUrl, `q=${MARK}`);
    assert.equal(found.length, 1);
    const r = await get(`${agent.adminUrl}/api/v1/traces/${found[0].trace_id}`);
    assert.ok(r.text.includes(MARK));
  });

  test('one trace: every span, the entry span with its attributes', async () => {
    const [t] = await list(agent.adminUrl, 'limit=1&status=ok');
    const r = await get(`${agent.adminUrl}/api/v1/traces/${t.trace_id}`);
    assert.equal(r.status, 200);
    const body = JSON.parse(r.text);
    assert.equal(body.trace_id, t.trace_id);
    const entry = body.spans.find((s) => s.parent_span_id === null);
    assert.equal(entry.name, `chat ${MODEL}`);
    assert.equal(entry.attributes['infertel.tenant'], t.tenant);
    assert.equal((await get(`${agent.adminUrl}/api/v1/traces/${'0'.repeat(31)}1`)).status, 404);
  });

  // The values of the series `metric` of a GET /api/v1/metrics answer, by tenant or upstream.
  const seriesOf = (body, metric) => body.series.filter((x) => x.metric === metric);

  test('the overview\'s series: requests, latency percentiles and the engine\'s state, per step', async () => {
    const body = await pollUntil(async () => {
      const r = await get(`${agent.adminUrl}/api/v1/metrics?since=10m`);
      assert.equal(r.status, 200, r.text);
      const b = JSON.parse(r.text);
      const acme = seriesOf(b, 'requests_per_second').find((x) => x.tenant === 'acme');
      const running = seriesOf(b, 'requests_running');
      return acme && acme.values.some((v) => v > 0) && running.some((x) => x.values.some((v) => v !== null)) ? b : null;
    }, { timeoutMs: 20000 });
    assert.equal(body.source, 'agent');
    assert.equal(body.step_seconds, 5);
    for (const x of body.series) assert.equal(x.values.length, body.times.length, x.metric);
    const sum = (x) => x.values.reduce((a, v) => a + (v ?? 0), 0) * body.step_seconds;
    // Four streams of tenant acme, two of beta: requests per second times the step, summed.
    assert.equal(Math.round(sum(seriesOf(body, 'requests_per_second').find((x) => x.tenant === 'acme'))), 4);
    assert.equal(Math.round(sum(seriesOf(body, 'requests_per_second').find((x) => x.tenant === 'beta'))), 2);
    const ttft = seriesOf(body, 'ttft_p50_seconds').find((x) => x.tenant === 'acme');
    assert.ok(ttft.values.some((v) => v > 0 && v < 10), JSON.stringify(ttft));
    for (const m of ['kv_cache_usage_ratio', 'requests_running', 'requests_waiting']) {
      const [x] = seriesOf(body, m);
      assert.ok(x && x.upstream !== '' && x.model === '', m);
    }
    const r = await get(`${agent.adminUrl}/api/v1/metrics?since=yesterday`);
    assert.equal(r.status, 400);
  });

  test('the agent\'s switches under /api/v1/config, as the console\'s API gives them', async () => {
    const all = JSON.parse((await get(`${agent.adminUrl}/api/v1/config`)).text);
    const key = all.keys.find((k) => k.key === 'infertel.tenant.max');
    assert.equal(key.value, 100);
    const put = await fetch(`${agent.adminUrl}/api/v1/config/infertel.tenant.max`, {
      method: 'PUT', headers: { 'content-type': 'application/json' }, body: JSON.stringify({ value: 50 }),
    });
    assert.equal(put.status, 200, await put.text());
    const now = JSON.parse((await get(`${agent.adminUrl}/api/config/infertel.tenant.max`)).text);
    assert.equal(now.value, 50);
    assert.equal(now.source, 'console');
    assert.equal(now.layer, 'api');
    const bad = await fetch(`${agent.adminUrl}/api/v1/config/infertel.tenant.max`, {
      method: 'PUT', headers: { 'content-type': 'application/json' }, body: JSON.stringify({ value: 'many' }),
    });
    assert.equal(bad.status, 400);
  });

  test('bad parameters are 400s naming them; other methods and paths are refused', async () => {
    for (const [q, word] of [['status=maybe', 'status'], ['min_ms=-1', 'min_ms'], ['limit=0', 'limit'], ['limit=501', 'limit'], ['since=yesterday', 'since'], ['q=%zz', 'escape']]) {
      const r = await get(`${agent.adminUrl}/api/v1/traces?${q}`);
      assert.equal(r.status, 400, q);
      assert.match(JSON.parse(r.text).error.message, new RegExp(word), q);
    }
    assert.equal((await get(`${agent.adminUrl}/api/v1/traces/nothex`)).status, 400);
    assert.equal((await get(`${agent.adminUrl}/api/v1/nothing`)).status, 404);
    const r = await fetch(`${agent.adminUrl}/api/v1/traces`, { method: 'DELETE' });
    assert.equal(r.status, 405);
  });

  test('`infertel ui` serves the same store with no agent; a token when given', async () => {
    const before = await list(agent.adminUrl, 'limit=500');
    await stopAll(agent);
    const ui = await startInfertel(['ui', '--store', path.join(dir, 'store'), '--listen', '127.0.0.1:0', '--token', 's3cret'], {
      name: 'ui',
      waitFor: { url: /^infertel ui: serving .* on (http:\/\/[0-9.]+:[0-9]+)\/ui\// },
    });
    try {
      const base = ui.urls.url;
      assert.equal((await get(`${base}/api/v1/traces`)).status, 401);
      const r = await get(`${base}/api/v1/traces?limit=500`, { authorization: 'Bearer s3cret' });
      assert.equal(r.status, 200);
      assert.deepEqual(JSON.parse(r.text).traces.map((t) => t.trace_id), before.map((t) => t.trace_id));
      // No agent: no switches, and the overview from the store's trace index.
      const config = await get(`${base}/api/v1/config`, { authorization: 'Bearer s3cret' });
      assert.equal(config.status, 404);
      assert.equal(JSON.parse(config.text).error.type, 'no_agent');
      const m = JSON.parse((await get(`${base}/api/v1/metrics?since=1h`, { authorization: 'Bearer s3cret' })).text);
      assert.equal(m.source, 'store');
      const rps = seriesOf(m, 'requests_per_second');
      const total = rps.reduce((a, x) => a + x.values.reduce((b, v) => b + (v ?? 0), 0), 0) * m.step_seconds;
      assert.equal(Math.round(total), 7, 'the seven traces, the engine\'s refusal among them');
      const errors = seriesOf(m, 'errors_per_second').reduce((a, x) => a + x.values.reduce((b, v) => b + (v ?? 0), 0), 0) * m.step_seconds;
      assert.equal(Math.round(errors), 1);
    } finally {
      await stopAll(ui);
    }
  });
});
