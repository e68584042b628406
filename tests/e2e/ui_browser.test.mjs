// End-to-end: the web UI's pages (src/ui/assets, served by src/ui/static_assets.h) in a real
// browser: Debian's chromium, headless, driven by playwright-core. One run with traffic:
//   - a vLLM-like simulator behind an agent with the store on, its engine spans sent to the
//     agent's receiver (phases and events), with content capture on (the default);
//   - an SGLang-like pair under PD disaggregation (prefill and decode nodes, both sending their
//     native spans to the prefill node's agent, which links the two traces);
// then every page: the overview, the search, a trace's waterfall (phases in order, widths to
// scale), the SGLang native tree and its PD link, a config switch edited, a prompt holding HTML
// and script shown as text with nothing run, the Content-Security-Policy; and `infertel ui`
// over the store after the agent stopped. Screenshots go to $INFERTEL_ARTIFACTS/ui (default
// build/test-artifacts/ui).
//
// Skips when chromium is absent, except under CI=true (scripts/install-deps.sh installs it).
import assert from 'node:assert/strict';
import fs from 'node:fs';
import path from 'node:path';
import { after, before, describe, test } from 'node:test';

import { closedPort, pollUntil, startAgent, startInfertel, startSim, stopAll, tempDir } from './lib/proc.mjs';
import { collectStream, get, openaiClient } from './lib/util.mjs';

const CHROMIUM = process.env.INFERTEL_CHROMIUM ?? '/usr/bin/chromium';
const HAVE_CHROMIUM = fs.existsSync(CHROMIUM);
const ARTIFACTS = path.resolve(process.env.INFERTEL_ARTIFACTS ?? 'build/test-artifacts', 'ui');
const CSP = "default-src 'none'; script-src 'self'; style-src 'self'; img-src 'self' data:; connect-src 'self'; base-uri 'none'; form-action 'self'; frame-ancestors 'none'";

const MODEL = 'e2e-ui/model-8b';
const SGL_MODEL = 'e2e-ui/sgl-model-8b';
const MARK = 'needle-in-the-ui-4417';
const XSS_MARK = 'hostile-prompt-9902';
const XSS_PROMPT = `${XSS_MARK}: <img src=x onerror="window.__xss=1"> and <script>window.__xss=2</script>`;
const CAPTURE = 'otel.instrumentation.genai.capture-message-content';
const TOKEN = 'ui-e2e-token-77';
const PHASES = ['wait', 'prefill', 'decode'];
const SIM_ENV = { OTEL_BSP_SCHEDULE_DELAY: '50', SGLANG_OTLP_EXPORTER_SCHEDULE_DELAY_MILLIS: '50' };

if (!HAVE_CHROMIUM && process.env.CI === 'true') {
  test('chromium is installed (CI)', () => {
    assert.fail(`${CHROMIUM} is absent: scripts/install-deps.sh installs Debian's chromium`);
  });
}

