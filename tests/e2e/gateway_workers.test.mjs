// End-to-end: the gateway starts one worker per CPU the agent may run on, at most two, unless
// --threads says otherwise. Two workers confined to one CPU take turns at the scheduler's tick
// once it is saturated (docs/performance-history.md), so an agent under `taskset -c 0` must run
// one. The official openai client gets its answer through each agent.
import assert from 'node:assert/strict';
import { availableParallelism } from 'node:os';
import { after, before, test } from 'node:test';

import { settledGatewayWorkers, startAgent, startSim, stopAll } from './lib/proc.mjs';
import { openaiClient } from './lib/util.mjs';

let sim;
const agents = [];
before(async () => {
  sim = await startSim({});
});
after(async () => stopAll(...agents, sim));

async function assertWorkers(agent, want) {
  assert.equal(await settledGatewayWorkers(agent.child.pid, want), want);
}

async function answers(agent) {
  const r = await openaiClient(agent.url).chat.completions.create({
    model: 'e2e-model',
    messages: [{ role: 'user', content: 'hello' }],
    max_tokens: 4,
  });
  assert.equal(r.object, 'chat.completion');
  assert.ok(r.usage.completion_tokens > 0);
}

test('an agent confined to one CPU runs one gateway worker', async () => {
  const a = await startAgent({ upstream: sim.url, wrap: ['taskset', '-c', '0'] });
  agents.push(a);
  await assertWorkers(a, 1);
  await answers(a);
});

test('on two CPUs or more, two workers by default; --threads sets any number', async (t) => {
  if (availableParallelism() < 2) return t.skip('one CPU here');
  const byDefault = await startAgent({ upstream: sim.url });
  agents.push(byDefault);
  await assertWorkers(byDefault, 2);
  await answers(byDefault);
  const three = await startAgent({ upstream: sim.url, extra: ['--threads', '3'], wrap: ['taskset', '-c', '0'] });
  agents.push(three);
  await assertWorkers(three, 3);
  await answers(three);
});
