// End-to-end: `infertel launch -- <engine command>`. The engine is the simulator behind small
// wrapper scripts named like the real entry points (`vllm serve MODEL …`,
// `python3 -m sglang.launch_server …`), found first in PATH. One command; then the `openai`
// client at the user's original port gets its answers, the trace (entry span + the engine's
// native spans) reaches the OTLP backend and metrics appear; user-set flags are kept; signals
// and exit codes pass through, with the gateway draining what is in flight; an engine dying
// mid-load; the plugin switch off.
import assert from 'node:assert/strict';
import { execFileSync } from 'node:child_process';
import fs from 'node:fs';
import path from 'node:path';
import { after, before, describe, test } from 'node:test';

import { contentDeltas, exitOf, parseSse, refused, startRawStream } from './lib/drain.mjs';
import { STATUS_CODE, startGrpcReceiver } from './lib/otlp.mjs';
import { closedPort, pollUntil, requireBin, startInfertel, stopAll, tempDir } from './lib/proc.mjs';
import { collectStream, get, metricSum, openaiClient, parsePrometheus } from './lib/util.mjs';

const MODEL = 'e2e-launch/model';
const URL_RE = '(http://[^\\s]+)';
let bin;
let tmp;
let binDir;

function script(name, body) {
  const p = path.join(binDir, name);
  fs.writeFileSync(p, `#!/bin/sh\n${body}\n`, { mode: 0o755 });
  return p;
}

before(() => {
  bin = requireBin();
  tmp = tempDir('infertel-launch-');
  binDir = path.join(tmp.dir, 'bin');
  fs.mkdirSync(binDir);
  // `vllm serve MODEL [flags]` played by the simulator. LAUNCH_TEST_DELAY holds the start
  // back (to see the gateway's 503 while the engine starts), LAUNCH_TEST_EXIT makes the
  // engine fail at once, LAUNCH_TEST_ARGS records the command line it got, LAUNCH_TEST_ENV its
  // environment.
  script('vllm', `[ "$1" = serve ] || exit 2
shift; model="$1"; shift
[ -n "$LAUNCH_TEST_ARGS" ] && echo "$@" > "$LAUNCH_TEST_ARGS"
[ -n "$LAUNCH_TEST_ENV" ] && env > "$LAUNCH_TEST_ENV"
[ -n "$LAUNCH_TEST_EXIT" ] && exit "$LAUNCH_TEST_EXIT"
[ -n "$LAUNCH_TEST_DELAY" ] && sleep "$LAUNCH_TEST_DELAY"
exec "${bin}" sim --engine vllm --model "$model" --speed "\${LAUNCH_TEST_SPEED:-50}" "$@"`);
  // `python3 -m sglang.launch_server [flags]` played by the simulator.
  script('python3', `[ "$1" = -m ] && [ "$2" = sglang.launch_server ] || exit 2
shift 2
[ -n "$LAUNCH_TEST_ARGS" ] && echo "$@" > "$LAUNCH_TEST_ARGS"
exec "${bin}" sim --engine sglang --speed 50 "$@"`);
});

after(() => tmp?.cleanup());

async function launch(cmd, { agentArgs = [], env = {} } = {}) {
  const port = await closedPort();
  const args = ['launch', '--no-store', '--admin', '127.0.0.1:0', '--export-delay-ms', '50', '--scrape-interval', '200ms', ...agentArgs, '--', ...cmd(port)];
  const p = await startInfertel(args, {
    name: 'launch',
    env: { PATH: `${binDir}:${process.env.PATH}`, ...env },
    waitFor: {
      url: new RegExp(`^infertel launch: gateway listening on ${URL_RE}`),
      adminUrl: new RegExp(`^infertel launch: admin listening on ${URL_RE}`),
      line: /^infertel launch: (engine .*)$/,
    },
  });
  p.port = port;
  p.url = p.urls.url;
  p.adminUrl = p.urls.adminUrl;
  p.line = p.urls.line;
  return p;
}

