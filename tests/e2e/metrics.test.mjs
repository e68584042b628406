// End-to-end: the metrics of spec M3 (vLLM V1 and V0) scraped from the simulator's /metrics,
// translated, and measured at the gateway; exposed on the admin /metrics (linted by promtool
// and scraped by a real Prometheus server), exported over OTLP (decoded with the official
// protos) and kept in the embedded store; counters carried across an engine restart.
import assert from 'node:assert/strict';
import path from 'node:path';
import { after, before, describe, test } from 'node:test';

import { startGrpcReceiver, startHttpReceiver } from './lib/otlp.mjs';
import { promtoolCheck, startPrometheus } from './lib/prom.mjs';
import { pollUntil, runInfertel, startAgent, startSim, stopAll, tempDir } from './lib/proc.mjs';
import { collectStream, get, metricSum, openaiClient, parsePrometheus } from './lib/util.mjs';

const MODEL = 'e2e-metrics/model';
const FAST = ['--scrape-interval', '200ms', '--metric-export-interval', '300ms'];

const scrapeAgent = async (agent) => {
  const r = await get(`${agent.adminUrl}/metrics`);
  assert.equal(r.status, 200);
  return r.text;
};
const scrapeSim = async (sim) => parsePrometheus((await get(`${sim.url}/metrics`)).text);

/** Sends a mix of traffic; returns the usage the client saw. */
async function traffic(url, n = 4) {
  const client = openaiClient(url);
  let input = 0;
  let output = 0;
  for (let i = 0; i < n; i++) {
    if (i % 2) {
      const chunks = await collectStream(
        await client.chat.completions.create({ model: MODEL, messages: [{ role: 'user', content: `stream ${i}` }], max_tokens: 4, stream: true, stream_options: { include_usage: true } }),
      );
      const u = chunks.at(-1).usage;
      input += u.prompt_tokens;
      output += u.completion_tokens;
    } else {
      const r = await client.chat.completions.create({ model: MODEL, messages: [{ role: 'user', content: `plain ${i}` }], max_tokens: 3 });
      input += r.usage.prompt_tokens;
      output += r.usage.completion_tokens;
    }
  }
  return { input, output };
}

