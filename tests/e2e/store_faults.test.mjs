// End-to-end: faults of the embedded store's file system (docs/store.md, "Faults"). The store's
// directory deleted, the disk full (a small tmpfs), the file system read-only: each is seen
// within seconds, logged once with its cause, counted (infertel_store_faults_total{cause},
// and what is dropped meanwhile in infertel_exporter_dropped_items_total), shown in /healthz
// as degraded, and mended without a restart once the cause goes: spans sent afterwards are in
// the store (`infertel traces --store`).
//
// The tmpfs tests run the agent in a mount namespace of its own (`unshare -m`), with the
// tmpfs mounted there before the agent starts, and change it with `nsenter`: the mounts go
// away with the agent. They need root (CAP_SYS_ADMIN) and are skipped, with the reason,
// without it.
import assert from 'node:assert/strict';
import { execFileSync } from 'node:child_process';
import fs from 'node:fs';
import path from 'node:path';
import { after, before, describe, test } from 'node:test';

import { INFERTEL_BIN, pollUntil, runCommand, startAgent, startSim, stopAll, tempDir } from './lib/proc.mjs';
import { openaiClient, randomSpanId, randomTraceId } from './lib/util.mjs';

const MODEL = 'e2e-faults/model';
const DETECT_MS = 5000; // "within seconds": the watcher looks every second
const STORE_DROPS = /^infertel_exporter_dropped_items_total\{exporter="store",signal="traces",reason="export_failed"\} (\d+)/m;

async function metric(agent, re) {
  const body = await (await fetch(`${agent.adminUrl}/metrics`)).text();
  const m = re.exec(body);
  return m ? Number(m[1]) : 0;
}

async function healthz(agent) {
  const r = await fetch(`${agent.adminUrl}/healthz`);
  return { status: r.status, body: await r.text() };
}

// One chat request in a trace of its own; resolves with the trace id.
async function chatTrace(agent) {
  const traceId = randomTraceId();
  await openaiClient(agent.url).chat.completions.create(
    { model: MODEL, messages: [{ role: 'user', content: 'fault?' }], max_tokens: 3 },
    { headers: { traceparent: `00-${traceId}-${randomSpanId()}-01` } },
  );
  return traceId;
}

// `infertel traces --store DB --trace ID`, in the agent's mount namespace when `ns` is its pid.
async function storedTrace(db, traceId, ns) {
  const args = ['traces', '--store', db, '--trace', traceId];
  const r = ns ? await runCommand('nsenter', ['-t', String(ns), '-m', '--', INFERTEL_BIN, ...args]) : await runCommand(INFERTEL_BIN, args);
  return r.code === 0 && r.stdout.includes(`chat ${MODEL}`) ? r.stdout : null;
}

const logOf = (agent) => agent.stdout + agent.stderr; // spdlog writes to stdout
const faultLines = (agent, cause) => logOf(agent).split('\n').filter((l) => l.includes(`: ${cause} (`) && l.includes('writes are dropped')).length;

/**
 * The whole cycle against a running agent whose store is `db`: stored before, `breakIt()`, the
 * fault seen (log, counter, /healthz, drops), `mendIt()`, stored again and healthy.
 */
async function faultCycle({ agent, db, ns, cause, breakIt, mendIt }) {
  const before = await chatTrace(agent);
  assert.ok(await pollUntil(() => storedTrace(db, before, ns), { timeoutMs: 10000, intervalMs: 200 }), `not stored before the fault\n${agent.describe()}`);
  assert.deepEqual(await healthz(agent), { status: 200, body: 'ok\n' });

  await breakIt();
  const t0 = Date.now();
  const counted = new RegExp(`^infertel_store_faults_total\\{cause="${cause}"\\} (\\d+)`, 'm');
  assert.ok(await pollUntil(async () => (await metric(agent, counted)) >= 1, { timeoutMs: DETECT_MS, intervalMs: 100 }), `${cause} not counted within ${DETECT_MS} ms\n${agent.describe()}`);
  const detectedMs = Date.now() - t0;
  assert.equal(await metric(agent, /^infertel_store_faulted (\d+)/m), 1);
  const h = await healthz(agent);
  assert.equal(h.status, 200, 'a store fault degrades the agent, it does not take it down');
  assert.match(h.body, new RegExp(`^degraded\\nstore .* faulted: ${cause} for \\d+ s`));

  // Spans sent meanwhile are dropped and counted, without a retry against the dead disk.
  const dropsBefore = await metric(agent, STORE_DROPS);
  for (let i = 0; i < 3; i++) await chatTrace(agent);
  assert.ok(await pollUntil(async () => (await metric(agent, STORE_DROPS)) >= dropsBefore + 3, { timeoutMs: 5000, intervalMs: 100 }), `drops not counted\n${agent.describe()}`);
  assert.equal(faultLines(agent, cause), 1, `one log line for the fault\n${logOf(agent)}`);

  await mendIt();
  const afterId = await pollUntil(async () => {
    const id = await chatTrace(agent);
    return (await pollUntil(() => storedTrace(db, id, ns), { timeoutMs: 1500, intervalMs: 200 })) ? id : null;
  }, { timeoutMs: 15000, intervalMs: 0 });
  assert.ok(afterId, `no span stored after the cause went\n${agent.describe()}`);
  assert.deepEqual(await healthz(agent), { status: 200, body: 'ok\n' });
  assert.equal(await metric(agent, /^infertel_store_faulted (\d+)/m), 0);
  assert.match(logOf(agent), new RegExp(`store .*: recovered from ${cause} after [0-9.]+ s`));
  assert.equal(faultLines(agent, cause), 1, `still one log line for the fault\n${logOf(agent)}`);
  return detectedMs;
}