const waitHealthy = (url) =>
  pollUntil(async () => {
    try {
      return (await get(`${url}/v1/models`)).status === 200;
    } catch {
      return false;
    }
  }, { timeoutMs: 15000, intervalMs: 100 });

describe('launch: vLLM', () => {
  let rx;
  before(async () => {
    rx = await startGrpcReceiver();
  });
  after(async () => rx?.close());

  test('one command: the client keeps its URL and gets the whole trace and metrics', async () => {
    const argsFile = path.join(tmp.dir, 'vllm-args.txt');
    const envFile = path.join(tmp.dir, 'vllm-env.txt');
    const p = await launch((port) => ['vllm', 'serve', MODEL, '--host', '127.0.0.1', '--port', String(port)], {
      agentArgs: ['--otlp-endpoint', rx.endpoint, '--otlp-protocol', 'grpc'],
      env: { LAUNCH_TEST_ARGS: argsFile, LAUNCH_TEST_ENV: envFile },
    });
    try {
      assert.equal(p.url, `http://127.0.0.1:${p.port}`, 'the gateway is on the address the user gave the engine');
      assert.match(p.line, /moved to 127\.0\.0\.1:\d+ behind the gateway on 127\.0\.0\.1:\d+; added --otlp-traces-endpoint http:\/\/127\.0\.0\.1:\d+/);
      await waitHealthy(p.url);
      const engineArgs = fs.readFileSync(argsFile, 'utf8');
      assert.equal(engineArgs.match(/--port/g).length, 1, engineArgs);
      assert.doesNotMatch(engineArgs, new RegExp(`--port ${p.port}\\b`), 'the engine moved off the user port');
      // Cached prompt tokens in the usage (infertel.cache.hit_ratio): the flag is added.
      assert.match(p.line, /--enable-prompt-tokens-details/);
      assert.match(engineArgs, /--enable-prompt-tokens-details/);
      const client = openaiClient(`http://127.0.0.1:${p.port}`);
      // vLLM's span processor would wait the SDK's 5 s; launch gives it 500 ms.
      assert.match(p.line, /OTEL_BSP_SCHEDULE_DELAY=500/);
      assert.match(fs.readFileSync(envFile, 'utf8'), /^OTEL_BSP_SCHEDULE_DELAY=500$/m);
      const r = await client.chat.completions.create({ model: MODEL, messages: [{ role: 'user', content: 'hello' }], max_tokens: 3 });
      const answered = Date.now();
      assert.ok(r.choices[0].message.content.length > 0);
      await collectStream(await client.chat.completions.create({ model: MODEL, messages: [{ role: 'user', content: 'hi' }], max_tokens: 3, stream: true }));
      const entry = await rx.waitForSpan((s) => s.name === `chat ${MODEL}` && s.attributes['gen_ai.response.id'] === r.id, 10000);
      const llm = await rx.waitForSpan((s) => s.name === 'llm_request' && s.traceId === entry.traceId, 10000);
      // With the SDK's 5 s the engine span of an idle engine would come about 5 s after its
      // request; with 500 ms, within a second (3 s leaves room for a slow CI machine).
      assert.ok(Date.now() - answered < 3000, `the engine span came ${Date.now() - answered} ms after the response`);
      assert.equal(llm.parentSpanId, entry.spanId, 'the engine span is the entry span\'s child');
      assert.equal(llm.resource['service.name'], entry.resource['service.name'], 'one application');
      const samples = await pollUntil(async () => {
        const s = parsePrometheus((await get(`${p.adminUrl}/metrics`)).text);
        return metricSum(s, 'gen_ai_vllm_prompt_tokens_total') > 0 ? s : null;
      }, { timeoutMs: 5000 });
      assert.equal(metricSum(samples, 'infertel_engine_up'), 1);
    } finally {
      const exit = await p.stop();
      assert.equal(exit.code, 0, `SIGTERM forwarded, the engine exits 0, so does launch\n${p.describe()}`);
    }
  });

  test('the web UI and its API on the admin address, over the store', async () => {
    const store = path.join(tmp.dir, 'launch-ui-store');
    const port = await closedPort();
    const p = await startInfertel(['launch', '--store', store, '--admin', '127.0.0.1:0', '--export-delay-ms', '50', '--',
      'vllm', 'serve', MODEL, '--host', '127.0.0.1', '--port', String(port)], {
      name: 'launch',
      env: { PATH: `${binDir}:${process.env.PATH}` },
      waitFor: {
        adminUrl: new RegExp(`^infertel launch: admin listening on ${URL_RE}`),
        ui: /^infertel launch: web UI on (http:\/\/[0-9.]+:[0-9]+\/ui\/)/,
      },
    });
    try {
      const base = `http://127.0.0.1:${port}`;
      await waitHealthy(base);
      const r = await openaiClient(base).chat.completions.create({ model: MODEL, messages: [{ role: 'user', content: 'launch ui' }], max_tokens: 3 });
      assert.ok(r.choices[0].message.content.length > 0);
      const page = await get(p.urls.ui);
      assert.equal(page.status, 200);
      assert.match(page.headers.get('content-security-policy') ?? '', /script-src 'self'/);
      const traces = await pollUntil(async () => {
        const t = JSON.parse((await get(`${p.urls.adminUrl}/api/v1/traces?q=${encodeURIComponent('launch ui')}`)).text).traces;
        return t.length === 1 ? t : null;
      }, { timeoutMs: 10000 });
      assert.equal(traces[0].model, MODEL);
      assert.equal(JSON.parse((await get(`${p.urls.adminUrl}/api/v1/metrics`)).text).source, 'agent');
      assert.ok(JSON.parse((await get(`${p.urls.adminUrl}/api/v1/config`)).text).keys.length > 10);
    } finally {
      const exit = await p.stop();
      assert.equal(exit.code, 0, p.describe());
    }
  });

  test('user-set flags are kept, not duplicated', async () => {
    const argsFile = path.join(tmp.dir, 'vllm-args-2.txt');
    const p = await launch((port) => ['vllm', 'serve', MODEL, `--port=${port}`, '--host=127.0.0.1', '--otlp-traces-endpoint', rx.endpoint, '--enable-prompt-tokens-details'], {
      env: { LAUNCH_TEST_ARGS: argsFile, OTEL_SERVICE_NAME: 'users-service', OTEL_BSP_SCHEDULE_DELAY: '5000' },
    });
    try {
      assert.match(p.line, /added nothing/);
      await waitHealthy(p.url);
      const engineArgs = fs.readFileSync(argsFile, 'utf8');
      assert.equal(engineArgs.match(/--otlp-traces-endpoint/g).length, 1, engineArgs);
      assert.equal(engineArgs.match(/--enable-prompt-tokens-details/g).length, 1, engineArgs);
      assert.ok(engineArgs.includes(rx.endpoint), engineArgs);
    } finally {
      await p.stop();
    }
  });

  test('503 with a JSON error until the engine is healthy', async () => {
    const p = await launch((port) => ['vllm', 'serve', MODEL, '--host', '127.0.0.1', '--port', String(port)], { env: { LAUNCH_TEST_DELAY: '2' } });
    try {
      const r = await get(`${p.url}/v1/models`);
      assert.equal(r.status, 503, r.text);
      assert.equal(JSON.parse(r.text).error.code, 503);
      await waitHealthy(p.url);
    } finally {
      await p.stop();
    }
  });

  test('the engine dying mid-load: logged, and launch exits with its code', async () => {
    const p = await launch((port) => ['vllm', 'serve', MODEL, '--host', '127.0.0.1', '--port', String(port)], { env: { LAUNCH_TEST_SPEED: '1' } });
    await waitHealthy(p.url);
    const client = openaiClient(p.url, { maxRetries: 0 });
    const load = Array.from({ length: 6 }, (_, i) => client.chat.completions.create({ model: MODEL, messages: [{ role: 'user', content: `q${i}` }], max_tokens: 2000, ignore_eos: true }).catch((e) => e));
    await new Promise((r) => setTimeout(r, 300));
    const engines = execFileSync('pgrep', ['-P', String(p.child.pid)]).toString().trim().split('\n');
    assert.equal(engines.length, 1, 'one engine child');
    process.kill(Number(engines[0]), 'SIGKILL');
    const exit = await p.exited;
    assert.equal(exit.code, 137, p.describe());
    assert.match(p.stderr + p.stdout, /engine killed by signal 9.*unexpectedly/);
    const results = await Promise.all(load);
    assert.ok(results.some((x) => x instanceof Error), `in-flight requests fail rather than hang: ${JSON.stringify(results.map((x) => (x instanceof Error ? String(x) : x.choices?.[0]?.finish_reason)))}`);
  });

  test('an engine that fails at start: launch exits with the same code', async () => {
    const p = await launch((port) => ['vllm', 'serve', MODEL, '--port', String(port), '--host', '127.0.0.1'], { env: { LAUNCH_TEST_EXIT: '3' } });
    const exit = await p.exited;
    assert.equal(exit.code, 3, p.describe());
  });

  test('SIGINT is forwarded too', async () => {
    const p = await launch((port) => ['vllm', 'serve', MODEL, '--host', '127.0.0.1', '--port', String(port)]);
    await waitHealthy(p.url);
    p.child.kill('SIGINT');
    const exit = await p.exited;
    assert.equal(exit.code, 0, p.describe());
    assert.match(p.stderr + p.stdout, /SIGINT received; forwarding it to the engine/);
  });

  test('SIGTERM: forwarded, new connections refused, a stream in flight ends whole, then the drain and exit 0', async () => {
    // The engine drains too, as vLLM does with --shutdown-timeout.
    const p = await launch((port) => ['vllm', 'serve', MODEL, '--host', '127.0.0.1', '--port', String(port), '--shutdown-timeout', '30'], {
      agentArgs: ['--otlp-endpoint', rx.endpoint, '--otlp-protocol', 'grpc'],
      env: { LAUNCH_TEST_SPEED: '1' },
    });
    try {
      await waitHealthy(p.url);
      // 1,000 tokens take about 2.5 s at speed 1.
      const stream = await startRawStream(p.url, MODEL, 1000);
      p.child.kill('SIGTERM');
      assert.ok(await pollUntil(() => refused(p.url), { timeoutMs: 2000, intervalMs: 20 }), `the gateway refuses new connections at once\n${p.describe()}`);
      const { text, error } = await stream.rest;
      assert.equal(error, undefined, `the stream was cut: ${error}\n${p.describe()}`);
      const { chunks, done } = parseSse(text);
      assert.ok(done, 'the stream ends with [DONE]');
      assert.equal(contentDeltas(chunks), 1000);
      const exit = await exitOf(p, 20000);
      assert.equal(exit.code, 0, p.describe());
      assert.match(p.stderr + p.stdout, /SIGTERM received; forwarding it to the engine/);
      const entry = await rx.waitForSpan((s) => s.name === `chat ${MODEL}` && s.attributes['gen_ai.response.id'] === chunks[0].id, 5000);
      assert.notEqual(entry.status?.code, STATUS_CODE.ERROR);
    } finally {
      await p.stop();
    }
  });

  test('plugin off: the engine is started untouched and the gateway only forwards', async () => {
    const argsFile = path.join(tmp.dir, 'vllm-args-off.txt');
    const before = rx.spans.length;
    const p = await launch((port) => ['vllm', 'serve', MODEL, '--host', '127.0.0.1', '--port', String(port)], {
      agentArgs: ['--otlp-endpoint', rx.endpoint, '--otlp-protocol', 'grpc'],
      env: { LAUNCH_TEST_ARGS: argsFile, OTEL_INSTRUMENTATION_VLLM_ENABLED: 'false' },
    });
    try {
      assert.match(p.line, /plugin off/);
      await waitHealthy(p.url);
      assert.doesNotMatch(fs.readFileSync(argsFile, 'utf8'), /otlp/);
      const r = await openaiClient(p.url).chat.completions.create({ model: MODEL, messages: [{ role: 'user', content: 'x' }], max_tokens: 2 });
      assert.ok(r.id);
      await new Promise((res) => setTimeout(res, 800));
      assert.equal(rx.spans.slice(before).filter((s) => s.name === 'llm_request' || s.name === `chat ${MODEL}`).length, 0);
    } finally {
      await p.stop();
    }
  });
});

