// End-to-end: hostile input to the console and the admin address, and hostile text in what the
// command line prints (docs/limits.md). A YAML alias bomb through --console-file, --console-url
// and `infertel config` is refused at once with the agent's peak memory unchanged and SIGTERM
// still stopping it; a console file that is a FIFO is refused without blocking; the admin
// address answers 413/414/431 to oversized requests, refuses two Authorization headers and
// quotes a bad value cut; the OTLP/HTTP receiver answers 415 to a type it does not read; and
// `infertel traces` prints control characters from a client's model name escaped.
import assert from 'node:assert/strict';
import { execFile, execFileSync } from 'node:child_process';
import fs from 'node:fs';
import http from 'node:http';
import net from 'node:net';
import path from 'node:path';
import { after, before, describe, test } from 'node:test';

import { pollUntil, requireBin, runInfertel, startAgent, startSim, stopAll, tempDir, memoryOf } from './lib/proc.mjs';
import { get, metricSum, openaiClient, parsePrometheus } from './lib/util.mjs';

const LEVEL = 'otel.instrumentation.vllm.tracing.level';
const MIB = 1024 * 1024;

/** 10^levels nodes once its aliases are expanded, in under a kilobyte for 9 levels. */
function aliasBomb(levels = 9) {
  let doc = 'l0: &l0 {k0: 1, k1: 1, k2: 1, k3: 1, k4: 1, k5: 1, k6: 1, k7: 1, k8: 1, k9: 1}\n';
  for (let i = 1; i < levels; i++) {
    const keys = Array.from({ length: 10 }, (_, k) => `k${k}: *l${i - 1}`).join(', ');
    doc += `l${i}: &l${i} {${keys}}\n`;
  }
  return doc;
}

/** Sends SIGTERM and resolves with the milliseconds until the process was gone. */
async function stopTimed(proc) {
  const t0 = Date.now();
  const exit = await proc.stop(10000);
  return { ms: Date.now() - t0, exit };
}

async function metrics(agent) {
  const r = await get(`${agent.adminUrl}/metrics`);
  assert.equal(r.status, 200);
  return parsePrometheus(r.text);
}

const refused = (samples, source, reason) =>
  metricSum(samples, 'infertel_console_refused_documents_total', (l) => l.source === source && l.reason === reason);

async function fileStatus(agent, layer = 'file') {
  return (await get(`${agent.adminUrl}/api/config/status`)).json[layer];
}

