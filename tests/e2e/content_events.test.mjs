// End-to-end: content capture as log events (spec C2, capture strategy `event`), capture off,
// and the agent's own request log lines (C3/C4 request logs).
//
// The agent sits in front of `infertel sim --engine vllm`; the official openai client sends the
// requests; the OTLP receivers decode logs and spans with the official protos over gRPC,
// HTTP/protobuf and HTTP/JSON; the embedded store is read with `infertel spans --logs --json`.
import assert from 'node:assert/strict';
import fs from 'node:fs';
import path from 'node:path';
import { after, before, describe, test } from 'node:test';

import { startGrpcReceiver, startHttpReceiver } from './lib/otlp.mjs';
import { storeLogs } from './lib/store.mjs';
import { pollUntil, runCommand, runInfertel, startAgent, startSim, stopAll, tempDir } from './lib/proc.mjs';
import { collectStream, openaiClient, randomSpanId, randomTraceId } from './lib/util.mjs';

const MODEL = 'e2e-events/model-1b';
const EVENT = 'gen_ai.client.inference.operation.details';
const SYSTEM = 'You answer in one short sentence.';

const isEventFor = (span) => (l) => l.attributes['event.name'] === EVENT && l.traceId === span.traceId && l.spanId === span.spanId;

// The entry span of a response, and the event sharing its trace id and span id.
async function spanAndEvent(receiver, responseId) {
  const span = await receiver.waitForSpan((s) => s.attributes['gen_ai.response.id'] === responseId && s.name.startsWith('chat '));
  const [event] = await receiver.waitForLogs(isEventFor(span));
  return { span, event };
}

function assertEventMatchesResponse(event, span, r, content) {
  assert.equal(event.attributes['event.name'], EVENT);
  assert.equal(event.traceId, span.traceId);
  assert.equal(event.spanId, span.spanId);
  assert.match(event.traceId, /^[0-9a-f]{32}$/);
  assert.equal(event.severityNumber, 9); // INFO
  assert.ok(event.timeUnixNano >= span.startTimeUnixNano && event.timeUnixNano <= span.endTimeUnixNano + 1000000n);
  assert.equal(event.attributes['gen_ai.operation.name'], 'chat');
  assert.equal(event.attributes['gen_ai.request.model'], MODEL);
  assert.equal(event.attributes['gen_ai.response.id'], r.id);
  assert.equal(event.attributes['gen_ai.response.model'], r.model);
  assert.equal(event.attributes['gen_ai.usage.input_tokens'], r.usage.prompt_tokens);
  assert.equal(event.attributes['gen_ai.usage.output_tokens'], r.usage.completion_tokens);

  // Structured values on events, never JSON strings.
  assert.equal(event.attributeTypes['gen_ai.input.messages'], 'array<kvlist>');
  assert.equal(event.attributeTypes['gen_ai.output.messages'], 'array<kvlist>');
  const input = event.attributes['gen_ai.input.messages'];
  assert.deepEqual(input, [
    { role: 'system', parts: [{ type: 'text', content: SYSTEM }] },
    { role: 'user', parts: [{ type: 'text', content: content }] },
  ]);
  const output = event.attributes['gen_ai.output.messages'];
  assert.equal(output.length, 1);
  assert.equal(output[0].role, 'assistant');
  assert.equal(output[0].parts[0].type, 'text');
  assert.equal(output[0].parts[0].content, r.choices[0].message.content);
  assert.equal(output[0].finish_reason, r.choices[0].finish_reason === 'length' ? 'length' : 'stop');
}

