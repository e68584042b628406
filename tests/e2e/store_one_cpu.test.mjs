// End-to-end: an agent allowed one CPU (`taskset -c 0`, or a cgroup's CPU quota of one CPU,
// which also leaves it one gateway worker) says at start-up that the store's writes pause in
// proportion to their work (pipeline/pacer.h), and still stores every entry span: the pauses
// shrink as the lane's queue fills, so they never make it drop. On two CPUs or more, and with
// no store, nothing is said.
import assert from 'node:assert/strict';
import fs from 'node:fs';
import path from 'node:path';
import { availableParallelism } from 'node:os';
import { after, before, test } from 'node:test';

import { pollUntil, settledGatewayWorkers, startAgent, startSim, stopAll, tempDir } from './lib/proc.mjs';
import { get, metricSum, openaiClient, parsePrometheus } from './lib/util.mjs';

const MODEL = 'e2e-one-cpu/model';
const LINE = 'infertel agent: one CPU for the agent (its affinity or its cgroup\'s quota): the store\'s writes pause in proportion to their work, to leave the core to the gateway';
const pacingLine = (agent) => agent.stdout.split('\n').find((l) => l.includes('pause in proportion'));

let sim;
let tmp;
before(async () => {
  tmp = tempDir('infertel-one-cpu-');
  sim = await startSim({ model: MODEL, seed: 9, speed: 1000 });
});
after(async () => {
  await stopAll(sim);
  tmp?.cleanup();
});

// Whether this machine holds the tests to one CPU's worth of time (a cgroup quota at its top:
// cgroup v2's cpu.max, v1's cpu.cfs_quota_us), which the agent counts as one CPU.
function quotaOfOneCpu() {
  const read = (f) => { try { return fs.readFileSync(f, 'utf8').trim(); } catch { return ''; } };
  const [q2, p2] = read('/sys/fs/cgroup/cpu.max').split(' ').map(Number);
  if (q2 > 0 && p2 > 0 && q2 <= p2) return true;
  const q1 = Number(read('/sys/fs/cgroup/cpu/cpu.cfs_quota_us'));
  const p1 = Number(read('/sys/fs/cgroup/cpu/cpu.cfs_period_us'));
  return q1 > 0 && p1 > 0 && q1 <= p1;
}

async function counters(agent) {
  const r = await get(`${agent.adminUrl}/metrics`);
  assert.equal(r.status, 200);
  return parsePrometheus(r.text);
}

test('confined to one CPU: said at start-up, and every entry span of a burst is stored', async () => {
  const agent = await startAgent({ upstream: sim.url, store: path.join(tmp.dir, 'one'), wrap: ['taskset', '-c', '0'] });
  try {
    assert.equal(pacingLine(agent), LINE);
    const store = (l) => l.exporter === 'store' && l.signal === 'traces';
    const client = openaiClient(agent.url);
    const N = 600;
    let next = 0;
    const worker = async () => {
      while (next < N) {
        const i = next++;
        await client.chat.completions.create({ model: MODEL, messages: [{ role: 'user', content: `q${i}` }], max_tokens: 2 });
      }
    };
    await Promise.all(Array.from({ length: 24 }, worker));
    const stored = await pollUntil(async () => {
      const s = await counters(agent);
      return metricSum(s, 'infertel_exporter_sent_items_total', store) >= N ? s : null;
    }, { timeoutMs: 20000, intervalMs: 100 });
    const last = await counters(agent);
    assert.ok(stored, `the store took ${metricSum(last, 'infertel_exporter_sent_items_total', store)} of ${N} entry spans\n${agent.describe()}`);
    assert.equal(metricSum(stored, 'infertel_exporter_sent_items_total', store), N);
    assert.equal(metricSum(stored, 'infertel_exporter_dropped_items_total', store), 0, 'nothing dropped');
  } finally {
    await agent.stop();
  }
});

// A cgroup with a quota of one CPU's worth (a container's CPU limit), on both CPUs: cgroup v2's
// cpu.max where the cpu controller is there, v1's cpu.cfs_quota_us otherwise. Null when this
// machine does not let the test make one (not root, no cpu controller).
function oneCpuCgroup() {
  const name = `infertel-e2e-${process.pid}`;
  const tryMake = (dir, files) => {
    try {
      fs.mkdirSync(dir);
    } catch {
      return null;
    }
    try {
      for (const [f, text] of files) fs.writeFileSync(path.join(dir, f), text);
      return dir;
    } catch {
      fs.rmdirSync(dir);
      return null;
    }
  };
  let controllers = '';
  try { controllers = fs.readFileSync('/sys/fs/cgroup/cgroup.controllers', 'utf8'); } catch { /* v1 */ }
  if (controllers.split(/\s+/).includes('cpu')) {
    try { fs.writeFileSync('/sys/fs/cgroup/cgroup.subtree_control', '+cpu'); } catch { /* already, or not allowed */ }
    return tryMake(`/sys/fs/cgroup/${name}`, [['cpu.max', '100000 100000']]);
  }
  return tryMake(`/sys/fs/cgroup/cpu/${name}`, [['cpu.cfs_period_us', '100000'], ['cpu.cfs_quota_us', '100000']]);
}

test("a cgroup's quota of one CPU counts as one CPU, whatever the affinity", async (t) => {
  if (availableParallelism() < 2 || quotaOfOneCpu()) return t.skip('one CPU here: nothing to tell apart');
  const cg = oneCpuCgroup();
  if (!cg) return t.skip('cannot make a cgroup with a CPU quota here (needs root and a cpu controller)');
  try {
    const wrap = ['sh', '-c', `echo $$ > ${cg}/cgroup.procs && exec "$@"`, 'sh'];
    const agent = await startAgent({ upstream: sim.url, store: path.join(tmp.dir, 'quota'), wrap });
    try {
      assert.equal(pacingLine(agent), LINE);
      // One gateway worker too: a second would only spend the quota sooner.
      assert.equal(await settledGatewayWorkers(agent.child.pid, 1), 1);
      await openaiClient(agent.url).chat.completions.create({ model: MODEL, messages: [{ role: 'user', content: 'quota' }], max_tokens: 2 });
    } finally {
      await agent.stop();
    }
  } finally {
    await pollUntil(() => {
      try {
        fs.rmdirSync(cg);
        return true;
      } catch {
        return false;  // the agent's exit not yet seen by the cgroup
      }
    }, { timeoutMs: 5000, intervalMs: 100 });
  }
});

test('on two CPUs, or with no store, nothing is said', async (t) => {
  let agent = await startAgent({ upstream: sim.url, store: false, wrap: ['taskset', '-c', '0'] });
  assert.equal(pacingLine(agent), undefined);
  await agent.stop();
  if (availableParallelism() < 2 || quotaOfOneCpu()) return t.skip('one CPU here');
  agent = await startAgent({ upstream: sim.url, store: path.join(tmp.dir, 'two') });
  try {
    assert.equal(pacingLine(agent), undefined);
    assert.match(agent.stdout, /infertel agent: store /);
  } finally {
    await agent.stop();
  }
});
