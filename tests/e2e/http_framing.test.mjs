// End-to-end: request smuggling and the other framing rules of RFC 9112 on the agent's three
// HTTP/1 ports (gateway, OTLP/HTTP receiver, admin), with raw sockets. Every shape is answered
// 400 (501 for a transfer coding before chunked), the connection is closed after the one
// answer, nothing reaches the engine (a recording proxy stands in front of the simulator), and
// the refusal is counted by reason on the port's counter (docs/limits.md). The gateway does not
// forward hop-by-hop fields, those named in Connection included.
import assert from 'node:assert/strict';
import net from 'node:net';
import { after, before, describe, test } from 'node:test';

import { pollUntil, requireBin, startAgent, startSim, stopAll } from './lib/proc.mjs';
import { get, metricSum, parsePrometheus, startTap } from './lib/util.mjs';

/**
 * Writes `bytes` on a fresh connection to `hostPort` and collects what comes back until the
 * server closes (bounded by `timeoutMs`). Resolves {text, closed}.
 */
function rawExchange(hostPort, bytes, timeoutMs = 5000) {
  const [host, port] = hostPort.split(':');
  return new Promise((resolve) => {
    const chunks = [];
    const socket = net.connect({ host, port: Number(port) });
    let done = false;
    const finish = (closed) => {
      if (done) return;
      done = true;
      clearTimeout(timer);
      socket.destroy();
      resolve({ text: Buffer.concat(chunks).toString('latin1'), closed });
    };
    const timer = setTimeout(() => finish(false), timeoutMs);
    socket.on('connect', () => socket.write(bytes));
    socket.on('data', (d) => chunks.push(d));
    socket.on('end', () => finish(true));
    socket.on('close', () => finish(true));
    socket.on('error', () => finish(true));
  });
}

const SMUGGLED = 'GET /v1/models HTTP/1.1\r\nHost: smuggled\r\n\r\n';

/** Each shape: the request's head lines (after the request line), its body, status, reason. */
function shapes(path) {
  const te = (value) => ({
    head: [`Host: h`, `Content-Type: application/json`, `Transfer-Encoding: ${value}`],
    body: SMUGGLED,
  });
  return [
    { name: 'TE gzip', ...te('gzip'), status: 400, reason: 'bad_transfer_encoding' },
    { name: 'TE identity', ...te('identity'), status: 400, reason: 'bad_transfer_encoding' },
    { name: 'TE chunked, identity', ...te('chunked, identity'), status: 400, reason: 'bad_transfer_encoding' },
    { name: 'TE xchunked', ...te('xchunked'), status: 400, reason: 'bad_transfer_encoding' },
    { name: 'TE chunked, chunked', ...te('chunked, chunked'), status: 400, reason: 'bad_transfer_encoding' },
    { name: 'TE gzip, chunked', ...te('gzip, chunked'), status: 501, reason: 'unsupported_transfer_coding' },
    {
      name: 'TE gzip with Content-Length',
      head: ['Host: h', 'Transfer-Encoding: gzip', `Content-Length: ${SMUGGLED.length}`],
      body: SMUGGLED,
      status: 400,
      reason: 'transfer_encoding_with_content_length',
    },
    {
      name: 'TE chunked after Content-Length',
      head: ['Host: h', 'Content-Length: 4', 'Transfer-Encoding: chunked'],
      body: `0\r\n\r\n${SMUGGLED}`,
      status: 400,
      reason: 'bad_transfer_encoding',
    },
    {
      name: 'Content-Length after TE chunked',
      head: ['Host: h', 'Transfer-Encoding: chunked', 'Content-Length: 4'],
      body: `0\r\n\r\n${SMUGGLED}`,
      status: 400,
      reason: 'bad_content_length',
    },
    {
      name: 'two different Content-Length',
      head: ['Host: h', 'Content-Length: 2', `Content-Length: ${2 + SMUGGLED.length}`],
      body: `{}${SMUGGLED}`,
      status: 400,
      reason: 'bad_content_length',
    },
    { name: 'invalid Content-Length', head: ['Host: h', 'Content-Length: 2x'], body: '{}', status: 400, reason: 'bad_content_length' },
    { name: 'no Host', head: ['Content-Length: 2'], body: '{}', status: 400, reason: 'missing_host' },
    { name: 'two Host', head: ['Host: a', 'Host: b', 'Content-Length: 2'], body: '{}', status: 400, reason: 'duplicate_host' },
    {
      name: 'TE in HTTP/1.0',
      version: '1.0',
      head: ['Host: h', 'Transfer-Encoding: chunked'],
      body: `0\r\n\r\n${SMUGGLED}`,
      status: 400,
      reason: 'transfer_encoding_in_http10',
    },
  ].map((s) => ({ ...s, bytes: `POST ${path} HTTP/${s.version ?? '1.1'}\r\n${s.head.join('\r\n')}\r\n\r\n${s.body}` }));
}

