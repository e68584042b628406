// The deploy kits (deploy/): each parsed by a real peer and checked for what matters.
// - systemd: `systemd-analyze verify` on the unit; its hardening; its command line, with the
//   example environment file's values, starts a real agent.
// - Kubernetes: the manifests parsed by PyYAML (Debian's python3-yaml); the sidecar's ports and
//   endpoints agree between the containers, the Service and the probes, and the infertel
//   container's arguments start a real agent; launch mode runs `infertel launch -- vllm serve`.
// - OpenTelemetry Collector: every pipeline's components are defined, memory_limiter first.
// - Grafana: every PromQL expression of the dashboard returns data from a real Prometheus that
//   scraped an agent in front of the simulator, with tenants and objectives set.
import assert from 'node:assert/strict';
import { execFileSync } from 'node:child_process';
import fs from 'node:fs';
import path from 'node:path';
import { fileURLToPath } from 'node:url';
import { describe, test } from 'node:test';

import { closedPort, pollUntil, startAgent, startInfertel, startSim, stopAll, tempDir } from './lib/proc.mjs';
import { startPrometheus } from './lib/prom.mjs';
import { collectStream, openaiClient } from './lib/util.mjs';

const ROOT = path.resolve(path.dirname(fileURLToPath(import.meta.url)), '../..');
const DEPLOY = path.join(ROOT, 'deploy');
const BIN = process.env.INFERTEL_BIN;

/** The documents of a YAML file, parsed by PyYAML. */
function yamlDocs(file) {
  const out = execFileSync('python3', ['-c', 'import json,sys,yaml; print(json.dumps(list(yaml.safe_load_all(open(sys.argv[1])))))', file]);
  return JSON.parse(out.toString()).filter(Boolean);
}

/** `KEY=VALUE` lines of an environment file (comments and blanks skipped). */
function envFile(file) {
  const env = {};
  for (const line of fs.readFileSync(file, 'utf8').split('\n')) {
    const m = /^([A-Z_][A-Z0-9_]*)=(.*)$/.exec(line.trim());
    if (m) env[m[1]] = m[2];
  }
  return env;
}

/** Starts the agent with `args` (addresses made local and free) and stops it once it listens. */
async function agentStarts(args, env = {}) {
  // Listening addresses (not URLs, which name the upstream) made local and free.
  const local = args.map((a) => (a.includes('//') ? a : a.replace(/(0\.0\.0\.0|127\.0\.0\.1):[0-9]+/, '127.0.0.1:0')));
  const p = await startInfertel(local, {
    name: 'deploy-agent',
    env,
    waitFor: { url: /^infertel agent: gateway listening on (http:\/\/[0-9.:]+)/ },
  });
  await stopAll(p);
  return p;
}

describe('deploy/systemd', () => {
  const unit = fs.readFileSync(path.join(DEPLOY, 'systemd/infertel.service'), 'utf8');
  const directive = (name) => unit.split('\n').filter((l) => l.startsWith(`${name}=`)).map((l) => l.slice(name.length + 1));

  test('systemd-analyze verify accepts the unit; it is hardened and restarts on failure', () => {
    const dir = tempDir('infertel-unit-').dir;
    fs.copyFileSync(BIN, path.join(dir, 'infertel'));
    const file = path.join(dir, 'infertel.service');
    fs.writeFileSync(file, unit.replaceAll('/usr/local/bin/infertel', path.join(dir, 'infertel'))
      .replace('EnvironmentFile=/etc/infertel/infertel.env', `EnvironmentFile=${path.join(DEPLOY, 'systemd/infertel.env.example')}`));
    const r = execFileSync('systemd-analyze', ['verify', '--man=no', file], { stdio: ['ignore', 'pipe', 'pipe'] });
    assert.equal(r.toString().trim(), '');
    assert.deepEqual(directive('DynamicUser'), ['yes']);
    assert.deepEqual(directive('ProtectSystem'), ['strict']);
    assert.deepEqual(directive('NoNewPrivileges'), ['yes']);
    assert.deepEqual(directive('Restart'), ['on-failure']);
    assert.deepEqual(directive('StateDirectory'), ['infertel'], 'the store in the state directory');
    assert.ok(Number(directive('TimeoutStopSec')[0]) > 30, 'longer than the default drain timeout');
  });

  test('its command line with the example environment starts a real agent', async () => {
    const env = envFile(path.join(DEPLOY, 'systemd/infertel.env.example'));
    const exec = directive('ExecStart')[0].replace(/\$\{([A-Z_]+)\}/g, (_, v) => env[v]);
    const [, ...args] = exec.split(/\s+/);
    assert.equal(args[0], 'agent');
    const dir = tempDir('infertel-unit-state-').dir;
    await agentStarts([...args, '--data-dir', dir], { ...env, STATE_DIRECTORY: dir });
    // Every agent key the file sets is one the agent knows.
    const keys = JSON.parse(execFileSync(BIN, ['config', '--json']).toString()).keys.map((k) => k.env);
    for (const name of Object.keys(env)) {
      if (/^INFERTEL_(ENGINE|UPSTREAM|LISTEN|ADMIN)$/.test(name)) assert.ok(unit.includes(`\${${name}}`), name);
      else if (name.startsWith('INFERTEL_') || name.startsWith('OTEL_INSTRUMENTATION_')) assert.ok(keys.includes(name) || name === 'INFERTEL_ADMIN_TOKEN', `${name} is a key of the agent`);
    }
  });
});

