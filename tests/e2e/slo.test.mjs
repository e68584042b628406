// End-to-end: tenants and latency objectives (docs/telemetry-reference.md, "Tenants, SLOs and
// latency causes"). A simulator serving one request at a time, so that a burst queues and the
// later requests of it miss their time-to-first-token objective; tenants from a header, the
// OpenAI `user` field and the API key's fingerprint, past a bound of 3. Checked: the verdicts
// and tenants on the entry spans (OTLP, decoded with the official protos), the engine spans
// inheriting the tenant, the SLO series and the tenant label through promtool and a real
// Prometheus (exemplars stored), the OTLP histograms and sums, a live change of the objectives
// (general and per model) through the admin API, and `infertel slo` over the store.
import assert from 'node:assert/strict';
import crypto from 'node:crypto';
import path from 'node:path';
import { after, before, describe, test } from 'node:test';

import { startGrpcReceiver } from './lib/otlp.mjs';
import { promtoolCheck, startPrometheus } from './lib/prom.mjs';
import { closedPort, pollUntil, runInfertel, startAgent, startSim, stopAll, tempDir } from './lib/proc.mjs';
import { API_KEY, collectStream, get, metricSum, openaiClient, parsePrometheus } from './lib/util.mjs';

const MODEL = 'e2e-slo/model';
const TTFT_MS = 250;

async function send(method, url, body) {
  const r = await fetch(url, {
    method,
    headers: { 'content-type': 'application/json' },
    body: JSON.stringify(body),
    signal: AbortSignal.timeout(10000),
  });
  return { status: r.status, text: await r.text() };
}

