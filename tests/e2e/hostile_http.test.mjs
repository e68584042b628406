// End-to-end: idle and slow senders against the OTLP/HTTP receiver, the admin address and the
// gateway, and bodies that inflate or do not say how they are encoded (docs/limits.md). With 512 idle and
// 256 slow (1 byte/s) connections open to each port, normal requests are still answered
// within 2 s (the connection reading its request longest is closed to make room), the refusals
// and timeouts are counted, and the agent's memory stays bounded. A gzip bomb to the receiver
// stops at the 16 MiB limit while inflating; the admin address answers 415 to a body with a
// Content-Encoding.
import assert from 'node:assert/strict';
import fs from 'node:fs';
import http from 'node:http';
import net from 'node:net';
import zlib from 'node:zlib';
import { after, before, describe, test } from 'node:test';

import { pollUntil, requireBin, rssBoundMiB, rssSettles, startAgent, startSim, stopAll, memoryOf } from './lib/proc.mjs';
import { collectStream, get, metricSum, openaiClient, parsePrometheus } from './lib/util.mjs';

const MIB = 1024 * 1024;

async function samples(agent) {
  const r = await get(`${agent.adminUrl}/metrics`);
  assert.equal(r.status, 200);
  return parsePrometheus(r.text);
}

/** One request on a connection of its own: resolves {status, body, ms}; rejects on error. */
function request(url, { method = 'GET', headers = {}, body } = {}) {
  const t0 = Date.now();
  return new Promise((resolve, reject) => {
    const req = http.request(url, { method, headers, agent: false }, (res) => {
      const chunks = [];
      res.on('data', (d) => chunks.push(d));
      res.on('end', () => resolve({ status: res.statusCode, body: Buffer.concat(chunks).toString(), ms: Date.now() - t0 }));
    });
    req.setTimeout(5000, () => req.destroy(new Error('no answer within 5 s')));
    req.on('error', reject);
    req.end(body);
  });
}

/**
 * Opens `idle` connections that send nothing and `slow` ones that send a request one byte per
 * second, to `hostPort`. Returns {sockets, stop()}.
 */
async function flood(hostPort, { idle, slow }) {
  const [host, port] = hostPort.split(':');
  const sockets = [];
  const open = () =>
    new Promise((resolve) => {
      const s = net.connect({ host, port: Number(port) }, () => resolve(s));
      s.on('error', () => resolve(s));
      s.on('data', () => {});
      sockets.push(s);
    });
  for (let i = 0; i < idle; i++) await open();
  const slowOnes = [];
  for (let i = 0; i < slow; i++) slowOnes.push(await open());
  const text = 'POST /v1/traces HTTP/1.1\r\nHost: h\r\nContent-Type: application/json\r\nContent-Length: 2\r\n\r\n{}';
  let at = 0;
  const timer = setInterval(() => {
    for (const s of slowOnes) if (!s.destroyed) s.write(text[at % text.length]);
    at++;
  }, 1000);
  return {
    sockets,
    stop() {
      clearInterval(timer);
      for (const s of sockets) s.destroy();
    },
  };
}