describe('the web UI in a browser', { skip: HAVE_CHROMIUM ? false : `${CHROMIUM} is absent (scripts/install-deps.sh installs it)` }, () => {
  let browser;
  let dir;
  let vllm;  // {agent, sim}
  let sgl;  // {agent, sim, dagent, dsim}
  const pageErrors = [];

  before(async () => {
    fs.mkdirSync(ARTIFACTS, { recursive: true });
    dir = tempDir('infertel-ui-').dir;
    const { chromium } = await import('playwright-core');
    browser = await chromium.launch({ executablePath: CHROMIUM, headless: true, args: ['--no-sandbox'] });
    vllm = await startVllmPair(path.join(dir, 'store'));
    await vllmTraffic(vllm.agent);
    sgl = await startSglPd(path.join(dir, 'sgl-store'));
    await sglTraffic(sgl);
  });

  after(async () => {
    await browser?.close();
    await stopAll(vllm?.agent, vllm?.sim, sgl?.agent, sgl?.sim, sgl?.dagent, sgl?.dsim);
  });

  /** A fresh page that records script errors and dialogs (none is expected). */
  async function open(url) {
    const page = await browser.newPage({ viewport: { width: 1400, height: 900 } });
    page.on('pageerror', (e) => pageErrors.push(`${url}: ${e.message}`));
    page.on('dialog', (d) => {
      pageErrors.push(`${url}: dialog ${d.message()}`);
      d.dismiss();
    });
    const response = await page.goto(url);
    return { page, response };
  }
  const shot = (page, name) => page.screenshot({ path: path.join(ARTIFACTS, `${name}.png`), fullPage: true });

  test('the overview: a chart per metric family, live, with data points', async () => {
    const { page, response } = await open(`${vllm.agent.adminUrl}/ui/`);
    assert.equal(response.status(), 200);
    assert.equal(response.headers()['content-security-policy'], CSP);
    // The page asks again every 5 s; the traffic sent before has requests per second.
    await page.waitForSelector('section[data-metric="requests_per_second"] circle.pt', { timeout: 15000 });
    assert.equal(await page.locator('section.chart').count(), 10);
    assert.ok(await page.locator('section[data-metric="ttft_p50_seconds"] circle.pt').count() > 0);
    // The engine's state, from its scraped metrics: on the page once a step had two scrapes.
    for (const m of ['kv_cache_usage_ratio', 'requests_running'])
      await page.waitForSelector(`section[data-metric="${m}"] circle.pt`, { timeout: 30000 });
    assert.match(await page.locator('#status').textContent(), /live/);
    await shot(page, 'overview');
    await page.close();
  });

  test('search: the form is bound to the address; duration bars to scale; a trace opens', async () => {
    const { page } = await open(`${vllm.agent.adminUrl}/ui/traces?tenant=acme`);
    await page.waitForSelector('table.traces tbody tr');
    const api = (await get(`${vllm.agent.adminUrl}/api/v1/traces?tenant=acme&limit=100`)).json.traces;
    assert.equal(await page.locator('table.traces tbody tr').count(), api.length);
    assert.equal(await page.inputValue('#f-tenant'), 'acme');
    // Bars: the longest fills its lane; each other is its share of it.
    const longest = Math.max(...api.map((t) => t.duration_ms));
    const bars = await page.$$eval('table.traces tbody tr', (rows) => rows.map((r) => ({
      id: r.getAttribute('data-span'),
      share: r.querySelector('.bar').getBoundingClientRect().width / r.querySelector('.bar-lane').getBoundingClientRect().width,
    })));
    for (const b of bars) {
      const t = api.find((x) => x.trace_id === b.id);
      assert.ok(Math.abs(b.share - Math.max(0.005, t.duration_ms / longest)) < 0.02, `${b.id}: bar ${b.share} for ${t.duration_ms} of ${longest} ms`);
    }
    // Latency causes are read for the slowest rows: every cell ends filled (a cause or –).
    await page.waitForFunction(() => [...document.querySelectorAll('td.cause')].slice(0, 3).every((c) => c.textContent !== ''));
    await page.fill('#f-tenant', '');
    await page.fill('#f-q', MARK);
    await Promise.all([page.waitForURL(/\/ui\/traces\?q=/), page.click('form.search button[type=submit]')]);
    assert.equal(new URL(page.url()).search, `?q=${MARK}`, 'only what was asked is in the address');
    await page.waitForSelector('table.traces tbody tr');
    assert.equal(await page.locator('table.traces tbody tr').count(), 1);
    await shot(page, 'traces');
    await Promise.all([page.waitForURL(/\/ui\/trace\/[0-9a-f]{32}$/), page.click('a.trace-link')]);
    await page.waitForSelector('.waterfall .row[data-span]');
    assert.match(await page.locator('aside.panel').textContent(), new RegExp(MARK), 'the captured prompt in the side panel');
    await page.close();
  });

  test('the waterfall: the entry span, the engine request, its phases in order and to scale, events', async () => {
    const trace = await traceWithPhases(vllm.agent.adminUrl);
    const { page } = await open(`${vllm.agent.adminUrl}/ui/trace/${trace.trace_id}`);
    await page.waitForSelector('body[data-rendered-ms]');
    const rows = await page.$$eval('.waterfall .row[data-span]', (els) => els.map((r) => {
      const lane = r.querySelector('.lane').getBoundingClientRect();
      const bar = r.querySelector('.lane .bar').getBoundingClientRect();
      return { id: r.getAttribute('data-span'), name: r.getAttribute('data-name'), phase: r.getAttribute('data-phase'), left: (bar.left - lane.left) / lane.width, width: bar.width / lane.width, events: r.querySelectorAll('.event').length };
    }));
    assert.equal(rows.length, trace.spans.length, 'a row per span');
    const t0 = Math.min(...trace.spans.map((s) => Number(BigInt(s.start_time_unix_nano) / 1000n)));
    const t1 = Math.max(...trace.spans.map((s) => Number(BigInt(s.end_time_unix_nano) / 1000n)));
    const phaseRows = PHASES.map((n) => rows.find((r) => r.name === n));
    for (const [i, r] of phaseRows.entries()) {
      assert.ok(r, `a row for ${PHASES[i]}: ${rows.map((x) => x.name)}`);
      const sp = trace.spans.find((s) => s.span_id === r.id);
      const start = (Number(BigInt(sp.start_time_unix_nano) / 1000n) - t0) / (t1 - t0);
      const width = (Number(BigInt(sp.end_time_unix_nano) - BigInt(sp.start_time_unix_nano)) / 1000) / (t1 - t0);
      assert.ok(Math.abs(r.left - start) < 0.01, `${sp.name} starts at ${r.left}, expected ${start}`);
      assert.ok(Math.abs(r.width - width) < Math.max(0.01, width * 0.03), `${sp.name} is ${r.width} wide, expected ${width}`);
    }
    // In the tree's order (children by start) and on the time axis: wait, prefill, decode.
    const order = phaseRows.map((r) => rows.indexOf(r));
    assert.deepEqual([...order].sort((a, b) => a - b), order, 'phase rows in order');
    assert.ok(phaseRows[0].left <= phaseRows[1].left && phaseRows[1].left <= phaseRows[2].left);
    assert.equal(new Set(phaseRows.map((r) => r.phase)).size, 3, 'each phase its own colour');
    assert.equal(rows[0].phase, 'phase-entry');
    assert.ok(rows.some((r) => r.name === 'llm_request' && r.phase === 'phase-engine'));
    // Selecting a span shows every attribute of it.
    const engine = trace.spans.find((s) => s.name === 'llm_request');
    await page.click(`.waterfall .row[data-span="${engine.span_id}"]`);
    const panel = await page.locator('aside.panel').textContent();
    for (const k of Object.keys(engine.attributes)) assert.ok(panel.includes(k), `the panel lacks ${k}`);
    if (trace.spans.some((s) => (s.events ?? []).length)) assert.ok(rows.some((r) => r.events > 0), 'events drawn as marks');
    await shot(page, 'trace');
    await page.close();
  });

  test('a prompt holding HTML and script is shown as text; nothing runs', async () => {
    const [t] = (await get(`${vllm.agent.adminUrl}/api/v1/traces?q=${XSS_MARK}`)).json.traces;
    assert.ok(t, 'the hostile prompt\'s trace');
    for (const url of [`/ui/traces?q=${XSS_MARK}`, `/ui/trace/${t.trace_id}`, `/ui/traces?q=${encodeURIComponent('<img src=x onerror=alert(1)>')}`]) {
      const { page } = await open(`${vllm.agent.adminUrl}${url}`);
      await page.waitForSelector('body[data-rendered-ms], p.error');
      assert.equal(await page.evaluate(() => window.__xss), undefined, url);
      assert.equal(await page.locator('main img, main script').count(), 0, url);
      if (url.includes('/ui/trace/')) {
        const content = await page.locator('aside.panel pre.content').allTextContents();
        assert.ok(content.some((c) => c.includes('<img src=x onerror=\\"window.__xss=1\\">') || c.includes('<img src=x onerror="window.__xss=1">')), content.join('\n'));
        assert.ok(content.some((c) => c.includes('<script>window.__xss=2</script>')), content.join('\n'));
        await shot(page, 'trace-hostile-prompt');
      }
      await page.close();
    }
  });

  test('the Content-Security-Policy is on every answer and blocks an inline script', async () => {
    for (const p of ['/ui', '/ui/', '/ui/traces', '/ui/config', '/ui/assets/app.js', '/ui/assets/style.css', '/ui/nothing']) {
      const r = await fetch(`${vllm.agent.adminUrl}${p}`, { redirect: 'manual' });
      assert.equal(r.headers.get('content-security-policy'), CSP, p);
      assert.equal(r.headers.get('x-content-type-options'), 'nosniff', p);
      assert.equal(r.headers.get('referrer-policy'), 'no-referrer', p);
    }
    const { page } = await open(`${vllm.agent.adminUrl}/ui/traces`);
    await page.waitForSelector('body[data-rendered-ms]');
    const violations = [];
    page.on('console', (m) => { if (/Content Security Policy/i.test(m.text())) violations.push(m.text()); });
    await page.addScriptTag({ content: 'window.__inline = 1;' }).catch(() => {});
    assert.equal(await page.evaluate(() => window.__inline), undefined, 'the inline script ran');
    await pollUntil(() => violations.length > 0, { timeoutMs: 2000 });
    assert.ok(violations.length > 0, 'chromium reported the blocked script');
    await page.close();
  });

  test('SGLang\'s native tree renders; the PD link leads to the other node\'s trace', async () => {
    const { linked, from } = await sglLinkedTraces(sgl.agent.adminUrl);
    const { page } = await open(`${sgl.agent.adminUrl}/ui/trace/${from.trace_id}`);
    await page.waitForSelector('body[data-rendered-ms]');
    const rows = await page.$$eval('.waterfall .row[data-span]', (els) => els.map((r) => ({
      name: r.getAttribute('data-name'), phase: r.getAttribute('data-phase'), indent: parseFloat(r.querySelector('.label').style.paddingLeft),
    })));
    const req = rows.find((r) => / Req /.test(r.name));
    assert.ok(req && req.phase === 'phase-engine', rows.map((r) => r.name).join(', '));
    const sched = rows.find((r) => /Scheduler/.test(r.name));
    assert.ok(sched && sched.indent > req.indent, 'the scheduler thread span under the request span');
    assert.ok(rows.some((r) => /^(prefill|decode)_forward$/.test(r.name) && r.indent > sched.indent), 'stage spans under the thread span');
    await shot(page, 'trace-sglang-pd');
    await page.click(`.waterfall .row[data-span="${linked.span.span_id}"]`);
    await Promise.all([page.waitForURL(new RegExp(`/ui/trace/${linked.to}$`)), page.click('aside.panel a.span-link')]);
    await page.waitForSelector('body[data-rendered-ms]');
    assert.ok(await page.locator('.waterfall .row[data-span]').count() > 0);
    assert.ok((await page.locator('.waterfall').textContent()).includes(' Req '));
    await page.close();
  });

  test('a switch edited on the config page takes effect', async () => {
    const { page } = await open(`${vllm.agent.adminUrl}/ui/config`);
    const row = page.locator(`tr[data-key="${CAPTURE}"]`);
    await row.waitFor();
    const before = (await get(`${vllm.agent.adminUrl}/api/config`)).json.keys.find((k) => k.key === CAPTURE);
    assert.equal(before.value, true);
    await row.locator('select').selectOption('false');
    await row.locator('button.set').click();
    await row.locator('.msg', { hasText: 'applied' }).waitFor();
    let now = (await get(`${vllm.agent.adminUrl}/api/config`)).json.keys.find((k) => k.key === CAPTURE);
    assert.deepEqual([now.value, now.source, now.layer], [false, 'console', 'api']);
    assert.equal(await row.locator('td.value').textContent(), 'false');
    await shot(page, 'config');
    await row.locator('button.reset').click();
    await row.locator('td.value', { hasText: 'true' }).waitFor();
    now = (await get(`${vllm.agent.adminUrl}/api/config`)).json.keys.find((k) => k.key === CAPTURE);
    assert.equal(now.value, true);
    await page.close();
  });

  test('`infertel ui` over the store after the agent stopped: the token asked once, pages, a trace, no agent', async () => {
    const traces = (await get(`${vllm.agent.adminUrl}/api/v1/traces?limit=5`)).json.traces;
    await stopAll(vllm.agent, vllm.sim);
    const ui = await startInfertel(['ui', '--store', path.join(dir, 'store'), '--listen', '127.0.0.1:0', '--token', TOKEN], {
      name: 'ui',
      waitFor: { url: /^infertel ui: serving .* on (http:\/\/[0-9.]+:[0-9]+)\/ui\/$/ },
    });
    try {
      const base = ui.urls.url;
      const bare = await fetch(`${base}/ui`, { redirect: 'manual' });
      assert.deepEqual([bare.status, bare.headers.get('location')], [301, '/ui/']);
      // The pages need no token; their API does: the page asks for it once per tab.
      const { page } = await open(`${base}/ui/traces`);
      await page.waitForSelector('form.token-form');
      await page.fill('form.token-form input', TOKEN);
      await page.click('form.token-form button');
      await page.waitForSelector('table.traces tbody tr');
      assert.equal(await page.evaluate(() => sessionStorage.getItem('infertel.admin-token')), TOKEN);
      // The store's series: requests per second from the trace index, once its step is over.
      const series = await pollUntil(async () => {
        const r = await get(`${base}/api/v1/metrics?since=15m`, { authorization: `Bearer ${TOKEN}` });
        return r.json?.series?.some((x) => x.metric === 'requests_per_second' && x.values.some((v) => v !== null));
      }, { timeoutMs: 15000, intervalMs: 500 });
      assert.ok(series, 'the store gives requests per second');
      await page.goto(`${base}/ui/`);
      await page.waitForSelector('section[data-metric="requests_per_second"] circle.pt');
      assert.match(await page.locator('#status').textContent(), /from the store/);
      await shot(page, 'ui-mode-overview');
      await page.goto(`${base}/ui/traces`);
      await page.waitForSelector('table.traces tbody tr');
      assert.ok(await page.locator('table.traces tbody tr').count() >= traces.length);
      await Promise.all([page.waitForURL(/\/ui\/trace\//), page.click('a.trace-link')]);
      await page.waitForSelector('.waterfall .row[data-span]');
      await shot(page, 'ui-mode-trace');
      await page.goto(`${base}/ui/config`);
      await page.waitForSelector('p.no-agent');
      assert.match(await page.locator('p.no-agent').textContent(), /No agent is running/);
      await page.close();
    } finally {
      await stopAll(ui);
    }
  });

  test('no page raised a script error', () => {
    assert.deepEqual(pageErrors, []);
  });
});

/** An agent with a store in front of a simulator whose engine spans go to the agent. */
async function startVllmPair(store) {
  const port = await closedPort();
  const agent = await startAgent({
    upstream: `http://127.0.0.1:${port}`,
    store,
    env: { INFERTEL_TENANT_FROM: 'header:x-tenant-id', OTEL_INSTRUMENTATION_VLLM_TRACING_LEVEL: '2' },
  });
  const sim = await startSim({ model: MODEL, seed: 5, listen: `127.0.0.1:${port}`, extra: ['--otlp-traces-endpoint', `grpc://${agent.receiverGrpc}`], env: SIM_ENV });
  return { agent, sim };
}

async function vllmTraffic(agent) {
  const prompts = ['Name three prime numbers.', `Tell me about the ${MARK}.`, XSS_PROMPT, 'Count to five.', 'Say hello.', 'Why is the sky blue?'];
  for (const [i, content] of prompts.entries()) {
    const client = openaiClient(agent.url, { defaultHeaders: { 'x-tenant-id': i % 2 ? 'beta' : 'acme' } });
    await collectStream(await client.chat.completions.create({ model: MODEL, messages: [{ role: 'user', content }], max_tokens: 8 + 4 * i, stream: true }));
  }
  await pollUntil(async () => (await get(`${agent.adminUrl}/api/v1/traces?limit=500`)).json?.traces?.length >= prompts.length, { timeoutMs: 10000 });
}

/** The newest trace whose engine spans have reached the store with their phases. */
async function traceWithPhases(admin) {
  const found = await pollUntil(async () => {
    for (const t of (await get(`${admin}/api/v1/traces?status=ok&limit=20`)).json.traces) {
      const doc = (await get(`${admin}/api/v1/traces/${t.trace_id}`)).json;
      if (PHASES.every((n) => doc.spans.some((s) => s.name === n))) return doc;
    }
    return null;
  }, { timeoutMs: 15000, intervalMs: 300 });
  assert.ok(found, 'no trace with the engine\'s phases in the store');
  return found;
}

/**
 * SGLang-like nodes under PD disaggregation: the prefill node behind an agent with a store, the
 * decode node behind an agent without one; both send their native spans to the first agent,
 * which links the two requests' traces (docs/telemetry-reference.md, "PD: prefill and decode
 * linked").
 */
async function startSglPd(store) {
  const [pport, dport] = [await closedPort(), await closedPort()];
  const agent = await startAgent({ engine: 'sglang', upstream: `http://127.0.0.1:${pport}`, store });
  const sim = await startSim({ engine: 'sglang', model: SGL_MODEL, seed: 7, speed: 2, listen: `127.0.0.1:${pport}`, extra: ['--enable-trace', '--otlp-traces-endpoint', agent.receiverGrpc, '--disaggregation-mode', 'prefill'], env: SIM_ENV });
  const dagent = await startAgent({ engine: 'sglang', upstream: `http://127.0.0.1:${dport}` });
  const dsim = await startSim({ engine: 'sglang', model: SGL_MODEL, seed: 7, speed: 2, listen: `127.0.0.1:${dport}`, extra: ['--enable-trace', '--otlp-traces-endpoint', agent.receiverGrpc, '--disaggregation-mode', 'decode'], env: SIM_ENV });
  return { agent, sim, dagent, dsim };
}

async function sglTraffic({ agent, dagent }) {
  const room = 5151000 + Math.floor(Math.random() * 1000);
  const body = { model: SGL_MODEL, messages: [{ role: 'user', content: 'Name three prime numbers.' }], max_tokens: 12, bootstrap_room: room, bootstrap_host: '127.0.0.1' };
  // As SGLang's router does: the same request to both nodes.
  await Promise.all([openaiClient(agent.url).chat.completions.create(body), openaiClient(dagent.url).chat.completions.create(body)]);
}

/** A trace of the PD pair whose request span links to the other node's trace. */
async function sglLinkedTraces(admin) {
  const found = await pollUntil(async () => {
    for (const t of (await get(`${admin}/api/v1/traces?limit=50`)).json?.traces ?? []) {
      const doc = (await get(`${admin}/api/v1/traces/${t.trace_id}`)).json;
      const span = doc.spans.find((s) => (s.links ?? []).some((l) => l.trace_id !== t.trace_id));
      if (span) return { from: t, linked: { span, to: span.links.find((l) => l.trace_id !== t.trace_id).trace_id } };
    }
    return null;
  }, { timeoutMs: 15000, intervalMs: 300 });
  assert.ok(found, 'no PD link in the store');
  return found;
}
