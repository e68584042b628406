// End-to-end: the console. Precedence console (API > URL > file) > env > default with the
// source of every value, GET/PUT/DELETE /api/config, a watched console file (a change applies
// within 2 s, an invalid file keeps the last good values), a polled console URL with ETags, the
// bearer token of a non-loopback admin address, `infertel config`, and SGLang's engine knobs
// applied to the SGLang simulator and restored to its own values.
import assert from 'node:assert/strict';
import fs from 'node:fs';
import http from 'node:http';
import path from 'node:path';
import { after, before, describe, test } from 'node:test';

import { closedPort, pollUntil, runInfertel, startAgent, startInfertel, startSim, stopAll, tempDir } from './lib/proc.mjs';
import { get } from './lib/util.mjs';

const LEVEL = 'otel.instrumentation.vllm.tracing.level';
const CAPTURE = 'otel.instrumentation.genai.capture-message-content';
const MAXLEN = 'otel.instrumentation.genai.message-content.max-length';
const VLLM_ON = 'otel.instrumentation.vllm.enabled';
const VLLM_LOG_LEVEL = 'apsara.apm.inference.vllm.logging.level';
const SGL_TRACE = 'otel.instrumentation.sglang.tracing.level';
const SGL_LOG_REQ = 'apsara.apm.inference.sglang.log_requests.enabled';
const SGL_LOG_REQ_LEVEL = 'apsara.apm.inference.sglang.log_requests.level';
const SGL_LOG_LEVEL = 'apsara.apm.inference.sglang.logging.level';

async function send(method, url, body, headers = {}) {
  const init = { method, headers: { ...headers }, signal: AbortSignal.timeout(10000) };
  if (body !== undefined) {
    init.headers['content-type'] = 'application/json';
    init.body = typeof body === 'string' ? body : JSON.stringify(body);
  }
  const r = await fetch(url, init);
  const text = await r.text();
  let json;
  try {
    json = JSON.parse(text);
  } catch {
    json = undefined;
  }
  return { status: r.status, headers: r.headers, text, json };
}

const keyOf = (doc, key) => doc.keys.find((k) => k.key === key);

/** An agent with its engine and admin address chosen (startAgent fixes both). */
async function startAgentOn({ engine = 'vllm', upstream, admin = '127.0.0.1:0', extra = [], env = {} }) {
  const args = ['agent', '--engine', engine, '--upstream', upstream, '--listen', '127.0.0.1:0', '--admin', admin,
    '--receiver-grpc', 'off', '--receiver-http', 'off', '--no-store', ...extra];
  const p = await startInfertel(args, {
    name: 'agent',
    env,
    waitFor: { url: /^infertel agent: gateway listening on (http:\/\/[0-9.]+:[0-9]+)/, adminUrl: /^infertel agent: admin listening on (http:\/\/[0-9.]+:[0-9]+)/ },
  });
  p.adminUrl = p.urls.adminUrl;
  return p;
}
const startSglangAgent = (upstream, extra = []) => startAgentOn({ engine: 'sglang', upstream, extra });