describe('console documents: alias bomb and FIFO', () => {
  let sim;
  let tmp;
  const agents = [];

  before(async () => {
    tmp = tempDir();
    sim = await startSim({ model: 'e2e-hostile/model', seed: 3, speed: 20 });
  });

  after(async () => {
    await stopAll(...agents, sim);
    tmp?.cleanup();
  });

  async function agentWithFile(name) {
    const file = path.join(tmp.dir, name);
    fs.writeFileSync(file, `${LEVEL}: 1\n`);
    const agent = await startAgent({ upstream: sim.url, extra: ['--console-file', file] });
    agents.push(agent);
    return { agent, file };
  }

  // It used to grow the agent by about 1 GB/s, leave the status "ok" and ignore SIGTERM.
  test('an alias bomb written to the watched file is refused; peak memory stays; SIGTERM stops it', async () => {
    const { agent, file } = await agentWithFile('bomb.yaml');
    const pid = agent.child.pid;
    await pollUntil(async () => (await fileStatus(agent)).ok, { timeoutMs: 5000 });
    const before = memoryOf(pid);
    const bomb = aliasBomb(9);
    assert.ok(bomb.length < 1024, `bomb of ${bomb.length} bytes`);
    fs.writeFileSync(file, bomb);
    const status = await pollUntil(async () => {
      const s = await fileStatus(agent);
      return s.ok === false ? s : null;
    }, { timeoutMs: 5000 });
    assert.ok(status, `status never left ok\n${agent.describe()}`);
    assert.match(status.error, /^refused: more than \d+ nodes with aliases expanded/);
    const afterBomb = memoryOf(pid);
    assert.ok(afterBomb.peak - before.peak < 4 * MIB,
      `peak RSS grew by ${((afterBomb.peak - before.peak) / MIB).toFixed(1)} MiB (from ${(before.peak / MIB).toFixed(1)} MiB)`);
    // The last good value stays, and the refusal is counted once.
    const level = (await get(`${agent.adminUrl}/api/config/${LEVEL}`)).json;
    assert.equal(level.value, 1);
    assert.equal(refused(await metrics(agent), 'file', 'too_many_nodes'), 1);
    const { ms, exit } = await stopTimed(agent);
    assert.ok(ms < 5000, `SIGTERM took ${ms} ms`);
    assert.equal(exit.signal, null, `killed: ${JSON.stringify(exit)}`);
  });

  test('an alias bomb at start-up and through `infertel config` is refused at once', async () => {
    const file = path.join(tmp.dir, 'bomb-at-start.yaml');
    fs.writeFileSync(file, aliasBomb(9));
    const t0 = Date.now();
    const r = await runInfertel(['agent', '--upstream', sim.url, '--listen', '127.0.0.1:0', '--admin', '127.0.0.1:0',
      '--receiver-grpc', 'off', '--receiver-http', 'off', '--no-store', '--console-file', file], { timeoutMs: 10000 });
    assert.equal(r.code, 2, r.stdout + r.stderr);
    assert.match(r.stderr, /refused: more than \d+ nodes with aliases expanded/);
    const c = await runInfertel(['config', '--console-file', file], { timeoutMs: 10000 });
    assert.equal(c.code, 2, c.stdout + c.stderr);
    assert.match(c.stderr, /refused: more than \d+ nodes/);
    assert.ok(Date.now() - t0 < 8000);
  });

  // A FIFO used to block the watcher in open() forever, and SIGTERM with it.
  test('a console file that becomes a FIFO is refused without blocking; SIGTERM stops the agent', async () => {
    const { agent, file } = await agentWithFile('fifo.yaml');
    await pollUntil(async () => (await fileStatus(agent)).ok, { timeoutMs: 5000 });
    const fifo = path.join(tmp.dir, 'fifo.tmp');
    execFileSync('mkfifo', [fifo]);
    fs.renameSync(fifo, file);
    const status = await pollUntil(async () => {
      const s = await fileStatus(agent);
      return s.ok === false ? s : null;
    }, { timeoutMs: 5000 });
    assert.ok(status, `status never left ok\n${agent.describe()}`);
    assert.match(status.error, /^refused: not a regular file/);
    assert.equal(refused(await metrics(agent), 'file', 'not_regular_file'), 1);
    const { ms, exit } = await stopTimed(agent);
    assert.ok(ms < 5000, `SIGTERM took ${ms} ms`);
    assert.equal(exit.signal, null, `killed: ${JSON.stringify(exit)}`);
  });

  test('a FIFO as the console file at start-up is refused at once', async () => {
    const fifo = path.join(tmp.dir, 'start.fifo');
    execFileSync('mkfifo', [fifo]);
    const r = await runInfertel(['agent', '--upstream', sim.url, '--listen', '127.0.0.1:0', '--admin', '127.0.0.1:0',
      '--receiver-grpc', 'off', '--receiver-http', 'off', '--no-store', '--console-file', fifo], { timeoutMs: 10000 });
    assert.equal(r.code, 2, r.stdout + r.stderr);
    assert.match(r.stderr, /not a regular file/);
  });
});

describe('console URL serving an alias bomb', () => {
  let sim;
  let agent;
  let server;
  let doc = `{"${LEVEL}": 1}`;
  let version = 1;

  before(async () => {
    server = http.createServer((req, res) => {
      res.writeHead(200, { 'content-type': 'application/yaml', etag: `"v${version}"` });
      res.end(doc);
    });
    await new Promise((r) => server.listen(0, '127.0.0.1', r));
    sim = await startSim({ model: 'e2e-hostile/model', seed: 4, speed: 20 });
    agent = await startAgent({
      upstream: sim.url,
      extra: ['--console-url', `http://127.0.0.1:${server.address().port}/console`, '--console-url-interval-ms', '100'],
    });
  });

  after(async () => {
    await stopAll(agent, sim);
    server?.closeAllConnections?.();
    await new Promise((r) => (server ? server.close(r) : r()));
  });

  test('is refused and counted, with the peak memory unchanged', async () => {
    await pollUntil(async () => (await fileStatus(agent, 'url')).ok, { timeoutMs: 5000 });
    const before = memoryOf(agent.child.pid);
    doc = aliasBomb(9);
    version++;
    const status = await pollUntil(async () => {
      const s = await fileStatus(agent, 'url');
      return s.ok === false ? s : null;
    }, { timeoutMs: 5000 });
    assert.ok(status, `status never left ok\n${agent.describe()}`);
    assert.match(status.error, /^refused: more than \d+ nodes/);
    const grown = memoryOf(agent.child.pid).peak - before.peak;
    assert.ok(grown < 4 * MIB, `peak RSS grew by ${(grown / MIB).toFixed(1)} MiB`);
    assert.equal(refused(await metrics(agent), 'url', 'too_many_nodes'), 1);
  });
});