describe('tenants and SLOs', () => {
  let rx;
  let sim;
  let agent;
  let dir;
  const sent = []; // {tenant, stream, id}
  const fingerprint = `key-${crypto.createHash('sha256').update(API_KEY).digest('hex').slice(0, 12)}`;

  /** One chat request; resolves with its X-Request-Id. */
  async function chat({ tenantHeader, user, stream = true, maxTokens = 4, tag }) {
    const id = `slo-${tag}-${sent.length}`;
    const headers = { 'x-request-id': id };
    if (tenantHeader) headers['x-tenant-id'] = tenantHeader;
    const client = openaiClient(agent.url, { defaultHeaders: headers });
    const body = { model: MODEL, messages: [{ role: 'user', content: `request ${tag}` }], max_tokens: maxTokens };
    if (user) body.user = user;
    if (stream) await collectStream(await client.chat.completions.create({ ...body, stream: true }));
    else await client.chat.completions.create(body);
    sent.push({ id, tag });
    return id;
  }

  const entries = () => rx.spans.filter((s) => s.name === `chat ${MODEL}`);

  before(async () => {
    dir = tempDir('infertel-slo-').dir;
    rx = await startGrpcReceiver();
    const port = await closedPort();
    agent = await startAgent({
      upstream: `http://127.0.0.1:${port}`,
      otlp: { endpoint: rx.endpoint, protocol: 'grpc' },
      store: path.join(dir, 'store'),
      extra: ['--scrape-interval', '200ms', '--metric-export-interval', '300ms'],
      env: {
        INFERTEL_TENANT_FROM: 'header:x-tenant-id,user,api_key_hash',
        INFERTEL_TENANT_MAX: '3',
        INFERTEL_SLO_TTFT_MS: String(TTFT_MS),
        INFERTEL_SLO_E2E_MS: '20000',
      },
    });
    // One running request at a time, 40 ms a step: a stream of 4 tokens takes about 200 ms.
    sim = await startSim({
      model: MODEL,
      seed: 9,
      listen: `127.0.0.1:${port}`,
      extra: ['--max-num-seqs', '1', '--step-fixed-ms', '40', '--otlp-traces-endpoint', `grpc://${agent.receiverGrpc}`],
      env: { OTEL_BSP_SCHEDULE_DELAY: '100' },
    });
    rx.diag = () => `${agent.describe()}\n${sim.describe()}`;
    // A burst of six streams of tenant acme: they queue one behind another.
    await Promise.all(Array.from({ length: 6 }, () => chat({ tenantHeader: 'acme', tag: 'burst' })));
    await chat({ user: 'beta-user', stream: false, tag: 'user' });
    await chat({ tag: 'key' }); // no header, no user: the API key's fingerprint
    await chat({ tenantHeader: 'delta', tag: 'fourth' }); // past the bound of 3: other
    await rx.waitForSpans((s) => s.name === `chat ${MODEL}`, 10000, { count: sent.length });
  });

  after(async () => {
    await stopAll(agent, sim);
    await rx?.close();
  });

  test('entry spans carry the tenant and the verdict; queued requests missed ttft', async () => {
    const spans = entries();
    assert.equal(spans.length, sent.length);
    const tenants = spans.map((s) => s.attributes['infertel.tenant']).sort();
    assert.deepEqual(tenants, ['acme', 'acme', 'acme', 'acme', 'acme', 'acme', 'beta-user', fingerprint, 'other'].sort());
    for (const s of spans) {
      assert.equal(typeof s.attributes['infertel.slo.met'], 'boolean', 'every request judged');
      assert.ok(Array.isArray(s.attributes['infertel.slo.missed']));
      assert.equal(s.attributes['infertel.slo.met'], s.attributes['infertel.slo.missed'].length === 0);
      assert.ok(!JSON.stringify(s.attributes).includes(API_KEY), 'the API key is never recorded');
    }
    const burst = spans.filter((s) => s.attributes['infertel.tenant'] === 'acme');
    const missed = burst.filter((s) => s.attributes['infertel.slo.missed'].includes('ttft'));
    const met = burst.filter((s) => s.attributes['infertel.slo.met']);
    assert.ok(missed.length >= 2, `the queued requests of the burst missed ttft: ${missed.length} of 6`);
    assert.ok(met.length >= 1, 'the first of the burst met its objectives');
    // A verdict agrees with the span's own times: a ttft miss took longer than the objective.
    for (const s of missed) assert.ok(Number(s.endTimeUnixNano - s.startTimeUnixNano) / 1e6 > TTFT_MS);
    // The response not streamed is judged on its duration only.
    const plain = spans.find((s) => s.attributes['infertel.tenant'] === 'beta-user');
    assert.deepEqual(plain.attributes['infertel.slo.missed'], []);
  });

  test('engine spans of a request inherit its tenant', async () => {
    const llm = await rx.waitForSpans((s) => s.name === 'llm_request', 10000, { count: sent.length });
    const tenants = new Set(llm.map((s) => s.attributes['infertel.tenant']));
    assert.ok(tenants.has('acme') && tenants.has('beta-user') && tenants.has(fingerprint) && tenants.has('other'), [...tenants].join(','));
    // Its phases too.
    const phases = rx.spans.filter((s) => ['wait', 'prefill', 'decode'].includes(s.name) && s.attributes['infertel.tenant'] === 'acme');
    assert.ok(phases.length >= 6, `phases of acme's requests: ${phases.length}`);
  });

  test('SLO series and the tenant label: exact counts, promtool, the bound counted', async () => {
    const spans = entries();
    const text = await pollUntil(async () => {
      const t = (await get(`${agent.adminUrl}/metrics`)).text;
      return metricSum(parsePrometheus(t), 'infertel_slo_requests_total') === sent.length ? t : null;
    }, { timeoutMs: 5000 });
    await promtoolCheck(text);
    const samples = parsePrometheus(text);
    const count = (pred) => spans.filter(pred).length;
    for (const tenant of ['acme', 'beta-user', fingerprint, 'other']) {
      const ofTenant = (s) => s.attributes['infertel.tenant'] === tenant;
      assert.equal(metricSum(samples, 'infertel_slo_requests_total', (l) => l.tenant === tenant && l.met === 'true'), count((s) => ofTenant(s) && s.attributes['infertel.slo.met']), tenant);
      assert.equal(metricSum(samples, 'infertel_slo_misses_total', (l) => l.tenant === tenant && l.objective === 'ttft'), count((s) => ofTenant(s) && s.attributes['infertel.slo.missed'].includes('ttft')));
      // Goodput: the output tokens of the requests that met every objective.
      const goodput = spans.filter((s) => ofTenant(s) && s.attributes['infertel.slo.met']).reduce((a, s) => a + Number(s.attributes['gen_ai.usage.output_tokens']), 0);
      assert.equal(metricSum(samples, 'infertel_goodput_tokens_total', (l) => l.tenant === tenant && l.model === MODEL), goodput, `goodput of ${tenant}`);
    }
    const acme = samples.filter((x) => x.name === 'infertel_slo_attainment_ratio' && x.labels.tenant === 'acme');
    assert.deepEqual(acme.map((x) => x.labels.window).sort(), ['1m', '5m']);
    const acmeMet = count((s) => s.attributes['infertel.tenant'] === 'acme' && s.attributes['infertel.slo.met']);
    assert.ok(Math.abs(acme[0].value - acmeMet / 6) < 1e-9, `attainment ${acme[0].value} against ${acmeMet}/6`);
    // The latency histograms carry the tenant.
    assert.equal(metricSum(samples, 'infertel_time_to_first_token_seconds_count', (l) => l.tenant === 'acme'), 6);
    assert.ok(metricSum(samples, 'infertel_tenants_folded_total', (l) => l.reason === 'cap') >= 1);
    assert.equal(metricSum(samples, 'infertel_tenants'), 3);
  });

  test('OTLP: the SLO sums, the attainment gauge and tenant-labelled histograms with exemplars', async () => {
    const metrics = await pollUntil(() => {
      for (const r of [...rx.metricsRequests].reverse()) {
        const ms = r.body.resourceMetrics.flatMap((rm) => rm.scopeMetrics.flatMap((sm) => sm.metrics));
        const req = ms.find((m) => m.name === 'infertel_slo_requests_total');
        const total = (req?.sum.dataPoints ?? []).reduce((a, p) => a + p.asDouble, 0);
        if (total === sent.length) return ms;
      }
      return null;
    }, { timeoutMs: 5000 });
    const byName = Object.fromEntries(metrics.map((m) => [m.name, m]));
    assert.equal(byName.infertel_slo_requests_total.sum.isMonotonic, true);
    assert.ok(byName.infertel_slo_attainment_ratio.gauge.dataPoints.length >= 2);
    const ttft = byName.infertel_time_to_first_token_seconds.histogram.dataPoints;
    const acme = ttft.filter((p) => p.attributes.some((a) => a.key === 'tenant' && a.value.stringValue === 'acme'));
    assert.equal(acme.reduce((a, p) => a + Number(p.count), 0), 6);
    assert.ok(acme.every((p) => p.exemplars.length >= 1));
  });

  test('a real Prometheus scrapes the SLO series and stores exemplars of the tenant\'s histograms', async () => {
    const prom = await startPrometheus([agent.adminUrl.replace('http://', '')], { exemplars: true });
    const query = prom.query;
    try {
      const result = await pollUntil(async () => {
        const r = await query(`sum(infertel_slo_requests_total{tenant="acme"})`);
        return r?.length ? r : null;
      }, { timeoutMs: 20000, intervalMs: 250 }).catch((e) => {
        throw new Error(`${e.message}\n--- prometheus ---\n${prom.log().slice(-3000)}`);
      });
      assert.equal(Number(result[0].value[1]), 6);
      const ratio = await query(`infertel_slo_attainment_ratio{tenant="acme",window="5m"}`);
      assert.equal(ratio.length, 1);
      const now = Math.floor(Date.now() / 1000);
      const exemplars = await pollUntil(async () => {
        const r = await prom.get(`/api/v1/query_exemplars?query=${encodeURIComponent('infertel_time_to_first_token_seconds_bucket{tenant="acme"}')}&start=${now - 600}&end=${now + 60}`);
        const data = JSON.parse(r.text).data ?? [];
        const all = data.flatMap((d) => d.exemplars);
        return all.length ? all : null;
      }, { timeoutMs: 10000, intervalMs: 250 });
      const acmeTraces = new Set(entries().filter((s) => s.attributes['infertel.tenant'] === 'acme').map((s) => s.traceId));
      assert.ok(exemplars.some((e) => acmeTraces.has(e.labels.trace_id)), 'an exemplar names one of acme\'s traces');
    } finally {
      await prom.close();
    }
  });

  test('objectives change live: a general one and a per-model override through the admin API', async () => {
    let r = await send('PUT', `${agent.adminUrl}/api/config/infertel.slo.ttft-ms`, { value: 600000 });
    assert.equal(r.status, 200, r.text);
    const relaxed = await chat({ tenantHeader: 'acme', tag: 'relaxed' });
    r = await send('PUT', `${agent.adminUrl}/api/config/infertel.slo.models`, { value: { [MODEL]: { 'e2e-ms': 1 } } });
    assert.equal(r.status, 200, r.text);
    const strict = await chat({ tenantHeader: 'acme', tag: 'strict' });
    r = await send('PUT', `${agent.adminUrl}/api/config/infertel.slo.models`, { value: { [MODEL]: { 'e2e-ms': 'soon' } } });
    assert.equal(r.status, 400, 'a bad table is refused');
    assert.match(r.text, /infertel\.slo\.models/);
    const spans = await rx.waitForSpans((s) => s.name === `chat ${MODEL}`, 10000, { count: sent.length });
    const last = spans.slice(-2);
    assert.equal(last.length, 2);
    const byTime = last.sort((a, b) => Number(a.startTimeUnixNano - b.startTimeUnixNano));
    assert.equal(byTime[0].attributes['infertel.slo.met'], true, `${relaxed}: a minute-long ttft objective is met`);
    assert.deepEqual(byTime[1].attributes['infertel.slo.missed'], ['e2e'], `${strict}: the model's 1 ms e2e objective`);
  });

  test('`infertel slo` prints attainment per model and tenant and the slowest requests', async () => {
    const out = await pollUntil(async () => {
      const o = await runInfertel(['slo', '--store', path.join(dir, 'store'), '--slowest', '3']);
      return o.code === 0 && o.stdout.includes('acme') && o.stdout.includes('other') ? o : null;
    }, { timeoutMs: 10000, intervalMs: 300 });
    const lines = out.stdout.split('\n');
    const acme = lines.find((l) => l.startsWith(MODEL) && / acme /.test(l));
    assert.ok(acme, out.stdout);
    const cols = acme.trim().split(/\s+/);
    assert.equal(cols[2], '8', 'eight of acme\'s requests judged');
    assert.match(out.stdout, /The 3 slowest requests/);
    const slowest = lines.slice(lines.findIndex((l) => l.includes('duration')) + 1).filter((l) => /[0-9a-f]{32}$/.test(l));
    assert.equal(slowest.length, 3);
    assert.match(out.stdout, /ttft/);
  });
});