describe('deploy/kubernetes', () => {
  test('the sidecar: ports, endpoints and probes agree; the infertel container starts an agent', async () => {
    const docs = yamlDocs(path.join(DEPLOY, 'kubernetes/vllm-with-infertel-sidecar.yaml'));
    const deployment = docs.find((d) => d.kind === 'Deployment');
    const service = docs.find((d) => d.kind === 'Service');
    const containers = deployment.spec.template.spec.containers;
    const vllm = containers.find((c) => c.name === 'vllm');
    const infertel = containers.find((c) => c.name === 'infertel');
    const arg = (c, name) => c.args.find((a) => a.startsWith(`--${name}=`))?.split('=')[1];
    assert.equal(arg(vllm, 'otlp-traces-endpoint'), `grpc://${arg(infertel, 'receiver-grpc')}`, 'vLLM sends its spans to the receiver');
    assert.equal(arg(infertel, 'upstream'), `http://${arg(vllm, 'host')}:${arg(vllm, 'port')}`, 'the gateway forwards to vLLM');
    assert.ok(vllm.args.includes('--enable-prompt-tokens-details'), 'cached tokens reported');
    const gatewayPort = Number(arg(infertel, 'listen').split(':')[1]);
    assert.equal(infertel.ports.find((p) => p.name === 'gateway').containerPort, gatewayPort);
    assert.equal(service.spec.ports.find((p) => p.name === 'openai').targetPort, 'gateway', 'clients reach the gateway, never vLLM');
    assert.deepEqual(service.spec.selector, deployment.spec.template.metadata.labels);
    const adminPort = Number(arg(infertel, 'admin').split(':')[1]);
    assert.deepEqual(infertel.readinessProbe.httpGet, { path: '/healthz', port: adminPort });
    assert.ok(deployment.spec.template.spec.terminationGracePeriodSeconds > 30, 'room for the drain');
    assert.equal(infertel.securityContext.allowPrivilegeEscalation, false);
    const dir = tempDir('infertel-k8s-').dir;
    const port = await closedPort();
    await agentStarts(infertel.args.map((a) => a.replace(/^--upstream=.*/, `--upstream=http://127.0.0.1:${port}`).replace(/^--data-dir=.*/, `--data-dir=${dir}`)));
  });

  test('launch mode: infertel is the entrypoint and starts the engine after --', () => {
    const docs = yamlDocs(path.join(DEPLOY, 'kubernetes/infertel-launch.yaml'));
    const c = docs.find((d) => d.kind === 'Deployment').spec.template.spec.containers[0];
    assert.match(c.command[0], /\/infertel$/);
    assert.equal(c.args[0], 'launch');
    const sep = c.args.indexOf('--');
    assert.ok(sep > 0);
    assert.deepEqual(c.args.slice(sep + 1, sep + 3), ['vllm', 'serve']);
    const port = c.args.slice(sep).find((a) => a.startsWith('--port=')).split('=')[1];
    assert.equal(c.ports.find((p) => p.name === 'openai').containerPort, Number(port), 'the gateway takes the engine\'s address');
    assert.equal(c.readinessProbe.httpGet.path, '/healthz');
  });
});