async function samples(agent) {
  const r = await get(`${agent.adminUrl}/metrics`);
  assert.equal(r.status, 200);
  return parsePrometheus(r.text);
}

describe('HTTP/1 framing on the gateway, the OTLP/HTTP receiver and the admin port', () => {
  let sim;
  let tap;
  let agent;

  before(async () => {
    requireBin();
    sim = await startSim({ model: 'e2e-framing/model', seed: 5, speed: 50 });
    tap = await startTap(sim.url);
    agent = await startAgent({ upstream: tap.url });
  });

  after(async () => {
    await stopAll(agent, sim);
    await tap?.close();
  });

  // What clients sent through the gateway: the agent's own GETs to the engine (the metrics
  // scrape, probes) pass the same tap at times of their own, so they are left out; every
  // attack is a POST, and what it smuggles is a GET with `Host: smuggled`.
  const fromClients = () => tap.requests.filter((r) => r.method !== 'GET' || r.headers.host === 'smuggled');

  const ports = () => [
    { port: 'gateway', hostPort: new URL(agent.url).host, path: '/v1/completions', family: 'infertel_gateway_refused_requests_total' },
    { port: 'receiver', hostPort: new URL(agent.receiverHttp).host, path: '/v1/traces', family: 'infertel_receiver_http_refused_requests_total' },
    { port: 'admin', hostPort: new URL(agent.adminUrl).host, path: '/api/config', family: 'infertel_admin_refused_requests_total' },
  ];

  for (const which of ['gateway', 'receiver', 'admin']) {
    test(`${which}: every smuggling and framing shape is refused, closed and counted`, async () => {
      const p = ports().find((x) => x.port === which);
      const before = await samples(agent);
      const forwarded = fromClients().length;
      const expected = {};
      for (const shape of shapes(p.path)) {
        const { text, closed } = await rawExchange(p.hostPort, shape.bytes);
        const label = `${which}, ${shape.name}: ${JSON.stringify(text.slice(0, 200))}`;
        assert.match(text, new RegExp(`^HTTP/1\\.[01] ${shape.status} `), label);
        assert.equal(text.match(/HTTP\/1\.[01] \d{3} /g).length, 1, `one answer only: ${label}`);
        assert.ok(closed, `connection closed: ${label}`);
        expected[shape.reason] = (expected[shape.reason] ?? 0) + 1;
      }
      assert.equal(fromClients().length, forwarded, `nothing reached the engine: ${JSON.stringify(fromClients().slice(forwarded))}`);
      const now = await samples(agent);
      for (const [reason, n] of Object.entries(expected)) {
        const delta =
          metricSum(now, p.family, (l) => l.reason === reason) - metricSum(before, p.family, (l) => l.reason === reason);
        assert.equal(delta, n, `${p.family}{reason="${reason}"}`);
      }
    });
  }

  test('gateway: a well-framed request still passes, without hop-by-hop fields', async () => {
    const body = JSON.stringify({ model: 'e2e-framing/model', prompt: 'hi', max_tokens: 2 });
    const bytes =
      `POST /v1/completions HTTP/1.1\r\nHost: h\r\nContent-Type: application/json\r\n` +
      `Connection: keep-alive, X-Hop-Secret\r\nX-Hop-Secret: 1\r\nKeep-Alive: timeout=5\r\n` +
      `TE: trailers\r\nX-End-To-End: 1\r\nContent-Length: ${body.length}\r\n\r\n${body}`;
    const forwarded = fromClients().length;
    const { text } = await rawExchange(new URL(agent.url).host, bytes, 1500);
    assert.match(text, /^HTTP\/1\.1 200 /);
    await pollUntil(() => fromClients().length > forwarded, { timeoutMs: 5000 });
    const seen = fromClients()[forwarded].headers;
    assert.equal(seen['x-end-to-end'], '1');
    for (const name of ['x-hop-secret', 'keep-alive', 'te']) assert.equal(seen[name], undefined, `${name} forwarded`);
  });
});