describe('metrics: vLLM V1', () => {
  let rx;
  let sim;
  let agent;
  let dir;
  let seen;

  before(async () => {
    dir = tempDir().dir;
    rx = await startGrpcReceiver();
    sim = await startSim({ model: MODEL, seed: 5, speed: 50 });
    agent = await startAgent({
      upstream: sim.url,
      otlp: { endpoint: rx.endpoint, protocol: 'grpc' },
      store: path.join(dir, 'store.db'),
      extra: FAST,
    });
    seen = await traffic(agent.url, 6);
  });

  after(async () => {
    await stopAll(agent, sim);
    await rx?.close();
  });

  test('admin /metrics passes promtool and has the M3.1/M3.3 families with their dimensions', async () => {
    const text = await pollUntil(async () => {
      const t = await scrapeAgent(agent);
      return t.includes('gen_ai_vllm_prompt_tokens_total') ? t : null;
    }, { timeoutMs: 5000 });
    await promtoolCheck(text);
    const samples = parsePrometheus(text);
    for (const name of [
      'vllm_iter_count_total', 'gen_ai_vllm_request_success_total', 'genai_llm_first_token_seconds_total',
      'gen_ai_server_time_per_output_token_total', 'gen_ai_server_request_duration_total',
      'gen_ai_vllm_num_requests_running', 'gen_ai_vllm_num_requests_waiting', 'gen_ai_vllm_kv_cache_usage_perc',
      'gen_ai_vllm_prefix_cache_queries_total', 'gen_ai_vllm_prefix_cache_hits_total', 'gen_ai_vllm_num_preemptions_total',
      'gen_ai_vllm_prompt_tokens_total', 'gen_ai_vllm_generation_tokens_total', 'gen_ai_vllm_request_params_n_total',
      'gen_ai_vllm_request_params_max_tokens_total', 'gen_ai_vllm_request_queue_time_seconds_total',
      'gen_ai_vllm_request_prefill_time_seconds_total', 'gen_ai_vllm_request_decode_time_seconds_total',
      'gen_ai_vllm_request_inference_time_seconds_total',
    ]) {
      const s = samples.filter((x) => x.name === name);
      assert.ok(s.length > 0, `${name} present\n${text}`);
    }
    const running = samples.find((x) => x.name === 'gen_ai_vllm_num_requests_running');
    assert.deepEqual(
      { callType: running.labels.callType, rpcType: running.labels.rpcType, engine_index: running.labels.engine_index, model_name: running.labels.model_name },
      { callType: 'gen_ai', rpcType: '2100', engine_index: '0', model_name: MODEL },
    );
    // V0-only families are absent for a V1 engine.
    assert.ok(!samples.some((x) => x.name === 'gpu_cache_usage_sys'), 'no M3.2 gauges from V1');
  });

  test('translated values equal the engine\'s own; gateway tokens equal what the client saw', async () => {
    // Quiet engine: wait until the agent has scraped the final counts.
    const engine = await scrapeSim(sim);
    const enginePrompt = metricSum(engine, 'vllm:prompt_tokens_total');
    const engineSuccess = metricSum(engine, 'vllm:request_success_total', (l) => l.finished_reason === 'stop' || l.finished_reason === 'length');
    assert.ok(enginePrompt > 0);
    const samples = await pollUntil(async () => {
      const s = parsePrometheus(await scrapeAgent(agent));
      return metricSum(s, 'gen_ai_vllm_prompt_tokens_total') === enginePrompt ? s : null;
    }, { timeoutMs: 5000 });
    assert.equal(
      metricSum(samples, 'gen_ai_vllm_request_success_total', (l) => l.finished_reason === 'stop' || l.finished_reason === 'length'),
      engineSuccess,
    );
    assert.equal(metricSum(samples, 'genai_llm_usage_tokens_total', (l) => l.usageType === 'input' && l.spanKind === 'LLM' && l.modelName === MODEL && l.callKind === 'custom_entry'), seen.input);
    assert.equal(metricSum(samples, 'genai_llm_usage_tokens_total', (l) => l.usageType === 'output'), seen.output);
    assert.ok(metricSum(samples, 'genai_llm_first_token_seconds_total') > 0, 'TTFT of the streams');
    assert.ok(metricSum(samples, 'gen_ai_server_request_duration_total') >= metricSum(samples, 'genai_llm_first_token_seconds_total'));
  });

  // infertel's own latency distributions (docs/telemetry-reference.md, "Latency histograms"):
  // every completed request in the duration histogram, every stream's first token and gaps.
  test('latency histograms: cumulative buckets, one observation per request, labelled model and engine_index', async () => {
    const samples = parsePrometheus(await scrapeAgent(agent));
    const ours = (l) => l.model === MODEL && l.engine_index === '0';
    assert.equal(metricSum(samples, 'infertel_request_duration_seconds_count', ours), 6, 'six completed requests');
    const buckets = samples.filter((x) => x.name === 'infertel_request_duration_seconds_bucket' && ours(x.labels));
    assert.equal(buckets.length, 29, '28 bounds and +Inf');
    for (let i = 1; i < buckets.length; i++) assert.ok(buckets[i].value >= buckets[i - 1].value, 'cumulative');
    assert.equal(buckets.at(-1).labels.le, '+Inf');
    assert.equal(buckets.at(-1).value, 6);
    assert.ok(metricSum(samples, 'infertel_request_duration_seconds_sum', ours) > 0);
    // Three streams: a first token each, and the gaps between their deltas.
    assert.equal(metricSum(samples, 'infertel_time_to_first_token_seconds_count', ours), 3);
    assert.ok(metricSum(samples, 'infertel_inter_token_latency_seconds_count', ours) >= 3, 'gaps of 3 streams of up to 4 tokens');
    assert.equal(metricSum(samples, 'infertel_latency_observations_dropped_total'), 0);
  });

  test('a real Prometheus server scrapes the agent and its query API returns the series', async () => {
    const prom = await startPrometheus([agent.adminUrl.replace('http://', '')], { exemplars: true });
    try {
      const expected = metricSum(parsePrometheus(await scrapeAgent(agent)), 'genai_llm_usage_tokens_total', (l) => l.usageType === 'input');
      const result = await pollUntil(async () => {
        try {
          const r = await get(`${prom.url}/api/v1/query?query=${encodeURIComponent('sum(genai_llm_usage_tokens_total{usageType="input"})')}`);
          if (r.status !== 200) return null;
          const body = JSON.parse(r.text);
          return body.data.result.length ? body.data.result : null;
        } catch {
          return null;
        }
      }, { timeoutMs: 20000, intervalMs: 250 }).catch((e) => {
        throw new Error(`${e.message}\n--- prometheus ---\n${prom.log().slice(-3000)}`);
      });
      assert.equal(Number(result[0].value[1]), expected);
      const r = await get(`${prom.url}/api/v1/query?query=gen_ai_vllm_kv_cache_usage_perc`);
      const kv = JSON.parse(r.text).data.result;
      assert.equal(kv.length, 1);
      assert.equal(kv[0].metric.model_name, MODEL);
      assert.equal(kv[0].metric.engine_index, '0');
      const q = encodeURIComponent('histogram_quantile(0.5, sum by (le) (infertel_request_duration_seconds_bucket))');
      const median = JSON.parse((await get(`${prom.url}/api/v1/query?query=${q}`)).text).data.result;
      assert.equal(median.length, 1, 'Prometheus reads the histogram');
      assert.ok(Number(median[0].value[1]) > 0, `median request duration ${median[0].value[1]}`);
      // Exemplars: Prometheus asks for OpenMetrics, stores the buckets' trace ids, and each
      // names a trace the agent's store holds.
      const now = Math.floor(Date.now() / 1000);
      const exemplars = await pollUntil(async () => {
        const r = await get(`${prom.url}/api/v1/query_exemplars?query=infertel_request_duration_seconds_bucket&start=${now - 600}&end=${now + 60}`);
        const data = JSON.parse(r.text).data ?? [];
        return data.flatMap((d) => d.exemplars).length ? data.flatMap((d) => d.exemplars) : null;
      }, { timeoutMs: 10000, intervalMs: 250 });
      assert.ok(exemplars, `no exemplars stored\n--- prometheus ---\n${prom.log().slice(-3000)}`);
      const traceId = exemplars[0].labels.trace_id;
      assert.match(traceId, /^[0-9a-f]{32}$/);
      const stored = await pollUntil(async () => {
        const out = await runInfertel(['traces', '--store', path.join(dir, 'store.db'), '--trace', traceId]);
        return out.code === 0 && out.stdout.includes(traceId) ? out : null;
      }, { timeoutMs: 5000, intervalMs: 200 });
      assert.ok(stored, `the exemplar's trace ${traceId} is in the store`);
      assert.match(stored.stdout, /chat /);
      const up = JSON.parse((await get(`${prom.url}/api/v1/query?query=up`)).text).data.result;
      assert.equal(up[0].value[1], '1', 'Prometheus reads the exposition without errors');
    } finally {
      await prom.close();
    }
  });

  test('OTLP metrics: exact names, cumulative monotonic sums, gauges, dimensions', async () => {
    const req = await pollUntil(() => {
      const last = rx.metricsRequests.at(-1);
      if (!last) return null;
      const names = last.body.resourceMetrics.flatMap((rm) => rm.scopeMetrics.flatMap((sm) => sm.metrics.map((m) => m.name)));
      return names.includes('gen_ai_vllm_prompt_tokens') && names.includes('genai_llm_usage_tokens') ? last.body : null;
    }, { timeoutMs: 5000 });
    const metrics = req.resourceMetrics.flatMap((rm) => rm.scopeMetrics.flatMap((sm) => sm.metrics));
    const byName = Object.fromEntries(metrics.map((m) => [m.name, m]));
    const prompt = byName.gen_ai_vllm_prompt_tokens;
    assert.equal(prompt.unit, 'tokens');
    assert.equal(prompt.sum.isMonotonic, true);
    assert.equal(prompt.sum.aggregationTemporality, 2, 'CUMULATIVE');
    const attrs = Object.fromEntries(prompt.sum.dataPoints[0].attributes.map((a) => [a.key, a.value.stringValue]));
    assert.deepEqual(attrs, { callType: 'gen_ai', engine_index: '0', model_name: MODEL, rpcType: '2100' });
    assert.ok(byName.gen_ai_vllm_kv_cache_usage_perc.gauge, 'gauge');
    const usage = byName.genai_llm_usage_tokens.sum.dataPoints;
    const input = usage.filter((p) => p.attributes.some((a) => a.key === 'usageType' && a.value.stringValue === 'input'));
    assert.equal(input.reduce((a, p) => a + p.asDouble, 0), seen.input);
    // The latency histograms: cumulative, the bounds, and exemplars naming traces.
    const duration = byName.infertel_request_duration_seconds;
    assert.ok(duration?.histogram, `a histogram: ${Object.keys(byName).join(', ')}`);
    assert.equal(duration.unit, 's');
    assert.equal(duration.histogram.aggregationTemporality, 2, 'CUMULATIVE');
    const dps = duration.histogram.dataPoints;
    assert.equal(dps.reduce((a, p) => a + Number(p.count), 0), 6);
    for (const p of dps) {
      assert.equal(p.explicitBounds.length, 28);
      assert.equal(p.bucketCounts.length, 29);
      assert.equal(p.bucketCounts.reduce((a, c) => a + Number(c), 0), Number(p.count));
      assert.ok(p.exemplars.length >= 1, 'an exemplar per bucket observed');
      for (const e of p.exemplars) assert.match(Buffer.from(e.traceId).toString('hex'), /^[0-9a-f]{32}$/, 'the exemplar names a trace');
      assert.ok(p.exemplars.some((e) => /[1-9a-f]/.test(Buffer.from(e.traceId).toString('hex'))), 'not an empty trace id');
    }
    const resource = Object.fromEntries(req.resourceMetrics[0].resource.attributes.map((a) => [a.key, a.value.stringValue]));
    assert.ok(resource['service.name'], 'resource has service.name');
    assert.equal(rx.errors.length, 0, rx.errors.join('\n'));
  });

  test('the embedded store holds the latest values; `infertel metrics` prints them', async () => {
    const r = await pollUntil(async () => {
      const out = await runInfertel(['metrics', '--store', path.join(dir, 'store.db'), '--name', 'gen_ai_vllm_prompt_tokens']);
      return out.code === 0 && out.stdout.includes('gen_ai_vllm_prompt_tokens') ? out : null;
    }, { timeoutMs: 5000, intervalMs: 200 });
    assert.match(r.stdout, /gen_ai_vllm_prompt_tokens \(sum, tokens\)/);
    assert.match(r.stdout, /"model_name":"e2e-metrics\/model"/);
  });
});

