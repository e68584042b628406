// promtool as the strict judge of an exposition.
import assert from 'node:assert/strict';
import { spawn } from 'node:child_process';
import fs from 'node:fs';
import path from 'node:path';

import { closedPort, runCommand, tempDir } from './proc.mjs';
import { get } from './util.mjs';

export const PROMTOOL = '/usr/bin/promtool';

// promtool lints label names for snake_case; the spec's dimensions callType, callKind, rpcType,
// modelName, spanKind and usageType are camelCase by definition. The exposition must parse
// (exit 1 is a parse failure) and that lint must be the only finding.
const SPEC_CAMEL_CASE = "label names should be written in 'snake_case' not 'camelCase'";

/** Asserts `promtool check metrics` accepts `text`; returns its findings. */
export async function promtoolCheck(text) {
  const lint = await runCommand(PROMTOOL, ['check', 'metrics'], { input: text, timeoutMs: 10000 });
  const findings = (lint.stdout + lint.stderr).split('\n').filter((l) => l.trim());
  const other = findings.filter((l) => !l.endsWith(SPEC_CAMEL_CASE));
  assert.ok(
    lint.code === 0 || (lint.code === 3 && other.length === 0),
    `promtool check metrics (exit ${lint.code}):\n${other.join('\n')}\n--- scrape ---\n${text}`,
  );
  return findings;
}

export const PROMETHEUS = '/usr/bin/prometheus';

/**
 * A real Prometheus server scraping `targets` (HOST:PORT each) every second, on a free port,
 * with exemplar storage when asked. Resolves {url, query(expr) → result array or null (not
 * answered yet), get(path) → {status, text}, log() → its stderr, close()}.
 */
export async function startPrometheus(targets, { exemplars = false } = {}) {
  const dir = tempDir('infertel-prom-').dir;
  const port = await closedPort();
  fs.writeFileSync(
    path.join(dir, 'prometheus.yml'),
    `global:\n  scrape_interval: 1s\n  evaluation_interval: 1s\nscrape_configs:\n  - job_name: infertel\n    static_configs:\n      - targets: [${targets.map((t) => `'${t}'`).join(', ')}]\n`,
  );
  const args = [`--config.file=${path.join(dir, 'prometheus.yml')}`, `--storage.tsdb.path=${path.join(dir, 'data')}`, `--web.listen-address=127.0.0.1:${port}`];
  if (exemplars) args.push('--enable-feature=exemplar-storage');
  const proc = spawn(PROMETHEUS, args, { stdio: ['ignore', 'ignore', 'pipe'] });
  let log = '';
  proc.stderr.on('data', (d) => (log += d));
  const url = `http://127.0.0.1:${port}`;
  return {
    url,
    get: (p) => get(`${url}${p}`),
    async query(expr) {
      try {
        const r = await get(`${url}/api/v1/query?query=${encodeURIComponent(expr)}`);
        if (r.status !== 200) return null;
        return JSON.parse(r.text).data.result;
      } catch {
        return null;
      }
    },
    log: () => log,
    close: () =>
      new Promise((resolve) => {
        if (proc.exitCode !== null) return resolve();
        proc.once('exit', resolve);
        proc.kill('SIGTERM');
      }),
  };
}
