// Assertions on decoded entry spans (spec telemetry-model.md M1, M2.1), attribute by attribute,
// with messages that show the whole span when something is off.
import assert from 'node:assert/strict';

import { SPAN_KIND, STATUS_CODE } from './otlp.mjs';

function show(span) {
  const { raw, ...rest } = span;
  return JSON.stringify(rest, (k, v) => (typeof v === 'bigint' ? v.toString() : v), 2);
}

/** Asserts attribute `key` is present with exactly `value` (deep) and, if given, OTLP `type`. */
export function assertAttr(span, key, value, type) {
  assert.ok(key in span.attributes, `span "${span.name}" lacks attribute ${key}\n${show(span)}`);
  assert.deepEqual(span.attributes[key], value, `attribute ${key} of span "${span.name}"\n${show(span)}`);
  if (type) assert.equal(span.attributeTypes[key], type, `OTLP value type of ${key}\n${show(span)}`);
}

/** Asserts attribute `key` is absent. */
export function assertNoAttr(span, key) {
  assert.ok(!(key in span.attributes), `span "${span.name}" should not carry ${key}\n${show(span)}`);
}

/** Asserts the M1 conventions and the identity attributes of an entry span. */
export function assertEntrySpan(span, { name, spanKind, operation, model }) {
  assert.equal(span.name, name, `span name\n${show(span)}`);
  assert.equal(span.kind, SPAN_KIND.INTERNAL, `span kind must be INTERNAL\n${show(span)}`);
  assert.match(span.traceId, /^[0-9a-f]{32}$/);
  assert.notEqual(span.traceId, '0'.repeat(32));
  assert.match(span.spanId, /^[0-9a-f]{16}$/);
  assert.notEqual(span.spanId, '0'.repeat(16));
  assert.ok(span.endTimeUnixNano >= span.startTimeUnixNano, `end before start\n${show(span)}`);
  assertAttr(span, 'gen_ai.span.kind', spanKind, 'string');
  assertAttr(span, 'gen_ai.operation.name', operation, 'string');
  assertAttr(span, 'gen_ai.request.model', model, 'string');
}

/** Asserts the span started and ended within [t0Ms, t1Ms] (wall clock, 1 s slack). */
export function assertWithin(span, t0Ms, t1Ms) {
  const start = Number(span.startTimeUnixNano / 1000000n);
  const end = Number(span.endTimeUnixNano / 1000000n);
  assert.ok(start >= t0Ms - 1000 && end <= t1Ms + 1000, `span times [${start}, ${end}] ms outside request window [${t0Ms}, ${t1Ms}]\n${show(span)}`);
}

/** Asserts the span's usage attributes equal an OpenAI `usage` object, as ints. */
export function assertUsage(span, usage) {
  assert.ok(usage, 'reference usage missing');
  assertAttr(span, 'gen_ai.usage.input_tokens', usage.prompt_tokens, 'int');
  assertAttr(span, 'gen_ai.usage.output_tokens', usage.completion_tokens, 'int');
  assertAttr(span, 'gen_ai.usage.total_tokens', usage.total_tokens, 'int');
}

export function assertOk(span) {
  assert.notEqual(span.status.code, STATUS_CODE.ERROR, `span status should not be ERROR\n${show(span)}`);
  assertNoAttr(span, 'error.type');
}

export function assertError(span) {
  assert.equal(span.status.code, STATUS_CODE.ERROR, `span status should be ERROR\n${show(span)}`);
  assert.ok(typeof span.attributes['error.type'] === 'string' && span.attributes['error.type'].length > 0, `error.type missing\n${show(span)}`);
}

/** Parses a JSON-string attribute (gen_ai.input.messages / gen_ai.output.messages). */
export function jsonAttr(span, key) {
  assert.ok(key in span.attributes, `span "${span.name}" lacks ${key}\n${show(span)}`);
  assert.equal(span.attributeTypes[key], 'string', `${key} must be a JSON string`);
  try {
    return JSON.parse(span.attributes[key]);
  } catch (e) {
    assert.fail(`${key} is not valid JSON (${e.message}): ${span.attributes[key]}`);
  }
}

/** GenAI text message {role, parts:[{type:'text', content}]} (plus finish_reason for output). */
export function textMessage(role, content, finishReason) {
  const m = { role, parts: [{ type: 'text', content }] };
  if (finishReason !== undefined) m.finish_reason = finishReason;
  return m;
}

export { show as showSpan };