/** Sends raw bytes, resolves with what came back until the server closed (bounded). */
function rawExchange(port, chunks, { timeoutMs = 10000 } = {}) {
  return new Promise((resolve, reject) => {
    const sock = net.connect(port, '127.0.0.1');
    const got = [];
    const timer = setTimeout(() => {
      sock.destroy();
      reject(new Error(`no close within ${timeoutMs} ms; got: ${Buffer.concat(got).toString().slice(0, 300)}`));
    }, timeoutMs);
    sock.on('data', (d) => got.push(d));
    sock.on('error', () => {}); // a reset after the answer still leaves the answer in `got`
    sock.on('close', () => {
      clearTimeout(timer);
      resolve(Buffer.concat(got).toString('latin1'));
    });
    sock.on('connect', async () => {
      for (const c of chunks) {
        if (sock.destroyed) break;
        await new Promise((r) => sock.write(c, () => r()));
      }
    });
  });
}

const statusOf = (raw) => Number(/^HTTP\/1\.1 (\d{3})/.exec(raw)?.[1]);

describe('admin API edges', () => {
  let sim;
  let agent;
  let port;

  before(async () => {
    sim = await startSim({ model: 'e2e-hostile/model', seed: 5, speed: 20 });
    agent = await startAgent({ upstream: sim.url });
    port = Number(new URL(agent.adminUrl).port);
  });

  after(async () => {
    await stopAll(agent, sim);
  });

  const adminRefused = async (reason) =>
    metricSum(await metrics(agent), 'infertel_admin_refused_requests_total', (l) => l.reason === reason);

  // These were closed without an answer.
  test('a 5 MB PUT is answered 413', async () => {
    const body = Buffer.alloc(5 * MIB, 'x');
    const head = `PUT /api/config/${LEVEL} HTTP/1.1\r\nHost: a\r\nContent-Type: application/json\r\nContent-Length: ${body.length}\r\n\r\n`;
    const raw = await rawExchange(port, [head, body]);
    assert.equal(statusOf(raw), 413, raw.slice(0, 300));
    // And with node's client, which is still sending when the answer comes.
    const res = await new Promise((resolve, reject) => {
      const req = http.request({ port, host: '127.0.0.1', method: 'PUT', path: `/api/config/${LEVEL}`,
        headers: { 'content-type': 'application/json', 'content-length': body.length } }, resolve);
      req.on('error', reject);
      req.end(body);
    });
    assert.equal(res.statusCode, 413);
    res.resume();
    assert.equal(await adminRefused('body_too_large'), 2);
  });

  test('a 100 KB URL is answered 414 and 20 KB of header fields 431', async () => {
    const longUrl = `GET /api/config/${'k'.repeat(100 * 1024)} HTTP/1.1\r\nHost: a\r\n\r\n`;
    const raw = await rawExchange(port, [longUrl]);
    assert.equal(statusOf(raw), 414, raw.slice(0, 300));
    const bigHeader = `GET /api/config HTTP/1.1\r\nHost: a\r\nX-Big: ${'v'.repeat(20 * 1024)}\r\n\r\n`;
    const raw2 = await rawExchange(port, [bigHeader]);
    assert.equal(statusOf(raw2), 431, raw2.slice(0, 300));
    assert.equal(await adminRefused('target_too_long'), 1);
    assert.equal(await adminRefused('header_too_large'), 1);
  });

  // A 400 used to quote the whole value back.
  test('a bad value is quoted cut; a 500 KB one is refused before it is read', async () => {
    const put = (value) =>
      fetch(`${agent.adminUrl}/api/config/${LEVEL}`, {
        method: 'PUT',
        headers: { 'content-type': 'application/json' },
        body: JSON.stringify({ value }),
      });
    const r = await put('x'.repeat(60 * 1024));
    const text = await r.text();
    assert.equal(r.status, 400);
    assert.ok(text.length < 1024, `a 400 of ${text.length} bytes`);
    assert.match(JSON.parse(text).error.message, /x… \(61440 bytes\)/);
    const big = await put('x'.repeat(500 * 1024));
    const bigText = await big.text();
    assert.equal(big.status, 413);
    assert.ok(bigText.length < 1024, `a 413 of ${bigText.length} bytes`);
  });

  test('a huge number is said to be out of range', async () => {
    const r = await fetch(`${agent.adminUrl}/api/config/${LEVEL}`, {
      method: 'PUT',
      headers: { 'content-type': 'application/json' },
      body: '{"value": 99999999999999999999999999999}',
    });
    assert.equal(r.status, 400);
    assert.match((await r.json()).error.message, /out of range/);
  });

  // The first one used to win.
  test('two Authorization headers are refused', async () => {
    const raw = await rawExchange(port, [
      `PUT /api/config/${LEVEL} HTTP/1.1\r\nHost: a\r\nAuthorization: Bearer a\r\nAuthorization: Bearer b\r\n` +
        'Content-Type: application/json\r\nContent-Length: 11\r\nConnection: close\r\n\r\n{"value":0}',
    ]);
    assert.equal(statusOf(raw), 400, raw.slice(0, 300));
    assert.match(raw, /more than one Authorization header/);
    assert.equal(await adminRefused('duplicate_authorization'), 1);
  });

  test('the OTLP/HTTP receiver answers 415 to application/xml', async () => {
    const r = await fetch(`${agent.receiverHttp}/v1/traces`, {
      method: 'POST',
      headers: { 'content-type': 'application/xml' },
      body: '{"resourceSpans":[]}',
    });
    assert.equal(r.status, 415);
  });
});

