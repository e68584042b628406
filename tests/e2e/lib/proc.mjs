// Child processes for the end-to-end tests: the infertel binary under test (simulator, agent,
// other commands) started with OS-chosen ports, its "listening on" lines awaited with a bounded
// timeout, its output kept for failure messages, and every process killed when the tests end.
import { spawn, execFile } from 'node:child_process';
import fs from 'node:fs';
import net from 'node:net';
import os from 'node:os';
import path from 'node:path';

export const INFERTEL_BIN = process.env.INFERTEL_BIN;

// Under scripts/sanitize.sh the binary runs on the sanitizer's allocator, which keeps freed
// memory in a quarantine and adds redzones and shadow memory: resident memory is about twice the
// heap plus the quarantine. The script says so in INFERTEL_E2E_MEMORY_FACTOR and
// INFERTEL_E2E_MEMORY_SLACK_MIB; a test's memory bound, absolute or on growth, goes through
// rssBoundMiB (a sanitizer's quarantine holds what an attack made the agent free).
const MEMORY_FACTOR = Number(process.env.INFERTEL_E2E_MEMORY_FACTOR) || 1;
const MEMORY_SLACK_MIB = Number(process.env.INFERTEL_E2E_MEMORY_SLACK_MIB) || 0;

/** A bound on the agent's resident memory (MiB) as it stands for this build of the binary. */
export function rssBoundMiB(mib) {
  return mib * MEMORY_FACTOR + MEMORY_SLACK_MIB;
}

/** The peak (VmHWM) and current (VmRSS) resident memory of a process, in bytes, from /proc. */
export function memoryOf(pid) {
  const status = fs.readFileSync(`/proc/${pid}/status`, 'utf8');
  const kb = (field) => Number(new RegExp(`^${field}:\\s+(\\d+) kB`, 'm').exec(status)[1]) * 1024;
  return { peak: kb('VmHWM'), rss: kb('VmRSS') };
}

/**
 * Resets a process's peak resident memory (VmHWM) to its current one (Linux's clear_refs), so
 * that the peak read after an attack is that attack's, not an earlier test's. Returns the
 * process's memory after the reset (memoryOf).
 */
export function resetPeak(pid) {
  fs.writeFileSync(`/proc/${pid}/clear_refs`, '5');
  return memoryOf(pid);
}

/**
 * Waits up to `timeoutMs` for a process's resident memory (VmRSS) to come back within
 * `slackMiB` (scaled by rssBoundMiB) of `rssBefore` bytes, as it should once what an attack
 * made it allocate is freed. Resolves with {rss, bound} in bytes; rss <= bound when it did.
 */
export async function rssSettles(pid, rssBefore, { slackMiB = 4, timeoutMs = 10000 } = {}) {
  const bound = rssBefore + rssBoundMiB(slackMiB) * 1024 * 1024;
  let rss = memoryOf(pid).rss;
  await pollUntil(() => (rss = memoryOf(pid).rss) <= bound, { timeoutMs, intervalMs: 200 });
  return { rss, bound };
}

/** Throws a clear message when the binary under test is not configured. */
export function requireBin() {
  if (!INFERTEL_BIN) throw new Error('INFERTEL_BIN is not set (absolute path to build/infertel)');
  if (!fs.existsSync(INFERTEL_BIN)) throw new Error(`INFERTEL_BIN=${INFERTEL_BIN} does not exist`);
  return INFERTEL_BIN;
}

// Every infertel the tests start gets a data directory of its own under the system's temporary
// directory (unless a test sets INFERTEL_DATA_DIR itself), so that no test writes a store into
// the user's home or /var/lib/infertel, even one that forgets --store or --no-store.
let dataDirRoot = null;
/** The INFERTEL_DATA_DIR given to infertel processes the tests start, removed at exit. */
export function testDataDir() {
  if (!dataDirRoot) {
    dataDirRoot = fs.mkdtempSync(path.join(os.tmpdir(), 'infertel-e2e-data-'));
    process.on('exit', () => fs.rmSync(dataDirRoot, { recursive: true, force: true }));
  }
  return dataDirRoot;
}
function childEnv(env) {
  return { ...process.env, INFERTEL_DATA_DIR: testDataDir(), ...env };
}

const live = new Set();
function killAllSync() {
  for (const p of live) {
    try {
      p.child.kill('SIGKILL');
    } catch {
      // already gone
    }
  }
}
process.on('exit', killAllSync);

const TAIL = 8000;
function tail(s) {
  return s.length > TAIL ? '…' + s.slice(-TAIL) : s;
}

/**
 * A running child. `urls` maps each awaited pattern's name to the URL captured from its line.
 * `describe()` gives the command, exit status and output tails for failure messages.
 */