describe('console file, admin API and env precedence (vLLM upstream)', () => {
  let sim;
  let agent;
  let tmp;
  let file;

  before(async () => {
    tmp = tempDir();
    file = path.join(tmp.dir, 'console.yaml');
    fs.writeFileSync(file, `${LEVEL}: 0\n${MAXLEN}: 100\n`);
    sim = await startSim({ model: 'e2e-console/model', seed: 5, speed: 20 });
    agent = await startAgent({
      upstream: sim.url,
      extra: ['--console-file', file],
      env: { OTEL_INSTRUMENTATION_GENAI_CAPTURE_MESSAGE_CONTENT: 'false', OTEL_INSTRUMENTATION_VLLM_TRACING_LEVEL: '2' },
    });
  });

  after(async () => {
    await stopAll(agent, sim);
    tmp?.cleanup();
  });

  const config = async () => {
    const r = await get(`${agent.adminUrl}/api/config`);
    assert.equal(r.status, 200, r.text);
    return r.json;
  };

  test('GET /api/config lists every key with value, source, env and apply', async () => {
    const doc = await config();
    const offline = await runInfertel(['config', '--json']);
    assert.equal(offline.code, 0, offline.stderr);
    assert.deepEqual(doc.keys.map((k) => k.key), JSON.parse(offline.stdout).keys.map((k) => k.key));
    assert.ok(doc.keys.length >= 17);
    for (const k of doc.keys) {
      assert.ok(['console', 'env', 'default'].includes(k.source), JSON.stringify(k));
      assert.ok(['live', 'restart'].includes(k.apply), JSON.stringify(k));
      assert.ok('value' in k && 'env' in k, JSON.stringify(k));
    }
    // env beats default; the console file beats env.
    assert.deepEqual(
      { value: keyOf(doc, CAPTURE).value, source: keyOf(doc, CAPTURE).source, env: keyOf(doc, CAPTURE).env },
      { value: false, source: 'env', env: 'OTEL_INSTRUMENTATION_GENAI_CAPTURE_MESSAGE_CONTENT' },
    );
    assert.deepEqual([keyOf(doc, LEVEL).value, keyOf(doc, LEVEL).source, keyOf(doc, LEVEL).layer], [0, 'console', 'file']);
    assert.deepEqual([keyOf(doc, MAXLEN).value, keyOf(doc, MAXLEN).source], [100, 'console']);
    assert.deepEqual([keyOf(doc, VLLM_ON).value, keyOf(doc, VLLM_ON).source, keyOf(doc, VLLM_ON).apply], [true, 'default', 'restart']);
    assert.equal(doc.status.file.ok, true);
    assert.equal(doc.status.file.origin, file);
    assert.deepEqual(doc.errors, []);
  });

  test('PUT, GET and DELETE one key; API over file over env', async () => {
    let r = await send('PUT', `${agent.adminUrl}/api/config/${LEVEL}`, { value: 1 });
    assert.equal(r.status, 200, r.text);
    assert.deepEqual([r.json.value, r.json.source, r.json.layer], [1, 'console', 'api']);
    r = await get(`${agent.adminUrl}/api/config/${LEVEL}`);
    assert.equal(r.json.value, 1);
    r = await send('DELETE', `${agent.adminUrl}/api/config/${LEVEL}`);
    assert.equal(r.status, 200);
    assert.deepEqual([r.json.value, r.json.source, r.json.layer], [0, 'console', 'file'], 'the file value comes back');

    r = await send('PUT', `${agent.adminUrl}/api/config/${CAPTURE}`, { value: true });
    assert.deepEqual([r.json.value, r.json.source], [true, 'console']);
    r = await send('DELETE', `${agent.adminUrl}/api/config/${CAPTURE}`);
    assert.deepEqual([r.json.value, r.json.source], [false, 'env'], 'the env value comes back');
  });

  test('a bad value is a 400 naming the key and the accepted values; the old value stays', async () => {
    for (const body of [{ value: 7 }, { value: 'high' }, { value: true }, { value: null }, { nope: 1 }, 'not json']) {
      const r = await send('PUT', `${agent.adminUrl}/api/config/${LEVEL}`, body);
      assert.equal(r.status, 400, `${JSON.stringify(body)} → ${r.text}`);
      assert.equal(r.json.error.key, LEVEL);
      assert.equal(r.json.error.accepted, 'an integer from 0 to 2');
      assert.match(r.json.error.message, new RegExp(LEVEL.replaceAll('.', '\\.')));
    }
    const r = await send('PUT', `${agent.adminUrl}/api/config/${SGL_LOG_LEVEL}`, { value: 'LOUD' });
    assert.equal(r.status, 400);
    assert.match(r.json.error.accepted, /DEBUG,INFO,WARNING,ERROR,CRITICAL/);
    assert.equal((await send('PUT', `${agent.adminUrl}/api/config/no.such.key`, { value: 1 })).status, 404);
    const doc = await config();
    assert.deepEqual([keyOf(doc, LEVEL).value, keyOf(doc, LEVEL).layer], [0, 'file']);
    assert.equal(doc.status.api.keys, 0);
  });

  test('a console file change applies within 2 s', async () => {
    const t0 = Date.now();
    fs.writeFileSync(file, `${LEVEL}: 2\n${MAXLEN}: 100\n`);
    const applied = await pollUntil(async () => keyOf(await config(), LEVEL).value === 2, { timeoutMs: 4000, intervalMs: 25 });
    const elapsed = Date.now() - t0;
    assert.ok(applied, 'the new value was applied');
    assert.ok(elapsed <= 2200, `applied after ${elapsed} ms`);
  });

  test('an invalid console file keeps the last good values and shows the error', async () => {
    const bad = [
      [`${LEVEL}: [2\n`, /invalid YAML/],
      [`${LEVEL}: 2\notel.instrumentation.vllm.nope: 1\n`, /unknown key 'otel\.instrumentation\.vllm\.nope'/],
      [`${LEVEL}: 9\n`, /expected an integer from 0 to 2/],
    ];
    for (const [text, re] of bad) {
      fs.writeFileSync(file, text);
      const doc = await pollUntil(async () => {
        const d = await config();
        return d.status.file.ok === false && re.test(d.status.file.error) ? d : null;
      }, { timeoutMs: 4000 });
      assert.ok(doc, `error shown for ${JSON.stringify(text)}`);
      assert.equal(keyOf(doc, LEVEL).value, 2, 'last good value');
      assert.equal(keyOf(doc, MAXLEN).value, 100, 'last good value');
      assert.ok(doc.errors.some((e) => re.test(e)), JSON.stringify(doc.errors));
      const st = await get(`${agent.adminUrl}/api/config/status`);
      assert.equal(st.json.file.ok, false);
    }
    assert.match(agent.stdout + agent.stderr, /console file .*keeping the last good values/, 'the error is logged');
    fs.writeFileSync(file, `${LEVEL}: 1\n`);
    const doc = await pollUntil(async () => {
      const d = await config();
      return d.status.file.ok ? d : null;
    }, { timeoutMs: 4000 });
    assert.ok(doc);
    assert.equal(keyOf(doc, LEVEL).value, 1);
    assert.deepEqual([keyOf(doc, MAXLEN).value, keyOf(doc, MAXLEN).source], [8192, 'default'], 'a key the file dropped falls back');
  });

  test('a restart key changed at run time is pending until restart', async () => {
    let r = await send('PUT', `${agent.adminUrl}/api/config/${VLLM_ON}`, { value: false });
    assert.equal(r.status, 200, r.text);
    assert.deepEqual([r.json.value, r.json.pending_restart, r.json.pending_value, r.json.pending_layer], [true, true, false, 'api']);
    r = await send('DELETE', `${agent.adminUrl}/api/config/${VLLM_ON}`);
    assert.equal(r.json.pending_restart, false);
  });

  test('vLLM engine knobs are reported unsupported with the reason', async () => {
    const r = await send('PUT', `${agent.adminUrl}/api/config/${VLLM_LOG_LEVEL}`, { value: 'debug' });
    assert.equal(r.status, 200, r.text);
    assert.equal(r.json.value, 'DEBUG');
    assert.match(r.json.unsupported, /VLLM_LOGGING_LEVEL/);
    assert.equal(r.json.engines.length, 1);
    assert.equal(r.json.engines[0].status, 'unsupported');
    assert.match(r.json.engines[0].reason, /no endpoint/);
    await send('DELETE', `${agent.adminUrl}/api/config/${VLLM_LOG_LEVEL}`);
  });

  test('infertel config shows the running agent and the offline view', async () => {
    await send('PUT', `${agent.adminUrl}/api/config/${MAXLEN}`, { value: 64 });
    const r = await runInfertel(['config', '--agent', agent.adminUrl]);
    assert.equal(r.code, 0, r.stderr);
    const line = r.stdout.split('\n').find((l) => l.startsWith(MAXLEN + ' '));
    assert.match(line, /\b64\b.*console \(api\).*live.*OTEL_INSTRUMENTATION_GENAI_MESSAGE_CONTENT_MAX_LENGTH/);
    assert.match(r.stdout, new RegExp(`^${CAPTURE.replaceAll('.', '\\.')} +false +env `, 'm'));
    assert.match(r.stdout, /unsupported for vLLM|unsupported:/);
    await send('DELETE', `${agent.adminUrl}/api/config/${MAXLEN}`);

    const off = await runInfertel(['config', '--console-file', file], { env: { OTEL_INSTRUMENTATION_VLLM_METRICS_ENABLED: 'false' } });
    assert.equal(off.code, 0, off.stderr);
    assert.match(off.stdout, new RegExp(`^${LEVEL.replaceAll('.', '\\.')} +1 +console \\(file\\)`, 'm'));
    assert.match(off.stdout, /^otel\.instrumentation\.vllm\.metrics\.enabled +false +env /m);
    fs.writeFileSync(path.join(tmp.dir, 'bad.yaml'), `${LEVEL}: 5\n`);
    const bad = await runInfertel(['config', '--console-file', path.join(tmp.dir, 'bad.yaml')]);
    assert.equal(bad.code, 2);
    assert.match(bad.stderr, /otel\.instrumentation\.vllm\.tracing\.level/);
  });

  test('the agent does not start on an invalid console file', async () => {
    fs.writeFileSync(path.join(tmp.dir, 'bad.yaml'), `${LEVEL}: 5\n`);
    const r = await runInfertel(['agent', '--upstream', sim.url, '--listen', '127.0.0.1:0', '--admin', '127.0.0.1:0',
      '--receiver-grpc', 'off', '--receiver-http', 'off', '--no-store', '--console-file', path.join(tmp.dir, 'bad.yaml')]);
    assert.equal(r.code, 2, r.stdout + r.stderr);
    assert.match(r.stderr, /--console-file .*otel\.instrumentation\.vllm\.tracing\.level.*an integer from 0 to 2/);
  });
});