describe('metrics: OTLP over HTTP', () => {
  for (const protocol of ['http/protobuf', 'http/json']) {
    test(`${protocol}: the same families, cumulative`, async () => {
      const rx = await startHttpReceiver();
      const sim = await startSim({ model: MODEL, seed: 12, speed: 50 });
      const agent = await startAgent({ upstream: sim.url, otlp: { endpoint: rx.endpoint, protocol }, extra: FAST });
      try {
        const seen = await traffic(agent.url, 2);
        const body = await pollUntil(() => {
          for (const r of [...rx.metricsRequests].reverse()) {
            const ms = r.body.resourceMetrics.flatMap((rm) => rm.scopeMetrics.flatMap((sm) => sm.metrics));
            const usage = ms.find((m) => m.name === 'genai_llm_usage_tokens');
            const sum = (usage?.sum.dataPoints ?? [])
              .filter((p) => p.attributes.some((a) => a.key === 'usageType' && a.value.stringValue === 'input'))
              .reduce((a, p) => a + Number(p.asDouble), 0);
            if (sum === seen.input && ms.some((m) => m.name === 'gen_ai_vllm_prompt_tokens')) return ms;
          }
          return null;
        }, { timeoutMs: 5000 });
        const prompt = body.find((m) => m.name === 'gen_ai_vllm_prompt_tokens');
        // OTLP/JSON spells the enum as its number, protobuf decodes to the number too.
        assert.equal(Number(prompt.sum.aggregationTemporality), 2);
        assert.equal(prompt.sum.isMonotonic, true);
        assert.equal(rx.errors.length, 0, rx.errors.join('\n'));
        assert.ok(rx.httpRequests.some((r) => r.path === '/v1/metrics' && r.contentType === (protocol === 'http/json' ? 'application/json' : 'application/x-protobuf')));
      } finally {
        await stopAll(agent, sim);
        await rx.close();
      }
    });
  }
});