export class Proc {
  constructor(name, args, child) {
    this.name = name;
    this.args = args;
    this.child = child;
    this.stdout = '';
    this.stderr = '';
    this.exit = null; // {code, signal} once exited
    this.urls = {};
    this.exited = new Promise((resolve) => {
      child.on('exit', (code, signal) => {
        this.exit = { code, signal };
        live.delete(this);
        resolve(this.exit);
      });
    });
  }

  describe() {
    const status = this.exit ? `exited code=${this.exit.code} signal=${this.exit.signal}` : 'running';
    return (
      `[${this.name}] ${INFERTEL_BIN} ${this.args.join(' ')} (${status})\n` +
      `--- stdout ---\n${tail(this.stdout)}\n--- stderr ---\n${tail(this.stderr)}`
    );
  }

  /** Sends SIGTERM, then SIGKILL after `graceMs`; resolves once the process is gone. */
  async stop(graceMs = 3000) {
    if (this.exit) return this.exit;
    try {
      this.child.kill('SIGTERM');
    } catch {
      // already gone
    }
    const t = setTimeout(() => {
      try {
        this.child.kill('SIGKILL');
      } catch {
        // already gone
      }
    }, graceMs);
    const r = await this.exited;
    clearTimeout(t);
    return r;
  }
}

/**
 * Starts `$INFERTEL_BIN ...args` and waits until stdout has printed a line matching each of
 * `waitFor` ({name: RegExp with one capture group for the URL}). Rejects with the process's
 * output when it exits first or when `timeoutMs` passes.
 */
export async function startInfertel(args, { name = args[0], env = {}, waitFor = {}, timeoutMs = 15000, wrap = [] } = {}) {
  const bin = requireBin();
  // `wrap`: a command that execs the binary with its arguments, e.g. `unshare -m ...`.
  const [cmd, ...cmdArgs] = wrap.length ? [...wrap, bin, ...args] : [bin, ...args];
  const child = spawn(cmd, cmdArgs, {
    env: childEnv(env),
    stdio: ['ignore', 'pipe', 'pipe'],
  });
  const proc = new Proc(name, args, child);
  live.add(proc);
  const pending = new Map(Object.entries(waitFor));
  await new Promise((resolve, reject) => {
    let buf = '';
    const timer = setTimeout(() => {
      reject(new Error(`timed out after ${timeoutMs} ms waiting for ${[...pending.keys()].join(', ')}\n${proc.describe()}`));
    }, timeoutMs);
    const check = () => {
      if (pending.size === 0) {
        clearTimeout(timer);
        resolve();
      }
    };
    child.stdout.setEncoding('utf8');
    child.stderr.setEncoding('utf8');
    child.stdout.on('data', (d) => {
      proc.stdout += d;
      buf += d;
      let i;
      while ((i = buf.indexOf('\n')) >= 0) {
        const line = buf.slice(0, i);
        buf = buf.slice(i + 1);
        for (const [key, re] of pending) {
          const m = re.exec(line);
          if (m) {
            proc.urls[key] = m[1];
            pending.delete(key);
          }
        }
      }
      check();
    });
    child.stderr.on('data', (d) => {
      proc.stderr += d;
    });
    child.on('error', (e) => {
      clearTimeout(timer);
      reject(new Error(`cannot start ${bin}: ${e.message}`));
    });
    proc.exited.then(() => {
      clearTimeout(timer);
      if (pending.size) reject(new Error(`exited before printing ${[...pending.keys()].join(', ')}\n${proc.describe()}`));
    });
    check();
  });
  return proc;
}

const URL_RE = '(http://[0-9.]+:[0-9]+)';

/**
 * `infertel sim --engine ENGINE` (default vllm); resolves with the Proc, `proc.url` the base URL. `listen`
 * (HOST:PORT) fixes the address, e.g. a port reserved with closedPort() for an agent that was
 * started first.
 */
export async function startSim({ engine = 'vllm', model = 'e2e-model', seed = 42, speed, extra = [], env = {}, listen = '127.0.0.1:0' } = {}) {
  const args = ['sim', '--engine', engine, '--listen', listen, '--model', model, '--seed', String(seed)];
  if (speed !== undefined) args.push('--speed', String(speed));
  args.push(...extra);
  const p = await startInfertel(args, {
    name: 'sim',
    env,
    waitFor: { url: new RegExp(`^infertel sim: listening on ${URL_RE}`) },
  });
  p.url = p.urls.url;
  return p;
}

/**
 * `infertel agent --engine ENGINE` (default vllm); resolves with the Proc, `proc.url` the gateway and
 * `proc.adminUrl` the admin base URL. `otlp` = {endpoint, protocol}; `store` = path, 'data-dir' or
 * false; `wrap` as for startInfertel.
 */