describe('console URL with ETag', () => {
  let sim;
  let agent;
  let server;
  const peer = { doc: `{"${MAXLEN}": 300}`, version: 1, status: 200, requests: 0, notModified: 0 };

  before(async () => {
    server = http.createServer((req, res) => {
      peer.requests++;
      const etag = `"v${peer.version}"`;
      if (req.headers['if-none-match'] === etag) {
        peer.notModified++;
        res.writeHead(304, { etag });
        return res.end();
      }
      res.writeHead(peer.status, { 'content-type': 'application/json', etag });
      res.end(peer.doc);
    });
    await new Promise((r) => server.listen(0, '127.0.0.1', r));
    sim = await startSim({ model: 'e2e-console/model', seed: 6, speed: 20 });
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

  const config = async () => (await get(`${agent.adminUrl}/api/config`)).json;
  const set = (doc, status = 200) => {
    peer.doc = doc;
    peer.status = status;
    peer.version++;
  };

  test('the URL document applies at start; unchanged polls are 304s', async () => {
    let doc = await config();
    assert.deepEqual([keyOf(doc, MAXLEN).value, keyOf(doc, MAXLEN).layer], [300, 'url']);
    const n = peer.notModified;
    assert.ok(await pollUntil(() => peer.notModified >= n + 3, { timeoutMs: 3000 }), 'If-None-Match sent and 304 honoured');
    doc = await config();
    assert.equal(doc.status.url.ok, true);
    assert.equal(doc.status.url.keys, 1);
  });

  test('a new document applies; an invalid one keeps the last good values', async () => {
    set(`${MAXLEN}: 400\n${LEVEL}: 0\n`); // YAML is fine too
    let doc = await pollUntil(async () => {
      const d = await config();
      return keyOf(d, MAXLEN).value === 400 ? d : null;
    }, { timeoutMs: 3000 });
    assert.ok(doc);
    assert.equal(keyOf(doc, LEVEL).value, 0);

    set(`{"${MAXLEN}": "lots"}`);
    doc = await pollUntil(async () => {
      const d = await config();
      return d.status.url.ok === false ? d : null;
    }, { timeoutMs: 3000 });
    assert.ok(doc, 'error shown');
    assert.match(doc.status.url.error, /max-length/);
    assert.equal(keyOf(doc, MAXLEN).value, 400);
    // Stays an error through the 304s that follow.
    const n = peer.notModified;
    await pollUntil(() => peer.notModified >= n + 2, { timeoutMs: 3000 });
    assert.equal((await config()).status.url.ok, false);

    // The API layer wins over the URL until deleted.
    await send('PUT', `${agent.adminUrl}/api/config/${MAXLEN}`, { value: 5 });
    set(`{"${MAXLEN}": 500}`);
    doc = await pollUntil(async () => {
      const d = await config();
      return d.status.url.ok ? d : null;
    }, { timeoutMs: 3000 });
    assert.deepEqual([keyOf(doc, MAXLEN).value, keyOf(doc, MAXLEN).layer], [5, 'api']);
    const del = await send('DELETE', `${agent.adminUrl}/api/config/${MAXLEN}`);
    assert.deepEqual([del.json.value, del.json.layer], [500, 'url']);
  });

  test('an unreachable URL keeps the last good values and shows the error', async () => {
    server.closeAllConnections?.();
    await new Promise((r) => server.close(r));
    server = null;
    const doc = await pollUntil(async () => {
      const d = await config();
      return d.status.url.ok === false ? d : null;
    }, { timeoutMs: 4000 });
    assert.ok(doc);
    assert.match(doc.status.url.error, /unreachable/);
    assert.equal(keyOf(doc, MAXLEN).value, 500);
    assert.ok(doc.errors.some((e) => /unreachable/.test(e)));
  });
});

describe('admin token', () => {
  let sim;
  let agent;
  let envAgent;
  const TOKEN = 'e2e-admin-token-7f3a';

  before(async () => {
    sim = await startSim({ model: 'e2e-console/model', seed: 7, speed: 20 });
    agent = await startAgentOn({ upstream: sim.url, admin: '127.0.0.2:0', extra: ['--admin-token', TOKEN], env: { INFERTEL_ADMIN_TOKEN: '' } });
  });

  after(async () => {
    await stopAll(agent, envAgent, sim);
  });

  test('a non-loopback admin address without a token is refused at start', async () => {
    const r = await runInfertel(['agent', '--upstream', sim.url, '--listen', '127.0.0.1:0', '--admin', '0.0.0.0:0',
      '--receiver-grpc', 'off', '--receiver-http', 'off', '--no-store'], { env: { INFERTEL_ADMIN_TOKEN: '' } });
    assert.equal(r.code, 2, r.stdout + r.stderr);
    assert.match(r.stderr, /not loopback.*--admin-token/);
  });

  test('with a token: 401 without it or with another, 200 with it', async () => {
    assert.match(agent.adminUrl, /^http:\/\/127\.0\.0\.2:/);
    let r = await get(`${agent.adminUrl}/api/config`);
    assert.equal(r.status, 401);
    assert.match(r.headers.get('www-authenticate') || '', /^Bearer/);
    r = await get(`${agent.adminUrl}/api/config`, { authorization: 'Bearer wrong' });
    assert.equal(r.status, 401);
    r = await send('PUT', `${agent.adminUrl}/api/config/${LEVEL}`, { value: 0 });
    assert.equal(r.status, 401);
    r = await get(`${agent.adminUrl}/api/config`, { authorization: `Bearer ${TOKEN}` });
    assert.equal(r.status, 200);
    assert.equal(keyOf(r.json, LEVEL).value, 1, 'the refused PUT changed nothing');
    r = await send('PUT', `${agent.adminUrl}/api/config/${LEVEL}`, { value: 0 }, { authorization: `Bearer ${TOKEN}` });
    assert.equal(r.status, 200);

    const without = await runInfertel(['config', '--agent', agent.adminUrl], { env: { INFERTEL_ADMIN_TOKEN: '' } });
    assert.equal(without.code, 1);
    assert.match(without.stderr, /401/);
    const withEnv = await runInfertel(['config', '--agent', agent.adminUrl], { env: { INFERTEL_ADMIN_TOKEN: TOKEN } });
    assert.equal(withEnv.code, 0, withEnv.stderr);
    assert.match(withEnv.stdout, /otel\.instrumentation\.vllm\.tracing\.level +0 +console \(api\)/);
  });

  test('INFERTEL_ADMIN_TOKEN sets the token too', async () => {
    envAgent = await startAgentOn({ upstream: sim.url, admin: '127.0.0.2:0', env: { INFERTEL_ADMIN_TOKEN: TOKEN } });
    assert.equal((await get(`${envAgent.adminUrl}/api/config`)).status, 401);
    assert.equal((await get(`${envAgent.adminUrl}/api/config`, { authorization: `Bearer ${TOKEN}` })).status, 200);
    assert.equal((await get(`${envAgent.adminUrl}/healthz`)).status, 200, '/healthz stays open');
  });
});

describe('SGLang engine knobs', () => {
  let sim;
  let agent;

  before(async () => {
    sim = await startInfertel(['sim', '--engine', 'sglang', '--listen', '127.0.0.1:0', '--model', 'e2e-console/sgl', '--seed', '8', '--speed', '20'], {
      name: 'sim-sglang',
      waitFor: { url: /^infertel sim: listening on (http:\/\/[0-9.]+:[0-9]+)/ },
    });
    sim.url = sim.urls.url;
    agent = await startSglangAgent(sim.url);
  });

  after(async () => {
    await stopAll(agent, sim);
  });

  const stats = async () => (await get(`${sim.url}/_sim/stats`)).json;
  const key = async (k) => (await get(`${agent.adminUrl}/api/config/${k}`)).json;

  test('untouched until set: the engine keeps its own values', async () => {
    const s = await stats();
    const k = await key(SGL_TRACE);
    assert.deepEqual([k.value, k.source], [3, 'default']);
    assert.equal(k.engines.length, 1);
    assert.equal(k.engines[0].status, 'engine');
    assert.equal(k.engines[0].original, null);
    const after = await stats();
    assert.deepEqual(
      [after.trace_level, after.log_requests, after.log_requests_level, after.log_level],
      [s.trace_level, s.log_requests, s.log_requests_level, s.log_level],
    );
  });

  test('overrides are applied, originals recorded, and restored on DELETE', async () => {
    const before = await stats();
    for (const [k, v] of [[SGL_TRACE, 1], [SGL_LOG_REQ, true], [SGL_LOG_REQ_LEVEL, 3], [SGL_LOG_LEVEL, 'DEBUG']]) {
      const r = await send('PUT', `${agent.adminUrl}/api/config/${k}`, { value: v });
      assert.equal(r.status, 200, r.text);
    }
    const applied = await pollUntil(async () => {
      const s = await stats();
      return s.trace_level === 1 && s.log_requests === true && s.log_requests_level === 3 && /^debug$/i.test(s.log_level) ? s : null;
    }, { timeoutMs: 5000 });
    assert.ok(applied, `engine state: ${JSON.stringify(await stats())}`);

    const tl = await pollUntil(async () => {
      const k = await key(SGL_TRACE);
      return k.engines[0].status === 'applied' ? k : null;
    });
    assert.ok(tl);
    assert.equal(tl.engines[0].applied, 1);
    assert.equal(tl.engines[0].original, before.trace_level, 'the engine does not report its level: SGLang default 3 assumed');
    assert.match(tl.engines[0].original_note, /not reported by \/server_info/);
    const lr = await key(SGL_LOG_REQ);
    assert.deepEqual([lr.engines[0].status, lr.engines[0].original, lr.engines[0].applied], ['applied', before.log_requests, true]);
    const lvl = await key(SGL_LOG_REQ_LEVEL);
    assert.deepEqual([lvl.engines[0].original, lvl.engines[0].applied], [before.log_requests_level, 3]);
    const ll = await key(SGL_LOG_LEVEL);
    assert.equal(ll.engines[0].original, before.log_level.toUpperCase());

    for (const k of [SGL_TRACE, SGL_LOG_REQ, SGL_LOG_REQ_LEVEL, SGL_LOG_LEVEL]) {
      assert.equal((await send('DELETE', `${agent.adminUrl}/api/config/${k}`)).status, 200);
    }
    const restored = await pollUntil(async () => {
      const s = await stats();
      return s.trace_level === before.trace_level && s.log_requests === before.log_requests &&
        s.log_requests_level === before.log_requests_level && s.log_level.toLowerCase() === before.log_level.toLowerCase() ? s : null;
    }, { timeoutMs: 5000 });
    assert.ok(restored, `restored: ${JSON.stringify(await stats())} vs ${JSON.stringify(before)}`);
    const after = await pollUntil(async () => {
      const k = await key(SGL_TRACE);
      return k.engines[0].status === 'engine' ? k : null;
    });
    assert.ok(after);
    assert.equal(after.engines[0].applied, null);
  });

  test('an engine that restarts gets the console values again, its original kept', async () => {
    const before = await stats();
    assert.equal((await send('PUT', `${agent.adminUrl}/api/config/${SGL_TRACE}`, { value: 1 })).status, 200);
    assert.ok(await pollUntil(async () => (await stats()).trace_level === 1, { timeoutMs: 5000 }), 'applied');

    // Stop the engine and start a new one on the same address: it begins at its own level.
    const port = new URL(sim.url).port;
    await stopAll(sim);
    const away = await pollUntil(async () => {
      const k = await key(SGL_TRACE);
      return k.engines[0].status === 'error' ? k : null;
    }, { timeoutMs: 15000, intervalMs: 200 });
    assert.ok(away, 'the engine that stopped answering is reported');
    assert.match(away.engines[0].error, /does not answer/);
    sim = await startInfertel(['sim', '--engine', 'sglang', '--listen', `127.0.0.1:${port}`, '--model', 'e2e-console/sgl', '--seed', '9', '--speed', '20'], {
      name: 'sim-sglang-restarted',
      waitFor: { url: /^infertel sim: listening on (http:\/\/[0-9.]+:[0-9]+)/ },
    });
    sim.url = sim.urls.url;
    const reapplied = await pollUntil(async () => (await stats()).trace_level === 1, { timeoutMs: 15000, intervalMs: 200 });
    assert.ok(reapplied, `the restarted engine got the console's level again: ${JSON.stringify(await stats())}`);
    const k = await pollUntil(async () => {
      const v = await key(SGL_TRACE);
      return v.engines[0].status === 'applied' ? v : null;
    });
    assert.ok(k);
    assert.deepEqual([k.engines[0].applied, k.engines[0].original, k.engines[0].error ?? ''], [1, before.trace_level, '']);

    assert.equal((await send('DELETE', `${agent.adminUrl}/api/config/${SGL_TRACE}`)).status, 200);
    assert.ok(await pollUntil(async () => (await stats()).trace_level === before.trace_level, { timeoutMs: 5000 }), 'restored');
  });

  test('an engine that cannot be reached shows the error in GET /api/config', async () => {
    const port = await closedPort();
    const lonely = await startSglangAgent(`http://127.0.0.1:${port}`);
    try {
      const r = await send('PUT', `${lonely.adminUrl}/api/config/${SGL_TRACE}`, { value: 2 });
      assert.equal(r.status, 200, 'the value is taken; applying it is off the request path');
      const doc = await pollUntil(async () => {
        const d = (await get(`${lonely.adminUrl}/api/config`)).json;
        return keyOf(d, SGL_TRACE).engines[0].status === 'error' ? d : null;
      }, { timeoutMs: 5000 });
      assert.ok(doc, 'error state reported');
      assert.match(keyOf(doc, SGL_TRACE).engines[0].error, /connect/);
      assert.ok(doc.errors.some((e) => e.startsWith(SGL_TRACE)), JSON.stringify(doc.errors));
    } finally {
      await lonely.stop();
    }
  });
});
