// Helpers for the tests of a graceful stop: a long stream read raw through the official
// `openai` client, its SSE events, whether a port refuses connections, a bounded wait for exit.
import assert from 'node:assert/strict';
import net from 'node:net';

import { openaiClient } from './util.mjs';

/** Whether a new TCP connection to `url` is refused. */
export function refused(url) {
  const { hostname, port } = new URL(url);
  return new Promise((resolve) => {
    const s = net.connect({ host: hostname, port: Number(port) });
    s.once('connect', () => {
      s.destroy();
      resolve(false);
    });
    s.once('error', (e) => resolve(e.code === 'ECONNREFUSED'));
  });
}

/**
 * Starts a streamed chat completion of `maxTokens` tokens through the official client and
 * returns its raw body reader once the first bytes have arrived (the request is in flight).
 */
export async function startRawStream(baseUrl, model, maxTokens) {
  const client = openaiClient(baseUrl, { timeout: 120000 });
  const response = await client.chat.completions
    .create({ model, messages: [{ role: 'user', content: 'Tell a very long story.' }], max_tokens: maxTokens, stream: true, ignore_eos: true })
    .asResponse();
  assert.equal(response.status, 200);
  const reader = response.body.getReader();
  const decoder = new TextDecoder();
  let text = '';
  const first = await reader.read();
  text += decoder.decode(first.value, { stream: true });
  // The rest of the body: its text, or the error that cut it.
  const rest = (async () => {
    try {
      for (;;) {
        const { done, value } = await reader.read();
        if (done) return { text };
        text += decoder.decode(value, { stream: true });
      }
    } catch (error) {
      return { text, error };
    }
  })();
  return { rest };
}

/** The data events of an SSE body: parsed chunks, and whether it ended with [DONE]. */
export function parseSse(text) {
  const data = text.split('\n').filter((l) => l.startsWith('data: ')).map((l) => l.slice(6));
  const done = data.at(-1) === '[DONE]';
  const chunks = data.filter((d) => d !== '[DONE]').map((d) => JSON.parse(d));
  return { chunks, done };
}

export const contentDeltas = (chunks) => chunks.filter((c) => c.choices?.[0]?.delta?.content).length;

/** Waits (bounded) for the process to exit; returns its exit status. */
export async function exitOf(proc, timeoutMs) {
  const timeout = new Promise((_, reject) =>
    setTimeout(() => reject(new Error(`still running ${timeoutMs} ms after the signal\n${proc.describe()}`)), timeoutMs).unref());
  return Promise.race([proc.exited, timeout]);
}
