// End-to-end: `infertel sim --engine sglang` against real peers. The official openai client
// talks to the simulator directly; native spans are received by an OTLP receiver decoding with
// the official protos; /metrics is linted by promtool. What is checked is SGLang's own surface
// (docs/architecture.md, "The simulator"; facts/sglang.md §1-§4).
import assert from 'node:assert/strict';
import { after, before, describe, test } from 'node:test';

import { STATUS_CODE, SPAN_KIND, startGrpcReceiver, startHttpReceiver } from './lib/otlp.mjs';
import { pollUntil, runCommand, startInfertel, stopAll } from './lib/proc.mjs';
import { collectStream, get, metricSum, openaiClient, parsePrometheus, postJson, randomSpanId, randomTraceId } from './lib/util.mjs';

const MODEL = 'e2e-org/sglang-sim-8b';
const PROMTOOL = '/usr/bin/promtool';
const procs = [];

/** `infertel sim --engine sglang` with SGLang's own flags; resolves the Proc with `url`. */
async function startSglang(extra = [], env = {}) {
  const p = await startInfertel(
    ['sim', '--engine', 'sglang', '--host', '127.0.0.1', '--port', '0', '--model-path', MODEL, '--seed', '7', '--speed', '20', ...extra],
    { name: 'sglang-sim', env, waitFor: { url: /^infertel sim: listening on (http:\/\/[0-9.]+:[0-9]+)/ } },
  );
  procs.push(p);
  p.url = p.urls.url;
  return p;
}

const chat = (extra = {}) => ({ model: MODEL, messages: [{ role: 'user', content: 'Name three prime numbers.' }], max_tokens: 8, ...extra });
const isRid = (id) => /^[0-9a-f]{32}$/.test(id);

after(async () => {
  await stopAll(...procs);
});

