// End-to-end: where the store goes without --store (docs/store.md, "Where the store is"): the
// data directory chosen by --data-dir, INFERTEL_DATA_DIR, systemd's STATE_DIRECTORY, root's
// /var/lib/infertel or a user's XDG state directory, created with mode 0750, and the start-up
// line that says where and why; `infertel traces` finds the store by the same rules. The store
// stays on with an OTLP endpoint.
import assert from 'node:assert/strict';
import { execFileSync } from 'node:child_process';
import fs from 'node:fs';
import path from 'node:path';
import { after, before, describe, test } from 'node:test';

import { pollUntil, runInfertel, startAgent, startSim, stopAll, tempDir } from './lib/proc.mjs';
import { openaiClient } from './lib/util.mjs';

const MODEL = 'e2e-datadir/model';
const HOW = '--data-dir DIR or INFERTEL_DATA_DIR to move it, --store DIR for another directory, --no-store for none';
const escape = (s) => s.replace(/[.*+?^${}()|[\]\\]/g, '\\$&');
const storeLine = (agent) => agent.stdout.split('\n').find((l) => l.startsWith('infertel agent: store '));

describe('the data directory', () => {
  let sim;
  let tmp;

  before(async () => {
    tmp = tempDir('infertel-datadir-');
    sim = await startSim({ model: MODEL, seed: 5, speed: 50 });
  });
  after(async () => {
    await stopAll(sim);
    tmp?.cleanup();
  });

  test("systemd's STATE_DIRECTORY: created 0750, said at start-up, found by `infertel traces`", async () => {
    const state = path.join(tmp.dir, 'state', 'infertel');
    const env = { INFERTEL_DATA_DIR: '', STATE_DIRECTORY: `${state}:/nonexistent/second` };
    const agent = await startAgent({ upstream: sim.url, store: 'data-dir', env });
    try {
      const db = path.join(state, 'store');
      assert.equal(storeLine(agent), `infertel agent: store ${db} (data directory ${state}: from STATE_DIRECTORY (systemd StateDirectory=); ${HOW})`);
      assert.equal(fs.statSync(state).mode & 0o7777, 0o750);
      await openaiClient(agent.url).chat.completions.create({ model: MODEL, messages: [{ role: 'user', content: 'where?' }], max_tokens: 3 });
      // No --store: `infertel traces` chooses the same file by the same rules.
      const out = await pollUntil(async () => {
        const r = await runInfertel(['traces'], { env });
        return r.code === 0 && r.stdout.includes(`chat ${MODEL}`) ? r.stdout : null;
      }, { timeoutMs: 10000, intervalMs: 200 });
      assert.ok(out, `infertel traces found no trace in ${db}\n${agent.describe()}`);
    } finally {
      await agent.stop();
    }
  });

  test('INFERTEL_DATA_DIR, with an OTLP endpoint too: the store stays on', async () => {
    const dir = path.join(tmp.dir, 'env-dir');
    const agent = await startAgent({ upstream: sim.url, store: 'data-dir', otlp: { endpoint: 'http://127.0.0.1:9', protocol: 'http/protobuf' }, env: { INFERTEL_DATA_DIR: dir } });
    try {
      assert.match(storeLine(agent), new RegExp(`^infertel agent: store ${escape(dir)}/store \\(data directory ${escape(dir)}: from INFERTEL_DATA_DIR; `));
      assert.match(agent.stdout, new RegExp(`exporting to traces -> otlp http/protobuf \\S+ \\+ store ${escape(dir)}/store`));
      assert.ok(fs.existsSync(path.join(dir, 'store')));
    } finally {
      await agent.stop();
    }
  });

  test('--data-dir wins over INFERTEL_DATA_DIR; --store names the directory; --no-store says nothing', async () => {
    const flag = path.join(tmp.dir, 'flag-dir');
    let agent = await startAgent({ upstream: sim.url, store: 'data-dir', extra: ['--data-dir', flag], env: { INFERTEL_DATA_DIR: path.join(tmp.dir, 'not-this') } });
    assert.match(storeLine(agent), new RegExp(`\\(data directory ${escape(flag)}: from --data-dir; `));
    await agent.stop();
    assert.ok(!fs.existsSync(path.join(tmp.dir, 'not-this')));

    const file = path.join(tmp.dir, 'explicit.db');
    agent = await startAgent({ upstream: sim.url, store: file });
    assert.equal(storeLine(agent), `infertel agent: store ${file} (from --store; ${HOW})`);
    await agent.stop();

    agent = await startAgent({ upstream: sim.url, store: false });
    assert.equal(storeLine(agent), undefined);
    await agent.stop();
  });

  test('root without a data directory set: /var/lib/infertel (a tmpfs over /var/lib here)', async (t) => {
    // In a mount namespace of its own, so that the test writes nothing into the real /var/lib.
    const wrap = ['unshare', '-m', '--propagation', 'private', 'sh', '-c', 'mount -t tmpfs infertel-e2e /var/lib && exec "$@"', 'sh'];
    try {
      execFileSync(wrap[0], [...wrap.slice(1), 'true'], { stdio: 'pipe' });
    } catch (e) {
      t.skip(`cannot mount a tmpfs in a mount namespace (needs root): ${String(e.stderr || e.message).trim()}`);
      return;
    }
    const agent = await startAgent({ upstream: sim.url, store: 'data-dir', env: { INFERTEL_DATA_DIR: '', STATE_DIRECTORY: '' }, wrap });
    try {
      assert.equal(storeLine(agent), `infertel agent: store /var/lib/infertel/store (data directory /var/lib/infertel: the default when running as root; ${HOW})`);
      const mode = execFileSync('nsenter', ['-t', String(agent.child.pid), '-m', '--', 'stat', '-c', '%a', '/var/lib/infertel'], { encoding: 'utf8' });
      assert.equal(mode.trim(), '750');
    } finally {
      await agent.stop();
    }
  });

  test("a user without a data directory set: $XDG_STATE_HOME/infertel, else ~/.local/state/infertel", async (t) => {
    if (process.getuid() !== 0) {
      t.skip('needs root to run the agent as another user');
      return;
    }
    const home = path.join(tmp.dir, 'home');
    fs.mkdirSync(home, { mode: 0o755 });
    fs.chownSync(home, 65534, 65534);
    fs.chmodSync(tmp.dir, 0o755);
    const wrap = ['setpriv', '--reuid=65534', '--regid=65534', '--clear-groups'];
    const env = { INFERTEL_DATA_DIR: '', STATE_DIRECTORY: '', XDG_STATE_HOME: '', HOME: home };
    let agent = await startAgent({ upstream: sim.url, store: 'data-dir', env, wrap });
    const dir = path.join(home, '.local', 'state', 'infertel');
    try {
      assert.equal(storeLine(agent), `infertel agent: store ${dir}/store (data directory ${dir}: the default for a user: $HOME/.local/state/infertel; ${HOW})`);
      assert.equal(fs.statSync(dir).mode & 0o7777, 0o750);
      assert.equal(fs.statSync(path.join(home, '.local')).mode & 0o7777, 0o700);
    } finally {
      await agent.stop();
    }
    const xdg = path.join(home, 'xdg');
    agent = await startAgent({ upstream: sim.url, store: 'data-dir', env: { ...env, XDG_STATE_HOME: xdg }, wrap });
    try {
      assert.match(storeLine(agent), new RegExp(`^infertel agent: store ${escape(xdg)}/infertel/store \\(data directory ${escape(xdg)}/infertel: the default for a user: \\$XDG_STATE_HOME/infertel; `));
    } finally {
      await agent.stop();
    }
  });
});