// A stream of 100,000 tokens: its time per output token and every inter-token gap are exact
// (constant memory per stream), and its verdict is judged on them.
describe('a 100,000-token stream', () => {
  test('judged on exact figures: tpot from its first and last token, every gap counted', async () => {
    const rx = await startGrpcReceiver();
    const port = await closedPort();
    const agent = await startAgent({
      upstream: `http://127.0.0.1:${port}`,
      otlp: { endpoint: rx.endpoint, protocol: 'grpc' },
      env: { INFERTEL_SLO_TPOT_MS: '1', INFERTEL_SLO_E2E_MS: '600000' },
    });
    const sim = await startSim({
      model: MODEL,
      listen: `127.0.0.1:${port}`,
      speed: 1000,
      extra: ['--max-model-len', '200000', '--num-kv-blocks', '20000'],
    });
    try {
      const client = openaiClient(agent.url, { timeout: 180000 });
      const stream = await client.chat.completions.create({
        model: MODEL, messages: [{ role: 'user', content: 'a long one' }], max_tokens: 100000, stream: true, ignore_eos: true,
      });
      let first = 0;
      let last = 0;
      let deltas = 0;
      for await (const c of stream) {
        if (!c.choices?.[0]?.delta?.content) continue;
        last = performance.now();
        if (!first) first = last;
        deltas++;
      }
      assert.equal(deltas, 100000);
      const [entry] = await rx.waitForSpans((s) => s.name === `chat ${MODEL}`, 20000);
      assert.equal(entry.attributes['gen_ai.usage.output_tokens'], 100000);
      assert.equal(entry.attributes['infertel.slo.met'], true, JSON.stringify(entry.attributes['infertel.slo.missed']));
      const samples = parsePrometheus((await get(`${agent.adminUrl}/metrics`)).text);
      // 99,999 gaps, every one in the inter-token distribution.
      assert.equal(metricSum(samples, 'infertel_inter_token_latency_seconds_count'), 99999);
      const tpot = metricSum(samples, 'infertel_time_per_output_token_seconds_sum');
      const seenByClient = (last - first) / 1000 / 99999;
      assert.ok(Math.abs(tpot - seenByClient) / seenByClient < 0.05, `tpot ${tpot} s at the gateway, ${seenByClient} s at the client`);
      assert.equal(metricSum(samples, 'infertel_slo_requests_total', (l) => l.met === 'true'), 1);
      assert.equal(metricSum(samples, 'infertel_goodput_tokens_total'), 100000);
    } finally {
      await stopAll(agent, sim);
      await rx.close();
    }
  });
});