describe('slow and idle senders on the OTLP/HTTP receiver and the admin address', () => {
  let sim;
  let agent;

  before(async () => {
    requireBin();
    sim = await startSim({ model: 'e2e-hostile-http/model', seed: 9, speed: 50 });
    agent = await startAgent({
      upstream: sim.url,
      extra: ['--http-header-timeout-ms', '3000', '--http-idle-timeout-ms', '4000', '--http-body-timeout-ms', '3000'],
    });
  });

  after(async () => {
    await stopAll(agent, sim);
  });

  test('512 idle and 256 slow connections on each port: normal requests answered within 2 s', async () => {
    const receiver = new URL(agent.receiverHttp).host;
    const admin = new URL(agent.adminUrl).host;
    const before = await samples(agent);
    const memBefore = memoryOf(agent.child.pid);
    const floods = [await flood(receiver, { idle: 512, slow: 256 }), await flood(admin, { idle: 512, slow: 256 })];
    try {
      for (let i = 0; i < 3; i++) {
        const exported = await request(`${agent.receiverHttp}/v1/traces`, {
          method: 'POST',
          headers: { 'Content-Type': 'application/json' },
          body: JSON.stringify({ resourceSpans: [] }),
        });
        assert.equal(exported.status, 200, exported.body);
        assert.ok(exported.ms < 2000, `OTLP/HTTP export answered in ${exported.ms} ms`);
        const health = await request(`${agent.adminUrl}/healthz`);
        assert.equal(health.status, 200, health.body);
        assert.ok(health.ms < 2000, `admin GET answered in ${health.ms} ms`);
      }
      // Slow senders pass the header timeout (3 s here); the idle ones, opened first, were
      // closed to make room for them.
      const moved = await pollUntil(
        async () => {
          const now = await samples(agent);
          const delta = (family, reason) =>
            metricSum(now, family, (l) => l.reason === reason) - metricSum(before, family, (l) => l.reason === reason);
          const d = {};
          for (const family of ['infertel_receiver_http_refused_connections_total', 'infertel_admin_refused_connections_total'])
            for (const reason of ['evicted', 'header_timeout']) d[`${family}{${reason}}`] = delta(family, reason);
          return Object.values(d).every((v) => v > 0) ? d : null;
        },
        { timeoutMs: 10000, intervalMs: 250 },
      );
      assert.ok(moved, 'evictions and header timeouts counted on both ports');
      const mem = memoryOf(agent.child.pid);
      assert.ok(
        mem.peak - memBefore.peak < rssBoundMiB(32) * MIB,
        `peak RSS grew by ${((mem.peak - memBefore.peak) / MIB).toFixed(1)} MiB under 1,536 connections`,
      );
    } finally {
      for (const f of floods) f.stop();
    }
  });

  test('an idle connection and a stalled body are closed at their timeouts, counted', async () => {
    // The previous test's floods first gone: while they hold the connection caps, a new
    // connection may be the one evicted (counted as such, not as a timeout) on a loaded machine.
    await pollUntil(async () => {
      const s = await samples(agent);
      return metricSum(s, 'infertel_receiver_http_open_connections') < 8 && metricSum(s, 'infertel_admin_open_connections') < 8;
    }, { timeoutMs: 20000, intervalMs: 200 });
    const before = await samples(agent);
    const ports = [new URL(agent.receiverHttp).host, new URL(agent.adminUrl).host];
    const closed = [];
    for (const hostPort of ports) {
      const [host, port] = hostPort.split(':');
      for (const first of ['', 'POST /v1/traces HTTP/1.1\r\nHost: h\r\nContent-Type: application/json\r\nContent-Length: 10\r\n\r\n{']) {
        const s = net.connect({ host, port: Number(port) }, () => first && s.write(first));
        s.on('data', () => {});
        s.on('error', () => {});
        closed.push(new Promise((r) => s.on('close', r)));
      }
    }
    const t0 = Date.now();
    await Promise.race([Promise.all(closed), new Promise((r) => setTimeout(r, 10000))]);
    assert.ok(Date.now() - t0 < 10000, 'every connection closed by the server within 10 s');
    const now = await samples(agent);
    for (const family of ['infertel_receiver_http_refused_connections_total', 'infertel_admin_refused_connections_total'])
      for (const reason of ['idle_timeout', 'body_timeout']) {
        const delta = metricSum(now, family, (l) => l.reason === reason) - metricSum(before, family, (l) => l.reason === reason);
        // At least: the test's own keep-alive connections to /metrics idle out as well.
        assert.ok(delta >= 1, `${family}{reason="${reason}"}: ${delta}`);
      }
  });

  test('a gzip bomb to the receiver stops at its 16 MiB limit while inflating', async () => {
    // 512 MiB of zeros, about 500 KB once compressed.
    const gzip = zlib.createGzip({ level: 9 });
    const parts = [];
    gzip.on('data', (d) => parts.push(d));
    const done = new Promise((r) => gzip.on('end', r));
    const zeros = Buffer.alloc(MIB);
    for (let i = 0; i < 512; i++) if (!gzip.write(zeros)) await new Promise((r) => gzip.once('drain', r));
    gzip.end();
    await done;
    const bomb = Buffer.concat(parts);
    const memBefore = memoryOf(agent.child.pid);
    const r = await request(`${agent.receiverHttp}/v1/traces`, {
      method: 'POST',
      headers: { 'Content-Type': 'application/x-protobuf', 'Content-Encoding': 'gzip', 'Content-Length': bomb.length },
      body: bomb,
    });
    assert.equal(r.status, 413, r.body);
    const grew = memoryOf(agent.child.pid).peak - memBefore.peak;
    assert.ok(grew < rssBoundMiB(24) * MIB, `peak RSS grew by ${(grew / MIB).toFixed(1)} MiB for a ${bomb.length}-byte bomb`);
    // And the inflated buffer is given back, not kept (jemalloc's background purge).
    const { rss, bound } = await rssSettles(agent.child.pid, memBefore.rss, { slackMiB: 4, timeoutMs: 30000 });
    assert.ok(rss <= bound, `RSS ${(rss / MIB).toFixed(1)} MiB after the bomb, ${(memBefore.rss / MIB).toFixed(1)} MiB before`);
  });

  test('the admin address answers 415 to a body with a Content-Encoding, counted', async () => {
    const before = await samples(agent);
    const body = zlib.gzipSync(Buffer.from('{"value":1}'));
    const r = await request(`${agent.adminUrl}/api/config/otel.instrumentation.vllm.tracing.level`, {
      method: 'PUT',
      headers: { 'Content-Type': 'application/json', 'Content-Encoding': 'gzip', 'Content-Length': body.length },
      body,
    });
    assert.equal(r.status, 415, r.body);
    const family = 'infertel_admin_refused_requests_total';
    const reason = (l) => l.reason === 'unsupported_content_encoding';
    assert.equal(metricSum(await samples(agent), family, reason) - metricSum(before, family, reason), 1);
  });
});

