// End-to-end: `infertel demo --stay` keeps the agent up after its summary, with the web UI and
// its API on the address it prints (the newcomer's way in), until SIGINT.
import assert from 'node:assert/strict';
import path from 'node:path';
import { test } from 'node:test';

import { startInfertel, tempDir } from './lib/proc.mjs';
import { get } from './lib/util.mjs';

test('demo --stay: the summary, then the web UI and its API until SIGINT', async () => {
  const dir = tempDir('infertel-demo-ui-').dir;
  const demo = await startInfertel(['demo', '--duration', '3', '--clients', '2', '--store', path.join(dir, 'store'), '--stay'], {
    name: 'demo',
    timeoutMs: 60000,
    waitFor: { ui: /^web UI: (http:\/\/127\.0\.0\.1:[0-9]+\/ui\/) \(the agent stays up/ },
  });
  try {
    assert.match(demo.stdout, /== infertel demo summary/);
    const base = demo.urls.ui.replace(/\/ui\/$/, '');
    const page = await get(demo.urls.ui);
    assert.equal(page.status, 200);
    assert.match(page.text, /<script src=/);
    const traces = JSON.parse((await get(`${base}/api/v1/traces?limit=5`)).text).traces;
    assert.equal(traces.length, 5);
    const one = JSON.parse((await get(`${base}/api/v1/traces/${traces[0].trace_id}`)).text);
    assert.ok(one.spans.length >= 1);
    const metrics = JSON.parse((await get(`${base}/api/v1/metrics`)).text);
    assert.equal(metrics.source, 'agent');
    assert.ok(metrics.series.some((s) => s.metric === 'requests_per_second' && s.values.some((v) => v > 0)), 'the traffic is in the overview');
    const config = await get(`${base}/api/v1/config`);
    assert.equal(config.status, 200);
  } finally {
    demo.child.kill('SIGINT');
    const timer = setTimeout(() => demo.child.kill('SIGKILL'), 15000);
    const exit = await demo.exited;
    clearTimeout(timer);
    assert.equal(exit.code, 0, demo.describe());
  }
});