describe('OpenAI endpoints with the official client', () => {
  let sim;
  let client;
  before(async () => {
    sim = await startSglang(['--tool-call-parser', 'qwen25', '--reasoning-parser', 'qwen3', '--enable-cache-report']);
    client = openaiClient(sim.url);
  });

  test('chat and completions, streaming and not, with SGLang ids and usage', async () => {
    const r = await client.chat.completions.create(chat({ max_tokens: 6, ignore_eos: true }));
    assert.ok(isRid(r.id), `SGLang ids are bare uuid hex: ${r.id}`);
    assert.equal(r.object, 'chat.completion');
    assert.equal(r.model, MODEL);
    assert.equal(r.usage.completion_tokens, 6);
    assert.equal(r.usage.total_tokens, r.usage.prompt_tokens + 6);
    assert.ok(r.usage.reasoning_tokens > 0, 'reasoning parser on: reasoning tokens counted');
    assert.equal(typeof r.choices[0].message.reasoning_content, 'string');
    assert.equal(r.choices[0].finish_reason, 'length');
    assert.equal(r.metadata.weight_version, 'default');

    const chunks = await collectStream(
      await client.chat.completions.create(chat({ stream: true, stream_options: { include_usage: true } })),
    );
    const ids = new Set(chunks.map((c) => c.id));
    assert.equal(ids.size, 1);
    assert.ok(isRid([...ids][0]));
    assert.equal(chunks[0].choices[0].delta.role, 'assistant');
    const usage = chunks.at(-1);
    assert.deepEqual(usage.choices, []);
    assert.ok(usage.usage.completion_tokens > 0);
    const fin = chunks.at(-2).choices[0];
    assert.ok(['stop', 'length'].includes(fin.finish_reason));
    assert.ok('matched_stop' in fin, 'SGLang adds matched_stop to the finish chunk');

    const c = await client.completions.create({ model: MODEL, prompt: 'Once upon a time', max_tokens: 5, n: 2, ignore_eos: true });
    assert.ok(isRid(c.id));
    assert.equal(c.choices.length, 2);
    assert.equal(c.usage.completion_tokens, 10);
    assert.equal(c.choices[0].matched_stop, null);

    // The client's rid becomes the response id; cached tokens are reported with the flag.
    const prompt = Array.from({ length: 90 }, (_, i) => `w${i}`).join(' ');
    await client.completions.create({ model: MODEL, prompt, max_tokens: 2 });
    const again = await client.completions.create({ model: MODEL, prompt, max_tokens: 2, rid: 'e2e-rid-cache' });
    assert.equal(again.id, 'e2e-rid-cache');
    assert.ok(again.usage.prompt_tokens_details.cached_tokens > 0, JSON.stringify(again.usage));
  });

  test('parallel tool calls, streamed and not', async () => {
    const tools = [
      { type: 'function', function: { name: 'get_weather', parameters: { type: 'object', properties: { city: { type: 'string' } } } } },
      { type: 'function', function: { name: 'get_time', parameters: { type: 'object', properties: { zone: { type: 'string' } } } } },
    ];
    const body = chat({ tools, max_tokens: 300 });
    const chunks = await collectStream(await client.chat.completions.create({ ...body, stream: true }));
    const calls = {};
    let finish;
    for (const c of chunks) {
      for (const ch of c.choices) {
        if (ch.finish_reason) finish = ch.finish_reason;
        for (const tc of ch.delta?.tool_calls ?? []) {
          calls[tc.index] ||= { id: '', name: '', args: '' };
          if (tc.id) calls[tc.index].id = tc.id;
          if (tc.function?.name) calls[tc.index].name = tc.function.name;
          calls[tc.index].args += tc.function?.arguments ?? '';
        }
      }
    }
    assert.equal(finish, 'tool_calls');
    assert.deepEqual(Object.keys(calls), ['0', '1']);
    assert.equal(calls[0].name, 'get_weather');
    assert.equal(calls[1].name, 'get_time');
    for (const c of Object.values(calls)) {
      assert.match(c.id, /^call_[0-9a-f]{24}$/);
      assert.equal(typeof JSON.parse(c.args), 'object');
    }
    const r = await client.chat.completions.create(body);
    assert.equal(r.choices[0].finish_reason, 'tool_calls');
    assert.equal(r.choices[0].message.tool_calls.length, 2);
    assert.equal(r.choices[0].message.content, null);
    const single = await client.chat.completions.create({ ...body, parallel_tool_calls: false });
    assert.equal(single.choices[0].message.tool_calls.length, 1);
  });

  test('native /generate, info endpoints and errors', async () => {
    const g = await postJson(`${sim.url}/generate`, { text: 'The capital of France is', sampling_params: { max_new_tokens: 4, ignore_eos: true }, rid: 'gen-e2e' });
    assert.equal(g.status, 200);
    assert.equal(g.json.meta_info.id, 'gen-e2e');
    assert.deepEqual(g.json.meta_info.finish_reason, { type: 'length', length: 4 });
    assert.equal(g.json.output_ids.length, 4);
    assert.equal(typeof g.json.meta_info.e2e_latency, 'number');
    const info = await get(`${sim.url}/server_info`);
    assert.equal(info.json.version, '0.5.20');
    assert.equal(info.json.stream_interval, 1);
    assert.equal(info.json.log_requests, false);
    assert.equal(info.json.enable_trace, false);
    assert.equal(info.json.tool_call_parser, 'qwen25');
    assert.deepEqual((await get(`${sim.url}/get_server_info`)).json.version, '0.5.20');
    assert.equal((await get(`${sim.url}/health`)).status, 200);
    assert.equal((await get(`${sim.url}/health_generate`)).status, 200);
    const models = await client.models.list();
    assert.equal(models.data[0].id, MODEL);
    assert.equal(models.data[0].owned_by, 'sglang');
    await assert.rejects(client.completions.create({ model: MODEL, prompt: 'x', max_tokens: 100000 }), (e) => {
      assert.equal(e.status, 400);
      assert.match(e.message, /maximum context length/);
      return true;
    });
    const bad = await postJson(`${sim.url}/generate`, { sampling_params: {} });
    assert.equal(bad.status, 400);
    assert.equal(typeof bad.json.error.message, 'string');
  });
});