// Whether this process may mount a tmpfs in a mount namespace of its own; the reason if not.
function mountRefusal(dir) {
  try {
    execFileSync('unshare', ['-m', '--propagation', 'private', 'mount', '-t', 'tmpfs', '-o', 'size=1m', 'infertel-e2e', dir], { stdio: 'pipe' });
    return null;
  } catch (e) {
    return `cannot mount a tmpfs in a mount namespace (needs root): ${String(e.stderr || e.message).trim()}`;
  }
}

describe('store faults', () => {
  let sim;
  let tmp;

  before(async () => {
    tmp = tempDir('infertel-faults-');
    sim = await startSim({ model: MODEL, seed: 3, speed: 50 });
  });
  after(async () => {
    await stopAll(sim);
    tmp?.cleanup();
  });

  test('the store directory deleted, then recreated', async () => {
    const dataDir = path.join(tmp.dir, 'deleted', 'data');
    const agent = await startAgent({ upstream: sim.url, store: 'data-dir', extra: ['--data-dir', dataDir] });
    try {
      const db = path.join(dataDir, 'store');
      const ms = await faultCycle({
        agent, db, cause: 'directory_missing',
        breakIt: () => fs.rmSync(dataDir, { recursive: true }),
        mendIt: () => fs.mkdirSync(dataDir),
      });
      console.log(`directory_missing detected in ${ms} ms`);
    } finally {
      await agent.stop();
    }
  });

  // The agent in its own mount namespace with a tmpfs of `size` at MNT, its store in MNT/data.
  async function agentOnTmpfs(t, name, size) {
    const mnt = path.join(tmp.dir, name);
    fs.mkdirSync(mnt);
    const refusal = mountRefusal(mnt);
    if (refusal) {
      t.skip(refusal);
      console.log(`skipped: ${refusal}`);
      return null;
    }
    const wrap = ['unshare', '-m', '--propagation', 'private', 'sh', '-c', `mount -t tmpfs -o size=${size} infertel-e2e "$0" && exec "$@"`, mnt];
    const dataDir = path.join(mnt, 'data');
    const agent = await startAgent({ upstream: sim.url, store: 'data-dir', extra: ['--data-dir', dataDir], wrap });
    const inNs = (cmd, ...args) => execFileSync('nsenter', ['-t', String(agent.child.pid), '-m', '--', cmd, ...args], { stdio: 'pipe' });
    return { agent, mnt, dataDir, db: path.join(dataDir, 'store'), ns: agent.child.pid, inNs };
  }

  test('the disk full (an 8 MiB tmpfs filled), then space freed', async (t) => {
    const s = await agentOnTmpfs(t, 'full', '8m');
    if (!s) return;
    try {
      const fill = path.join(s.mnt, 'fill');
      const ms = await faultCycle({
        agent: s.agent, db: s.db, ns: s.ns, cause: 'disk_full',
        // dd stops at ENOSPC, leaving the file system full.
        breakIt: () => s.inNs('sh', '-c', `dd if=/dev/zero of=${fill} bs=64k 2>/dev/null; true`),
        mendIt: () => s.inNs('rm', fill),
      });
      console.log(`disk_full detected in ${ms} ms`);
    } finally {
      await s.agent.stop();
    }
  });

  // A file system with files open for writing cannot be remounted read-only (EBUSY): the
  // store's directory gets a read-only bind mount of itself over it instead, which is what the
  // agent sees at the path of a file system remounted read-only (ST_RDONLY, EROFS).
  test('the file system read-only, then read-write again', async (t) => {
    const s = await agentOnTmpfs(t, 'ro', '8m');
    if (!s) return;
    try {
      const ms = await faultCycle({
        agent: s.agent, db: s.db, ns: s.ns, cause: 'read_only',
        breakIt: () => {
          s.inNs('mount', '--bind', s.dataDir, s.dataDir);
          s.inNs('mount', '-o', 'remount,bind,ro', s.dataDir);
        },
        mendIt: () => s.inNs('mount', '-o', 'remount,bind,rw', s.dataDir),
      });
      console.log(`read_only detected in ${ms} ms`);
    } finally {
      await s.agent.stop();
    }
  });
});