for (const [protocol, spelling] of [
  ['grpc', 'event'],
  ['http/protobuf', 'EVENT_ONLY'],
  ['http/json', 'Event'],
]) {
  describe(`capture strategy ${spelling} over OTLP ${protocol}`, () => {
    let receiver;
    let sim;
    let agent;
    let tmp;
    let db;
    let client;

    before(async () => {
      tmp = tempDir();
      db = path.join(tmp.dir, 'events.db');
      receiver = protocol === 'grpc' ? await startGrpcReceiver() : await startHttpReceiver();
      sim = await startSim({ model: MODEL, seed: 11, speed: 20 });
      agent = await startAgent({
        upstream: sim.url,
        otlp: { endpoint: receiver.endpoint, protocol },
        store: db,
        env: { OTEL_INSTRUMENTATION_GENAI_MESSAGE_CONTENT_CAPTURE_STRATEGY: spelling, OTEL_SERVICE_NAME: 'e2e-events' },
      });
      receiver.diag = () => agent.describe();
      client = openaiClient(agent.url);
    });

    after(async () => {
      await stopAll(agent, sim);
      await receiver?.close();
      tmp?.cleanup();
    });

    test('content leaves the span and arrives as a structured log event with its ids', async () => {
      const traceId = randomTraceId();
      const content = 'Name one colour.';
      const r = await client.chat.completions.create(
        { model: MODEL, messages: [{ role: 'system', content: SYSTEM }, { role: 'user', content }], max_tokens: 8 },
        { headers: { traceparent: `00-${traceId}-${randomSpanId()}-01` } },
      );
      const { span, event } = await spanAndEvent(receiver, r.id);
      assert.equal(span.traceId, traceId);
      assert.equal(span.attributes['gen_ai.input.messages'], undefined, 'no content on the span');
      assert.equal(span.attributes['gen_ai.output.messages'], undefined, 'no content on the span');
      assert.equal(span.attributes['gen_ai.usage.input_tokens'], r.usage.prompt_tokens);
      assertEventMatchesResponse(event, span, r, content);
      assert.equal(event.attributes['gen_ai.request.max_tokens'], 8);
      assert.equal(event.attributes['gen_ai.request.stream'], false);
      assert.equal(event.resource['service.name'], 'e2e-events');
      assert.equal(event.scope.name, 'infertel');
      assert.equal(event.transport, protocol === 'grpc' ? 'grpc' : protocol);
    });

    test('a stream gets the event too, with time to first chunk', async () => {
      const stream = await client.chat.completions.create({
        model: MODEL,
        messages: [{ role: 'system', content: SYSTEM }, { role: 'user', content: 'Count to three.' }],
        max_tokens: 12,
        stream: true,
      });
      const chunks = await collectStream(stream);
      const id = chunks[0].id;
      const text = chunks.map((c) => c.choices?.[0]?.delta?.content ?? '').join('');
      const { span, event } = await spanAndEvent(receiver, id);
      assert.equal(span.attributes['gen_ai.output.messages'], undefined);
      assert.equal(event.attributes['gen_ai.request.stream'], true);
      assert.equal(event.attributes['gen_ai.output.messages'][0].parts[0].content, text);
      const ttfc = event.attributes['gen_ai.response.time_to_first_chunk'];
      assert.equal(event.attributeTypes['gen_ai.response.time_to_first_chunk'], 'double');
      assert.ok(ttfc > 0 && ttfc < 30, `time_to_first_chunk ${ttfc}`);
      assert.ok(event.attributes['gen_ai.usage.output_tokens'] > 0);
    });

    test('the embedded store gets the same event in its logs table', async () => {
      const content = 'Store this event.';
      const r = await client.chat.completions.create({ model: MODEL, messages: [{ role: 'system', content: SYSTEM }, { role: 'user', content }], max_tokens: 5 });
      const { span } = await spanAndEvent(receiver, r.id);
      const rows = await pollUntil(async () => {
        try {
          const x = await storeLogs(db, { trace: span.traceId, name: EVENT });
          return x.length ? x : null;
        } catch {
          return null; // the table may not exist yet
        }
      }, { timeoutMs: 10000, intervalMs: 100 });
      assert.ok(rows, `no event row for trace ${span.traceId} in ${db}\n${agent.describe()}`);
      assert.equal(rows.length, 1);
      assert.equal(rows[0].span_id, span.spanId);
      const attrs = rows[0].attributes;
      assert.equal(attrs['gen_ai.response.id'], r.id);
      assert.deepEqual(attrs['gen_ai.input.messages'][1], { role: 'user', parts: [{ type: 'text', content }] });
    });
  });
}

describe('capture strategy SPAN_AND_EVENT, and capture off', () => {
  let receiver;
  let sim;
  let both;
  let off;

  before(async () => {
    receiver = await startGrpcReceiver();
    sim = await startSim({ model: MODEL, seed: 12, speed: 20 });
    const otlp = { endpoint: receiver.endpoint, protocol: 'grpc' };
    both = await startAgent({ upstream: sim.url, otlp, env: { OTEL_INSTRUMENTATION_GENAI_MESSAGE_CONTENT_CAPTURE_STRATEGY: 'SPAN_AND_EVENT' } });
    off = await startAgent({
      upstream: sim.url,
      otlp,
      env: { OTEL_INSTRUMENTATION_GENAI_MESSAGE_CONTENT_CAPTURE_STRATEGY: 'event', OTEL_INSTRUMENTATION_GENAI_CAPTURE_MESSAGE_CONTENT: 'false' },
    });
    receiver.diag = () => `${both.describe()}\n${off.describe()}`;
  });

  after(async () => {
    await stopAll(both, off, sim);
    await receiver?.close();
  });

  test('SPAN_AND_EVENT puts content on the span and in the event', async () => {
    const content = 'Both places.';
    const r = await openaiClient(both.url).chat.completions.create({ model: MODEL, messages: [{ role: 'system', content: SYSTEM }, { role: 'user', content }], max_tokens: 6 });
    const { span, event } = await spanAndEvent(receiver, r.id);
    assert.equal(span.attributeTypes['gen_ai.input.messages'], 'string');
    assert.deepEqual(JSON.parse(span.attributes['gen_ai.input.messages']), event.attributes['gen_ai.input.messages']);
    assert.deepEqual(JSON.parse(span.attributes['gen_ai.output.messages']), event.attributes['gen_ai.output.messages']);
    assertEventMatchesResponse(event, span, r, content);
  });

  test('capture off keeps the entry span, without content and without an event', async () => {
    const r = await openaiClient(off.url).chat.completions.create({ model: MODEL, messages: [{ role: 'user', content: 'Secret words.' }], max_tokens: 6 });
    const span = await receiver.waitForSpan((s) => s.attributes['gen_ai.response.id'] === r.id);
    assert.equal(span.name, `chat ${MODEL}`, 'the chat entry span is kept (unlike the documented probe)');
    assert.equal(span.attributes['gen_ai.input.messages'], undefined);
    assert.equal(span.attributes['gen_ai.output.messages'], undefined);
    assert.equal(span.attributes['gen_ai.usage.output_tokens'], r.usage.completion_tokens);
    // A later request through the other agent proves the logs pipeline has moved on since.
    const later = await openaiClient(both.url).chat.completions.create({ model: MODEL, messages: [{ role: 'user', content: 'Later.' }], max_tokens: 3 });
    await spanAndEvent(receiver, later.id);
    await new Promise((res) => setTimeout(res, 300));
    assert.equal(receiver.logs.filter((l) => l.traceId === span.traceId).length, 0, 'no event for a request whose capture was off');
    for (const l of receiver.logs) assert.ok(!JSON.stringify(l.attributes).includes('Secret words'));
  });
});