export async function startAgent({ upstream, engine = 'vllm', otlp, store = false, exportDelayMs = 50, extra = [], env = {}, wrap = [] } = {}) {
  // The OTLP receivers on OS-chosen ports, so that agents never fight over 4317/4318.
  const args = ['agent', '--engine', engine, '--upstream', upstream, '--listen', '127.0.0.1:0', '--admin', '127.0.0.1:0',
    '--receiver-grpc', '127.0.0.1:0', '--receiver-http', '127.0.0.1:0'];
  // store: a path (--store), 'data-dir' (the store under --data-dir or INFERTEL_DATA_DIR, as
  // `extra` or `env` give it), or false (--no-store).
  if (store && store !== 'data-dir') args.push('--store', store);
  else if (!store) args.push('--no-store');
  if (otlp) args.push('--otlp-endpoint', otlp.endpoint, '--otlp-protocol', otlp.protocol);
  if (exportDelayMs !== undefined && exportDelayMs !== null) args.push('--export-delay-ms', String(exportDelayMs));
  args.push(...extra);
  const p = await startInfertel(args, {
    name: 'agent',
    env,
    wrap,
    waitFor: {
      url: new RegExp(`^infertel agent: gateway listening on ${URL_RE}`),
      adminUrl: new RegExp(`^infertel agent: admin listening on ${URL_RE}`),
      receiverGrpc: /^infertel agent: OTLP gRPC receiver listening on ([0-9.]+:[0-9]+)/,
      receiverHttp: new RegExp(`^infertel agent: OTLP HTTP receiver listening on ${URL_RE}`),
    },
  });
  p.url = p.urls.url;
  p.adminUrl = p.urls.adminUrl;
  p.receiverGrpc = p.urls.receiverGrpc;  // HOST:PORT
  p.receiverHttp = p.urls.receiverHttp;  // http://HOST:PORT
  return p;
}

/** Runs `$INFERTEL_BIN ...args` to completion (bounded), resolving {code, stdout, stderr}. */
export function runInfertel(args, { timeoutMs = 20000, env = {} } = {}) {
  return runCommand(requireBin(), args, { timeoutMs, env: { INFERTEL_DATA_DIR: testDataDir(), ...env } });
}

/** Runs a command to completion with an optional stdin string; never rejects on exit code. */
export function runCommand(cmd, args, { timeoutMs = 20000, env = {}, input } = {}) {
  return new Promise((resolve, reject) => {
    const child = execFile(
      cmd,
      args,
      { env: { ...process.env, ...env }, timeout: timeoutMs, maxBuffer: 64 * 1024 * 1024, killSignal: 'SIGKILL' },
      (err, stdout, stderr) => {
        if (err && typeof err.code !== 'number') {
          if (err.killed) return reject(new Error(`${cmd} ${args.join(' ')} timed out after ${timeoutMs} ms\n${stderr}`));
          return reject(err);
        }
        resolve({ code: err ? err.code : 0, stdout, stderr });
      },
    );
    if (input !== undefined) child.stdin.end(input);
  });
}

/** A loopback TCP port that nothing listens on (bound by the OS, then closed). */
export async function closedPort() {
  const srv = net.createServer();
  await new Promise((r) => srv.listen(0, '127.0.0.1', r));
  const { port } = srv.address();
  await new Promise((r) => srv.close(r));
  return port;
}

/** A fresh temporary directory, removed by `cleanup()`. */
export function tempDir(prefix = 'infertel-e2e-') {
  const dir = fs.mkdtempSync(path.join(os.tmpdir(), prefix));
  return { dir, cleanup: () => fs.rmSync(dir, { recursive: true, force: true }) };
}

/** Stops every given process (ignores null entries). */
export async function stopAll(...procs) {
  await Promise.all(procs.filter(Boolean).map((p) => p.stop()));
}

/** Polls `fn` until it returns a truthy value or `timeoutMs` passes; returns the last value. */
export async function pollUntil(fn, { timeoutMs = 5000, intervalMs = 50 } = {}) {
  const deadline = Date.now() + timeoutMs;
  let v;
  for (;;) {
    v = await fn();
    if (v || Date.now() >= deadline) return v;
    await new Promise((r) => setTimeout(r, intervalMs));
  }
}

/** The gateway's worker threads in process `pid` (threads named gateway-io-N). */
export function gatewayWorkers(pid) {
  let n = 0;
  for (const tid of fs.readdirSync(`/proc/${pid}/task`)) {
    try {
      if (fs.readFileSync(`/proc/${pid}/task/${tid}/comm`, 'utf8').startsWith('gateway-io-')) n += 1;
    } catch {
      // a short-lived thread (the engine probe's) ended between the listing and the read
    }
  }
  return n;
}

/**
 * The gateway's worker count once it settles on `want`: each worker names itself once it runs,
 * so the count may lag the listening line; it waits for `want` (bounded), then looks again a
 * little later, so that a slow extra worker is still counted.
 */
export async function settledGatewayWorkers(pid, want) {
  await pollUntil(() => gatewayWorkers(pid) === want, { timeoutMs: 5000 });
  await new Promise((r) => setTimeout(r, 300));
  return gatewayWorkers(pid);
}