describe('native spans', () => {
  let rx;
  let sim;
  before(async () => {
    rx = await startGrpcReceiver();
    const hostPort = rx.endpoint.replace('http://', '');
    sim = await startSglang(['--enable-trace', '--otlp-traces-endpoint', hostPort, '--tp', '2', '--stream-abort-delay-ms', '100'], {
      SGLANG_OTLP_EXPORTER_SCHEDULE_DELAY_MILLIS: '50',
    });
    rx.diag = () => sim.describe();
  });
  after(async () => {
    await rx?.close();
  });

  const traceOf = async (id) => {
    const root = await rx.waitForSpan((s) => s.name === ` Req ${id.slice(0, 8)}`);
    await new Promise((r) => setTimeout(r, 150));
    return { root, spans: rx.spans.filter((s) => s.traceId === root.traceId) };
  };

  test('a request span under the caller, thread spans per process and TP rank, stage spans', async () => {
    const traceId = randomTraceId();
    const parent = randomSpanId();
    const client = openaiClient(sim.url);
    const r = await client.chat.completions.create(chat({ max_tokens: 5, ignore_eos: true }), {
      headers: { traceparent: `00-${traceId}-${parent}-01`, tracestate: 'e2e=1' },
    });
    const { root, spans } = await traceOf(r.id);
    assert.equal(root.traceId, traceId);
    assert.equal(root.parentSpanId, parent);
    assert.equal(root.traceState, 'e2e=1');
    assert.equal(root.kind, SPAN_KIND.INTERNAL);
    assert.equal(root.scope.name, 'sglang server');
    assert.equal(root.resource['service.name'], 'sglang');
    assert.equal(root.attributes.rid, r.id);
    assert.equal(root.attributes['gen_ai.request.id'], r.id);
    assert.equal(root.attributes['gen_ai.usage.completion_tokens'], r.usage.completion_tokens);
    assert.equal(root.attributeTypes['gen_ai.usage.prompt_tokens'], 'int');
    assert.equal(root.attributeTypes['gen_ai.latency.e2e'], 'double');
    assert.equal(root.attributes['gen_ai.response.finish_reasons'], '["length"]');

    const threads = spans.filter((s) => s.parentSpanId === root.spanId);
    const names = threads.map((s) => s.name).sort();
    assert.equal(names.length, 3, names.join(' | '));
    assert.match(names[0], /^Scheduler \[TP 0\] {2}\[PP 0\] \(host:\S{1,8} \| pid:\d+\)$/);
    assert.match(names[1], /^Scheduler \[TP 1\] {2}\[PP 0\] \(host:\S{1,8} \| pid:\d+\)$/);
    assert.match(names[2], /^Tokenizer\(host:\S{1,8} \| pid:\d+\)$/);
    for (const t of threads) {
      assert.deepEqual(Object.keys(t.attributes).filter((k) => ['host_id', 'pid', 'thread_label'].includes(k)).sort(), ['host_id', 'pid', 'thread_label']);
    }
    const byName = (n) => spans.filter((s) => s.name === n);
    assert.equal(byName('tokenize').length, 1);
    assert.equal(byName('api_server_dispatch').length, 1);
    for (const n of ['request_process', 'prefill_waiting', 'prefill_forward', 'decode_forward']) assert.equal(byName(n).length, 2, n);
    assert.equal(byName('decode_loop').length, 2 * 4);
    for (const s of spans) assert.equal(s.traceId, traceId);
    // request_process links to the tokenizer's dispatch slice.
    const dispatch = byName('api_server_dispatch')[0];
    for (const rp of byName('request_process')) assert.deepEqual(rp.links.map((l) => l.spanId), [dispatch.spanId]);
    const loop = byName('decode_loop')[0];
    assert.equal(typeof loop.attributes.decode_ct, 'number');
    assert.ok(spans.some((s) => s.events.some((e) => e.name === 'schedule' && e.attributes.forward_mode === 'decode')));
  });

  test('the trace level changes live and shows in /_sim/stats', async () => {
    assert.equal((await get(`${sim.url}/set_trace_level?level=1`)).text, 'success');
    assert.equal((await get(`${sim.url}/_sim/stats`)).json.trace_level, 1);
    const client = openaiClient(sim.url);
    const r = await client.chat.completions.create(chat({ max_tokens: 3 }));
    const { spans } = await traceOf(r.id);
    assert.equal(spans.filter((s) => s.name === 'request_process').length, 0);
    assert.equal(spans.filter((s) => s.name === 'decode_loop').length, 0);
    assert.ok(spans.some((s) => s.name === 'prefill_forward'));
    assert.equal((await get(`${sim.url}/set_trace_level?level=3`)).status, 200);
    assert.equal((await get(`${sim.url}/_sim/stats`)).json.trace_level, 3);
    assert.equal((await get(`${sim.url}/set_trace_level`)).status, 400);
  });

  test('a client that goes away: the request is aborted, ERROR on the thread spans only', async () => {
    const client = openaiClient(sim.url);
    const stream = await client.chat.completions.create(chat({ max_tokens: 4000, ignore_eos: true, stream: true, rid: 'abortede2e0001' }));
    for await (const _ of stream) break; // eslint-disable-line no-unused-vars
    const root = await rx.waitForSpan((s) => s.name === ' Req abortede');
    const threads = await rx.waitForSpans((s) => s.traceId === root.traceId && s.name.startsWith('Scheduler'), 5000, { count: 2 });
    for (const t of threads) {
      assert.equal(t.status.code, STATUS_CODE.ERROR);
      assert.equal(t.attributes.type, 'abort');
      assert.equal(t.attributes.message, 'Aborted');
    }
    assert.notEqual(root.status.code, STATUS_CODE.ERROR);
    assert.equal(root.attributes['gen_ai.request.id'], undefined);
    assert.equal((await get(`${sim.url}/_sim/stats`)).json.client_aborts, 1);
  });

  test('OTLP/HTTP protobuf when OTEL_EXPORTER_OTLP_TRACES_PROTOCOL says so', async () => {
    const hrx = await startHttpReceiver();
    const s = await startSglang(['--enable-trace', '--otlp-traces-endpoint', `${hrx.endpoint}/v1/traces`], {
      OTEL_EXPORTER_OTLP_TRACES_PROTOCOL: 'http/protobuf',
      SGLANG_OTLP_EXPORTER_SCHEDULE_DELAY_MILLIS: '50',
    });
    try {
      const g = await postJson(`${s.url}/generate`, { text: 'hi', sampling_params: { max_new_tokens: 2 }, rid: 'httpproto01' });
      assert.equal(g.status, 200);
      const root = await hrx.waitForSpan((x) => x.name === ' Req httpprot');
      assert.equal(root.scope.name, 'sglang server');
    } finally {
      await s.stop();
      await hrx.close();
    }
  });
});