// The request log keys have no environment variable (console only). This part needs the
// console file (`--console-file`); without it the test is skipped, and the unit tests
// (tests/unit/gateway/request_log_test.cc) cover the same behaviour through a config snapshot.
describe('request log lines on the agent stderr (console file)', () => {
  let sim;
  let agent;
  let tmp;
  let consoleFile;
  let supported = false;

  before(async () => {
    const help = await runInfertel(['agent', '--help']);
    supported = help.stdout.includes('--console-file');
    if (!supported) return;
    tmp = tempDir();
    consoleFile = path.join(tmp.dir, 'console.json');
    fs.writeFileSync(
      consoleFile,
      JSON.stringify({ 'apsara.apm.inference.vllm.log_requests.enabled': true, 'apsara.apm.inference.vllm.log_trace_context.enabled': true }),
    );
    sim = await startSim({ model: MODEL, seed: 13, speed: 20 });
    agent = await startAgent({ upstream: sim.url, extra: ['--console-file', consoleFile] });
  });

  after(async () => {
    await stopAll(agent, sim);
    tmp?.cleanup();
  });

  test('received, dispatched and finished lines with request id, tokens, timings and trace context; switched off live', async (t) => {
    if (!supported) {
      t.skip('this build has no --console-file: request log lines are covered by unit_gateway (request_log_test.cc)');
      return;
    }
    const traceId = randomTraceId();
    const client = openaiClient(agent.url);
    const r = await client.chat.completions.create(
      { model: MODEL, messages: [{ role: 'user', content: 'Log me.' }], max_tokens: 4 },
      { headers: { traceparent: `00-${traceId}-${randomSpanId()}-01` } },
    );
    // The engine named the request after the X-Request-Id the agent sent: <trace id>-<random>.
    const m = new RegExp(`^chatcmpl-(${traceId}-[0-9a-f]{16})$`).exec(r.id);
    assert.ok(m, `response id ${r.id} should carry the trace id`);
    const rid = m[1];
    const lines = await pollUntil(() => {
      const found = agent.stderr.split('\n').filter((l) => l.includes(rid));
      return found.length >= 3 ? found : null;
    }, { timeoutMs: 5000 });
    assert.ok(lines, `no request log lines for ${rid}\n${agent.describe()}`);
    const prefix = new RegExp(`\\[trace_id=${traceId} span_id=[0-9a-f]{16}\\] `);
    for (const l of lines) assert.match(l, prefix);
    assert.match(lines[0], new RegExp(`Received request ${rid}: operation=chat model=${MODEL} stream=false max_tokens=4`));
    assert.match(lines[1], new RegExp(`Dispatched request ${rid} to vllm upstream default`));
    assert.match(
      lines[2],
      new RegExp(`Finished request ${rid}: status=200 model=${MODEL} response_id=${r.id} finish_reasons=\\S+ input_tokens=${r.usage.prompt_tokens} output_tokens=${r.usage.completion_tokens} e2e=\\d+\\.\\d{3}s`),
    );
    assert.ok(!agent.stderr.includes('Log me.'), 'no content in request logs');

    // Live: switched off in the console file, later requests log nothing.
    fs.writeFileSync(consoleFile, JSON.stringify({ 'apsara.apm.inference.vllm.log_requests.enabled': false }));
    const quiet = await pollUntil(async () => {
      const x = await client.chat.completions.create({ model: MODEL, messages: [{ role: 'user', content: 'Quiet?' }], max_tokens: 2 });
      const id = x.id.replace(/^chatcmpl-/, '');
      await new Promise((res) => setTimeout(res, 100));
      return agent.stderr.includes(id) ? null : id;
    }, { timeoutMs: 8000, intervalMs: 200 });
    assert.ok(quiet, `request logs still on after the console file switched them off\n${agent.describe()}`);
  });
});