describe('metrics: vLLM V0, engine restart, collection switch', () => {
  test('a V0 engine gives the M3.2 families and no M3.3 ones', async () => {
    const sim = await startSim({ model: MODEL, seed: 6, speed: 50, extra: ['--engine-version', 'v0'] });
    const agent = await startAgent({ upstream: sim.url, extra: FAST });
    try {
      await traffic(agent.url, 2);
      const text = await pollUntil(async () => {
        const t = await scrapeAgent(agent);
        return t.includes('num_prompt_tokens_iter_total') ? t : null;
      }, { timeoutMs: 5000 });
      await promtoolCheck(text);
      const samples = parsePrometheus(text);
      const engine = await scrapeSim(sim);
      for (const name of ['gpu_cache_usage_sys', 'num_running_sys', 'num_waiting_sys', 'num_preemption_iter_total', 'num_generation_tokens_iter_total', 'num_tokens_iter_total'])
        assert.ok(samples.some((s) => s.name === name), `${name}\n${text}`);
      assert.ok(!samples.some((s) => s.name.startsWith('gen_ai_vllm_num_requests')), 'no M3.3 gauges from V0');
      const g = samples.find((s) => s.name === 'num_running_sys');
      assert.equal(g.labels.model_name, undefined, 'M3.2 has no model_name');
      const p = await pollUntil(async () => {
        const s = parsePrometheus(await scrapeAgent(agent));
        const v = metricSum(s, 'num_tokens_iter_total');
        return v === metricSum(engine, 'vllm:prompt_tokens_total') + metricSum(engine, 'vllm:generation_tokens_total') ? v : null;
      }, { timeoutMs: 5000 });
      assert.ok(p > 0);
    } finally {
      await stopAll(agent, sim);
    }
  });

  test('counters carry over an engine restart; the scrape failure in between is counted', async () => {
    let sim = await startSim({ model: MODEL, seed: 7, speed: 50 });
    const listen = sim.url.replace('http://', '');
    const agent = await startAgent({ upstream: sim.url, extra: FAST });
    try {
      await traffic(agent.url, 4);
      const first = metricSum(await scrapeSim(sim), 'vllm:prompt_tokens_total');
      await pollUntil(async () => metricSum(parsePrometheus(await scrapeAgent(agent)), 'gen_ai_vllm_prompt_tokens_total') === first, { timeoutMs: 5000 });
      await stopAll(sim);
      await pollUntil(async () => metricSum(parsePrometheus(await scrapeAgent(agent)), 'infertel_scrape_failures_total') > 0, { timeoutMs: 5000 });
      const down = parsePrometheus(await scrapeAgent(agent));
      assert.equal(metricSum(down, 'gen_ai_vllm_num_requests_running'), 0);
      assert.ok(!down.some((s) => s.name === 'gen_ai_vllm_kv_cache_usage_perc'), 'no stale gauges while the engine is down');
      sim = await startSim({ model: MODEL, seed: 8, speed: 50, listen });
      await traffic(agent.url, 2);
      const second = metricSum(await scrapeSim(sim), 'vllm:prompt_tokens_total');
      assert.ok(second < first, 'the new engine counts from zero');
      const total = await pollUntil(async () => {
        const v = metricSum(parsePrometheus(await scrapeAgent(agent)), 'gen_ai_vllm_prompt_tokens_total');
        return v === first + second ? v : null;
      }, { timeoutMs: 5000 });
      assert.equal(total, first + second);
      assert.ok(metricSum(parsePrometheus(await scrapeAgent(agent)), 'infertel_scrape_engine_restarts_total') > 0);
    } finally {
      await stopAll(agent, sim);
    }
  });

  test('collect-metrics off: no M3 families, the engine\'s own /metrics untouched', async () => {
    const sim = await startSim({ model: MODEL, seed: 9, speed: 50 });
    const agent = await startAgent({ upstream: sim.url, extra: FAST, env: { OTEL_INSTRUMENTATION_VLLM_METRICS_ENABLED: 'false' } });
    try {
      await traffic(agent.url, 2);
      await new Promise((r) => setTimeout(r, 600));
      const samples = parsePrometheus(await scrapeAgent(agent));
      assert.ok(!samples.some((s) => !s.name.startsWith('infertel_')), samples.map((s) => s.name).join(','));
      assert.ok(metricSum(await scrapeSim(sim), 'vllm:prompt_tokens_total') > 0, 'engine metrics still there');
    } finally {
      await stopAll(agent, sim);
    }
  });
});