describe('launch: SGLang', () => {
  let rx;
  before(async () => {
    rx = await startGrpcReceiver();
  });
  after(async () => rx?.close());

  test('the console\'s log switches that were set become SGLang\'s flags; the user\'s own win', async () => {
    const argsFile = path.join(tmp.dir, 'sglang-log-args.txt');
    const consoleFile = path.join(tmp.dir, 'sglang-log-console.yaml');
    fs.writeFileSync(consoleFile, [
      'apsara.apm.inference.sglang.log_requests.enabled: true',
      'apsara.apm.inference.sglang.log_requests.level: 3',
      'apsara.apm.inference.sglang.logging.level: WARNING',
    ].join('\n') + '\n');
    const p = await launch((port) => ['python3', '-m', 'sglang.launch_server', '--model-path', MODEL, '--port', String(port), '--log-requests-level', '1'], {
      agentArgs: ['--console-file', consoleFile],
      env: { LAUNCH_TEST_ARGS: argsFile },
    });
    try {
      await waitHealthy(p.url);
      assert.match(p.line, /--log-requests\b/);
      assert.match(p.line, /--log-level warning/);
      const engineArgs = fs.readFileSync(argsFile, 'utf8');
      assert.match(engineArgs, /--log-requests\b/);
      assert.match(engineArgs, /--log-level warning/);
      assert.equal(engineArgs.match(/--log-requests-level/g).length, 1, 'the user\'s --log-requests-level stays, alone');
      assert.match(engineArgs, /--log-requests-level 1/);
    } finally {
      const exit = await p.stop();
      assert.equal(exit.code, 0, p.describe());
    }
  });

  test('python3 -m sglang.launch_server: trace, metrics and flags added', async () => {
    const argsFile = path.join(tmp.dir, 'sglang-args.txt');
    const p = await launch((port) => ['python3', '-m', 'sglang.launch_server', '--model-path', MODEL, '--port', String(port)], {
      agentArgs: ['--otlp-endpoint', rx.endpoint, '--otlp-protocol', 'grpc'],
      env: { LAUNCH_TEST_ARGS: argsFile, SGLANG_OTLP_EXPORTER_SCHEDULE_DELAY_MILLIS: '50' },
    });
    try {
      assert.equal(p.url, `http://127.0.0.1:${p.port}`, 'SGLang\'s default host is 127.0.0.1');
      for (const flag of ['--enable-trace', '--otlp-traces-endpoint 127.0.0.1:', '--enable-metrics', '--enable-cache-report', 'SGLANG_TRACE_LEVEL=3'])
        assert.ok(p.line.includes(flag), `${flag} in: ${p.line}`);
      await waitHealthy(p.url);
      const r = await openaiClient(p.url).chat.completions.create({ model: MODEL, messages: [{ role: 'user', content: 'hello' }], max_tokens: 3 });
      assert.ok(r.choices[0].message.content.length > 0);
      const entry = await rx.waitForSpan((s) => s.name === `chat ${MODEL}`, 10000);
      const native = await rx.waitForSpan((s) => s.traceId === entry.traceId && s.spanId !== entry.spanId, 10000);
      assert.equal(native.resource['service.name'], entry.resource['service.name'], 'one application');
      await pollUntil(async () => metricSum(parsePrometheus((await get(`${p.adminUrl}/metrics`)).text), 'sglang_log_count_total') > 0, { timeoutMs: 5000 });
    } finally {
      const exit = await p.stop();
      assert.equal(exit.code, 0, p.describe());
    }
  });
});