describe('`infertel traces` escapes control characters', () => {
  let sim;
  let agent;
  let tmp;
  let db;

  before(async () => {
    tmp = tempDir();
    db = path.join(tmp.dir, 'spans.db');
    sim = await startSim({ model: 'e2e-hostile/model', seed: 6, speed: 20 });
    agent = await startAgent({ upstream: sim.url, store: db, env: { OTEL_SERVICE_NAME: 'e2e-hostile' } });
  });

  after(async () => {
    await stopAll(agent, sim);
    tmp?.cleanup();
  });

  // A client's model name that would retitle the terminal, ring it, and forge a line.
  test('a span whose name and model hold ESC, BEL, CR, LF and NUL is printed escaped, byte for byte', async () => {
    const model = 'm\x1b]0;owned\x07\r\nFORGED\x00z';
    const client = openaiClient(agent.url, { maxRetries: 0 });
    await client.chat.completions.create({ model, messages: [{ role: 'user', content: 'hi' }], max_tokens: 2 }).catch(() => {});
    const out = await pollUntil(async () => {
      const b = await new Promise((resolve) =>
        execFile(requireBin(), ['traces', '--store', db], { encoding: 'buffer' }, (err, stdout) => resolve(err ? null : stdout)));
      return b && b.includes('FORGED') ? b : null;
    }, { timeoutMs: 10000, intervalMs: 200 });
    assert.ok(out, `no trace with the model in ${db}\n${agent.describe()}`);
    const escaped = 'm\\x1b]0;owned\\x07\\r\\nFORGED\\x00z';
    const lines = out.toString('latin1').split('\n').filter((l) => l.includes('FORGED'));
    assert.equal(lines.length, 1, out.toString('latin1'));
    assert.match(lines[0], new RegExp(`^  chat ${escaped.replace(/[\\^$.*+?()[\]{}|]/g, '\\$&')}  \\d+\\.\\d{3} ms  model=${escaped.replace(/[\\^$.*+?()[\]{}|]/g, '\\$&')}`));
    // No control byte anywhere but the line ends.
    for (const b of out) assert.ok(b === 0x0a || (b >= 0x20 && b !== 0x7f), `control byte 0x${b.toString(16)} in the output`);
  });
});