describe('metrics: SGLang', () => {
  const startSglang = (extra = []) => startSim({ engine: 'sglang', model: MODEL, seed: 11, speed: 50, extra });
  const startAgentFor = (sim) => startAgent({ upstream: sim.url, engine: 'sglang', extra: FAST });

  for (const version of ['0.5.20', '0.4.3', '0.3.5']) {
    test(`--enable-metrics (SGLang ${version} exposition): snapshot counters, log count, gateway totals`, async () => {
      const sim = await startSglang(['--enable-metrics', '--enable-cache-report', '--sglang-version', version]);
      const agent = await startAgentFor(sim);
      try {
        const seen = await traffic(agent.url, 4);
        // The same long prompt twice: the second hits SGLang's prefix cache.
        let cached = 0;
        const long = 'the quick brown fox jumps over the lazy dog '.repeat(40);
        for (let i = 0; i < 2; i++) {
          const r = await openaiClient(agent.url).chat.completions.create({ model: MODEL, messages: [{ role: 'user', content: long }], max_tokens: 2 });
          seen.input += r.usage.prompt_tokens;
          seen.output += r.usage.completion_tokens;
          cached += r.usage.prompt_tokens_details?.cached_tokens ?? 0;
        }
        assert.ok(cached > 0, 'the engine reported cached tokens');
        const text = await pollUntil(async () => {
          const t = await scrapeAgent(agent);
          return metricSum(parsePrometheus(t), 'sglang_log_count_total') >= 2 ? t : null;
        }, { timeoutMs: 5000 });
        await promtoolCheck(text);
        const s = parsePrometheus(text);
        for (const name of ['sglang_num_running_reqs_total', 'sglang_num_queue_reqs_total', 'sglang_token_usage_total', 'sglang_gen_throughput_total', 'gen_ai_sglang_cache_hit_rate_total'])
          assert.ok(s.some((x) => x.name === name), `${name}\n${text}`);
        // 0.3.x had no num_used_tokens: nothing is made up for it.
        assert.equal(s.some((x) => x.name === 'sglang_num_used_tokens_total'), version !== '0.3.5', text);
        const dims = s.find((x) => x.name === 'sglang_log_count_total').labels;
        assert.deepEqual(dims, { callKind: 'custom_entry', callType: 'gen_ai', rpcType: '2100' });
        assert.equal(metricSum(s, 'prompt_tokens_total'), seen.input);
        assert.equal(metricSum(s, 'generation_tokens_total'), seen.output);
        assert.equal(metricSum(s, 'num_requests_total'), 6);
        assert.ok(metricSum(s, 'gen_ai_server_time_to_first_token_total') > 0);
        assert.ok(metricSum(s, 'sglang_inter_token_latency_seconds_total') >= 0);
        assert.ok(metricSum(s, 'gen_ai_server_request_duration_total') > 0);
        assert.equal(metricSum(s, 'gen_ai_sglang_cached_tokens_total'), cached);
        assert.ok(!s.some((x) => x.name.startsWith('gen_ai_vllm_')), 'no vLLM families from SGLang');
      } finally {
        await stopAll(agent, sim);
      }
    });
  }

  test('without --enable-metrics: the gateway still fills the request-level families', async () => {
    const sim = await startSglang();
    const agent = await startAgentFor(sim);
    try {
      const seen = await traffic(agent.url, 2);
      const s = await pollUntil(async () => {
        const x = parsePrometheus(await scrapeAgent(agent));
        return metricSum(x, 'infertel_scrape_failures_total') > 0 ? x : null;
      }, { timeoutMs: 5000 });
      assert.equal(metricSum(s, 'prompt_tokens_total'), seen.input);
      assert.equal(metricSum(s, 'num_requests_total'), 2);
      assert.ok(!s.some((x) => x.name === 'sglang_log_count_total'), 'no stats periods without engine metrics');
      assert.equal((await get(`${sim.url}/metrics`)).status, 404, 'the engine\'s /metrics is not touched');
    } finally {
      await stopAll(agent, sim);
    }
  });
});