describe('/metrics and engine knobs', () => {
  test('/metrics exists only with --enable-metrics, passes promtool and follows traffic', async () => {
    const plain = await startSglang();
    assert.equal((await get(`${plain.url}/metrics`)).status, 404);
    await plain.stop();

    const sim = await startSglang(['--enable-metrics', '--decode-log-interval', '1']);
    const client = openaiClient(sim.url);
    const r1 = await client.chat.completions.create(chat({ max_tokens: 4, ignore_eos: true }));
    const chunks = await collectStream(await client.chat.completions.create(chat({ max_tokens: 4, ignore_eos: true, stream: true, stream_options: { include_usage: true } })));
    const res = await get(`${sim.url}/metrics`);
    assert.equal(res.status, 200);
    assert.match(res.headers.get('content-type'), /^text\/plain; version=0\.0\.4/);
    // SGLang's own names draw two lint remarks (':' in names; `*_tokens_histogram`); the text
    // must parse and nothing else may be reported.
    const lint = await runCommand(PROMTOOL, ['check', 'metrics'], { input: res.text });
    const accepted = [/metric names should not contain ':'/, /^sglang:\w+_tokens_histogram metric name should not include type 'histogram'/];
    const problems = (lint.stdout + lint.stderr).split('\n').filter((l) => l.trim() && !accepted.some((re) => re.test(l.trim())));
    assert.deepEqual(problems, [], `promtool: ${lint.stdout}${lint.stderr}`);
    const m = parsePrometheus(res.text);
    assert.equal(metricSum(m, 'sglang:num_requests_total'), 2);
    assert.equal(metricSum(m, 'sglang:num_requests_total', (l) => l.is_streaming === 'true'), 1);
    assert.equal(metricSum(m, 'sglang:prompt_tokens_total'), r1.usage.prompt_tokens + chunks.at(-1).usage.prompt_tokens);
    assert.equal(metricSum(m, 'sglang:generation_tokens_total'), 8);
    assert.equal(metricSum(m, 'sglang:e2e_request_latency_seconds_count'), 2);
    assert.equal(metricSum(m, 'sglang:inter_token_latency_seconds_count'), 3);
    assert.equal(metricSum(m, 'sglang:num_running_reqs'), 0);
    const g = m.find((s) => s.name === 'sglang:num_running_reqs');
    assert.deepEqual(Object.keys(g.labels).sort(), ['engine_type', 'model_name', 'moe_ep_rank', 'pp_rank', 'tp_rank']);
    assert.equal(g.labels.model_name, MODEL);
  });

  test('the 0.4.x label generation with --sglang-version', async () => {
    const sim = await startSglang(['--enable-metrics', '--sglang-version', '0.4.3']);
    const client = openaiClient(sim.url);
    // Streamed, so the tokenizer sees one output per token (per-token latency is observed).
    await collectStream(await client.completions.create({ model: MODEL, prompt: 'hello', max_tokens: 3, ignore_eos: true, stream: true }));
    const m = parsePrometheus((await get(`${sim.url}/metrics`)).text);
    const s = m.find((x) => x.name === 'sglang:prompt_tokens_total');
    assert.deepEqual(Object.keys(s.labels), ['model_name']);
    assert.ok(m.some((x) => x.name === 'sglang:time_per_output_token_seconds_count'));
    assert.ok(!m.some((x) => x.name === 'sglang:inter_token_latency_seconds_count'));
  });

  test('/configure_logging turns request logs on and off; /_sim/stats shows it', async () => {
    const sim = await startSglang();
    const client = openaiClient(sim.url);
    await client.chat.completions.create(chat({ max_tokens: 2, rid: 'log-off-1' }));
    assert.ok(!sim.stderr.includes('Receive: obj='));
    let r = await postJson(`${sim.url}/configure_logging`, { log_requests: true, log_requests_level: 2 });
    assert.equal(r.status, 200);
    let stats = (await get(`${sim.url}/_sim/stats`)).json;
    assert.equal(stats.log_requests, true);
    assert.equal(stats.log_requests_level, 2);
    await client.chat.completions.create(chat({ max_tokens: 2, rid: 'log-on-1' }));
    await pollUntil(() => sim.stderr.includes("Finish: obj=GenerateReqInput(text="));
    assert.match(sim.stderr, /^\[\d{4}-\d\d-\d\d \d\d:\d\d:\d\d\] Receive: obj=GenerateReqInput\(text='.*rid='log-on-1'/m);
    assert.match(sim.stderr, /Finish: obj=GenerateReqInput\(.*rid='log-on-1'.*out=\{'text': /);
    r = await postJson(`${sim.url}/configure_logging`, { log_requests: false });
    stats = (await get(`${sim.url}/_sim/stats`)).json;
    assert.equal(stats.log_requests, false);
    const before = sim.stderr.length;
    await client.chat.completions.create(chat({ max_tokens: 2, rid: 'log-off-2' }));
    await new Promise((res) => setTimeout(res, 100));
    assert.ok(!sim.stderr.slice(before).includes('log-off-2'));
  });
});