describe('idle and slow clients on the gateway port', () => {
  let sim;
  let agent;
  const CAP = 128;

  before(async () => {
    requireBin();
    sim = await startSim({ model: 'e2e-hostile-gateway/model', seed: 10, speed: 0.1 }); // steps of 20 ms and more
    agent = await startAgent({ upstream: sim.url, extra: ['--gateway-max-connections', String(CAP)] });
  });

  after(async () => {
    await stopAll(agent, sim);
  });

  test('at the cap the longest-reading connection makes room; streams being answered are never closed', async () => {
    const gateway = new URL(agent.url).host;
    const client = openaiClient(agent.url);
    const before = await samples(agent);
    const memBefore = memoryOf(agent.child.pid);
    // Long streams, being answered while the flood comes: none may be evicted for it.
    const streams = Array.from({ length: 8 }, () =>
      client.chat.completions
        .create({ model: 'e2e-hostile-gateway/model', messages: [{ role: 'user', content: 'tell a long story' }], max_tokens: 150, ignore_eos: true, stream: true })
        .then(collectStream),
    );
    const f = await flood(gateway, { idle: 4 * CAP, slow: CAP });
    const floodedAt = Date.now();
    try {
      for (let i = 0; i < 3; i++) {
        const t0 = Date.now();
        const r = await client.chat.completions.create({ model: 'e2e-hostile-gateway/model', messages: [{ role: 'user', content: 'hi' }], max_tokens: 4 });
        const ms = Date.now() - t0;
        assert.equal(r.choices.length, 1);
        assert.ok(ms < 2000, `a normal request answered in ${ms} ms with ${5 * CAP} hostile connections`);
        console.log(`gateway flood: a normal request answered in ${ms} ms`);
      }
      const ended = await Promise.all(streams);
      assert.ok(Date.now() - floodedAt > 1000, 'the streams outlasted the flood');
      for (const chunks of ended) {
        const finish = chunks.map((c) => c.choices?.[0]?.finish_reason).filter(Boolean);
        assert.deepEqual(finish, ['length'], 'each stream ran to its end');
      }
      const now = await samples(agent);
      const delta = (reason) =>
        metricSum(now, 'infertel_gateway_refused_connections_total', (l) => l.reason === reason) -
        metricSum(before, 'infertel_gateway_refused_connections_total', (l) => l.reason === reason);
      assert.ok(delta('evicted') >= 3 * CAP, `idle and slow connections evicted: ${delta('evicted')}`);
      const open = metricSum(now, 'infertel_gateway_open_connections');
      assert.ok(open <= CAP, `open connections ${open}, cap ${CAP}`);
      const grew = memoryOf(agent.child.pid).peak - memBefore.peak;
      console.log(`gateway flood: ${delta('evicted')} evicted, ${open} open, peak RSS +${(grew / MIB).toFixed(1)} MiB`);
      assert.ok(grew < rssBoundMiB(32) * MIB, `peak RSS grew by ${(grew / MIB).toFixed(1)} MiB under ${5 * CAP} connections`);
    } finally {
      f.stop();
    }
  });

  test('when every connection is being answered, a new one is refused 503 and counted', async () => {
    const client = openaiClient(agent.url);
    const before = await samples(agent);
    const streams = Array.from({ length: CAP }, () =>
      client.chat.completions
        .create({ model: 'e2e-hostile-gateway/model', messages: [{ role: 'user', content: 'a story' }], max_tokens: 20, stream: true })
        .then(collectStream),
    );
    // Every stream's request read (counted as it goes to the engine): all CAP connections are
    // being answered, none reading.
    const requests = (m) => metricSum(m, 'infertel_gateway_requests_total');
    const busy = await pollUntil(async () => {
      const m = await samples(agent);
      return requests(m) - requests(before) >= CAP ? m : null;
    }, { timeoutMs: 10000, intervalMs: 100 });
    assert.ok(busy, `${CAP} streams in flight`);
    const r = await request(`${agent.url}/v1/models`);
    assert.equal(r.status, 503, r.body);
    await Promise.all(streams);
    const now = await samples(agent);
    const family = 'infertel_gateway_refused_connections_total';
    const limit = (l) => l.reason === 'connection_limit';
    assert.ok(metricSum(now, family, limit) - metricSum(before, family, limit) >= 1);
  });
});