describe('deploy/otel-collector', () => {
  test('every pipeline uses defined components, memory_limiter first; traces and metrics fan out', () => {
    const [cfg] = yamlDocs(path.join(DEPLOY, 'otel-collector/collector.yaml'));
    const pipelines = cfg.service.pipelines;
    assert.ok(pipelines.traces && pipelines.metrics);
    for (const [name, p] of Object.entries(pipelines)) {
      for (const r of p.receivers) assert.ok(r in cfg.receivers, `${name}: receiver ${r}`);
      for (const x of p.processors) assert.ok(x in cfg.processors, `${name}: processor ${x}`);
      for (const e of p.exporters) assert.ok(e in cfg.exporters, `${name}: exporter ${e}`);
      assert.equal(p.processors[0], 'memory_limiter', `${name}: memory_limiter first`);
    }
    assert.equal(cfg.receivers.otlp.protocols.grpc.endpoint, '0.0.0.0:4317');
    assert.ok(pipelines.metrics.exporters.some((e) => e.startsWith('prometheus')));
    const policies = cfg.processors.tail_sampling.policies.map((p) => p.boolean_attribute?.key).filter(Boolean);
    assert.deepEqual(policies, ['infertel.slo.met'], 'keeps the traces that missed their objectives');
  });
});

describe('deploy/grafana', () => {
  test('every PromQL expression of the dashboard returns data from a Prometheus that scraped the agent', async () => {
    const dash = JSON.parse(fs.readFileSync(path.join(DEPLOY, 'grafana/infertel-dashboard.json'), 'utf8'));
    const exprs = dash.panels.flatMap((p) => p.targets.map((t) => ({ title: p.title, expr: t.expr })));
    assert.ok(exprs.length >= 12);
    const MODEL = 'e2e-grafana/model';
    const port = await closedPort();
    const dir = tempDir('infertel-grafana-').dir;
    const agent = await startAgent({
      upstream: `http://127.0.0.1:${port}`,
      store: path.join(dir, 'store'),
      extra: ['--scrape-interval', '500ms'],
      env: { INFERTEL_TENANT_FROM: 'header:x-tenant-id', INFERTEL_SLO_TTFT_MS: '50', INFERTEL_SLO_E2E_MS: '5000' },
    });
    const sim = await startSim({ model: MODEL, listen: `127.0.0.1:${port}`, speed: 5 });
    const prom = await startPrometheus([agent.adminUrl.replace('http://', '')]);
    let sending = true;
    const traffic = (async () => {
      for (let i = 0; sending; i++) {
        const client = openaiClient(agent.url, { defaultHeaders: { 'x-tenant-id': i % 2 ? 'team-a' : 'team-b' } });
        await collectStream(await client.chat.completions.create({ model: MODEL, messages: [{ role: 'user', content: `q ${i}` }], max_tokens: 6, stream: true }));
      }
    })();
    const query = async (expr) => {
      const q = expr.replaceAll('$__rate_interval', '30s').replaceAll('$model', '.*').replaceAll('$tenant', '.*');
      try {
        const r = await prom.get(`/api/v1/query?query=${encodeURIComponent(q)}`);
        const body = JSON.parse(r.text);
        if (body.status !== 'success') return { error: body.error };
        return { result: body.data.result.filter((s) => !Number.isNaN(Number(s.value[1]))) };
      } catch {
        return { result: [] };
      }
    };
    try {
      const missing = await pollUntil(async () => {
        const empty = [];
        for (const e of exprs) {
          const r = await query(e.expr);
          assert.equal(r.error, undefined, `${e.title}: ${e.expr}: ${r.error}`);
          if (!r.result.length) empty.push(`${e.title}: ${e.expr}`);
        }
        return empty.length ? null : empty;
      }, { timeoutMs: 40000, intervalMs: 1000 }).catch(async () => {
        const empty = [];
        for (const e of exprs) if (!(await query(e.expr)).result?.length) empty.push(`${e.title}: ${e.expr}`);
        throw new Error(`no data for:\n${empty.join('\n')}\n--- prometheus ---\n${prom.log().slice(-2000)}`);
      });
      assert.deepEqual(missing, []);
    } finally {
      sending = false;
      await traffic.catch(() => {});
      await prom.close();
      await stopAll(agent, sim);
    }
  });
});
