// infertel's web UI: one script for every page, routed by location.pathname.
//
// Everything shown here may have been written by a stranger (prompts, completions, attribute
// values, model and tenant names), so text reaches the page only through textContent, created
// elements and setAttribute of attributes that are never interpreted (class, title, href built
// from ids checked as hex). Nothing is parsed as HTML; the Content-Security-Policy forbids
// inline script as a second wall.
'use strict';

// ---- DOM helpers -------------------------------------------------------------------------

const SVG_NS = 'http://www.w3.org/2000/svg';
const SAFE_ATTRS = new Set(['class', 'title', 'href', 'type', 'name', 'value', 'placeholder',
  'for', 'id', 'role', 'colspan', 'min', 'step', 'autocomplete', 'method', 'action',
  'data-span', 'data-phase', 'data-name', 'data-key', 'data-metric', 'aria-label', 'selected']);

/** An element with safe attributes and children (strings become text nodes). */
function h(tag, attrs = {}, ...children) {
  const e = document.createElement(tag);
  setAttrs(e, attrs);
  for (const c of children.flat()) {
    if (c === null || c === undefined || c === false) continue;
    e.append(typeof c === 'string' || typeof c === 'number' ? document.createTextNode(String(c)) : c);
  }
  return e;
}

/** An SVG element; its attributes are numbers or names chosen by this script. */
function s(tag, attrs = {}) {
  const e = document.createElementNS(SVG_NS, tag);
  for (const [k, v] of Object.entries(attrs)) e.setAttribute(k, String(v));
  return e;
}

function setAttrs(e, attrs) {
  for (const [k, v] of Object.entries(attrs)) {
    if (v === null || v === undefined || v === false) continue;
    if (!SAFE_ATTRS.has(k)) throw new Error(`attribute not allowed: ${k}`);
    if (k === 'href' && !/^\/ui\/[A-Za-z0-9/_?=&%.-]*$/.test(v)) throw new Error('href outside the UI');
    e.setAttribute(k, v === true ? '' : String(v));
  }
}

const HEX32 = /^[0-9a-f]{32}$/;
const HEX16 = /^[0-9a-f]{16}$/;
const traceHref = (id) => (HEX32.test(id) ? `/ui/trace/${encodeURIComponent(id)}` : null);

function mount(...children) {
  const main = document.getElementById('main');
  main.replaceChildren(...children);
  return main;
}

function setStatus(text) {
  document.getElementById('status').textContent = text;
}

// ---- the API, with the admin token when one is needed ------------------------------------

const TOKEN_KEY = 'infertel.admin-token';

class AuthNeeded extends Error {}

/** fetch() of an API path with the stored token; throws AuthNeeded on a 401. */
async function api(path, { method = 'GET', body } = {}) {
  const headers = {};
  const token = sessionStorage.getItem(TOKEN_KEY);
  if (token) headers.Authorization = `Bearer ${token}`;
  if (body !== undefined) headers['Content-Type'] = 'application/json';
  const r = await fetch(path, { method, headers, body: body === undefined ? undefined : JSON.stringify(body) });
  if (r.status === 401) throw new AuthNeeded();
  let json = null;
  try { json = await r.json(); } catch { /* not JSON: json stays null */ }
  return { status: r.status, ok: r.ok, json };
}

const errorText = (r) => r.json?.error?.message ?? `HTTP ${r.status}`;

/** The form that asks for the admin token, then runs the page again. */
function askToken(again) {
  const input = h('input', { type: 'password', name: 'token', autocomplete: 'off', 'aria-label': 'admin token' });
  const form = h('form', { class: 'token-form' },
    h('p', {}, 'This agent needs its admin token (INFERTEL_ADMIN_TOKEN). It is kept in this tab only.'),
    input, h('button', { type: 'submit' }, 'Use token'));
  form.addEventListener('submit', (ev) => {
    ev.preventDefault();
    sessionStorage.setItem(TOKEN_KEY, input.value.trim());
    again();
  });
  mount(h('h1', {}, 'Admin token'), form);
  input.focus();
}

/** Runs a page, asking for the token when the API wants one. */
async function run(page) {
  try {
    await page();
  } catch (e) {
    if (e instanceof AuthNeeded) return askToken(() => run(page));
    mount(h('p', { class: 'error' }, `Error: ${e.message}`));
  }
}

// ---- formatting --------------------------------------------------------------------------

function fmtMs(ms) {
  if (ms < 1) return `${(ms * 1000).toFixed(0)} µs`;
  if (ms < 1000) return `${ms.toFixed(ms < 10 ? 2 : 1)} ms`;
  return `${(ms / 1000).toFixed(2)} s`;
}

function fmtValue(v, unit) {
  if (v === null || v === undefined) return '–';
  if (unit === 's') return fmtMs(v * 1000);
  if (unit === 'ratio') return `${(v * 100).toFixed(1)} %`;
  return Math.abs(v) >= 100 ? v.toFixed(0) : v.toFixed(2);
}

/** An event's time from its span's start: +12.0 ms, or −120 µs when it came before it. */
function fmtOffset(eventNs, spanStartNs) {
  const ns = Number(BigInt(eventNs) - BigInt(spanStartNs));
  return `${ns < 0 ? '−' : '+'}${fmtMs(Math.abs(ns) / 1e6)}`;
}

const fmtTime = (unixNanoString) => new Date(Number(BigInt(unixNanoString) / 1000000n)).toLocaleString();

// ---- overview: charts of the metric series -------------------------------------------------

const CHARTS = [
  { title: 'Requests per second', metrics: ['requests_per_second'] },
  { title: 'Errors per second', metrics: ['errors_per_second'] },
  { title: 'Time to first token', metrics: ['ttft_p50_seconds', 'ttft_p90_seconds', 'ttft_p99_seconds'], unit: 's' },
  { title: 'Inter-token latency', metrics: ['itl_p50_seconds', 'itl_p90_seconds', 'itl_p99_seconds'], unit: 's' },
  { title: 'End-to-end latency', metrics: ['e2e_p50_seconds', 'e2e_p90_seconds', 'e2e_p99_seconds'], unit: 's' },
  { title: 'SLO attainment', metrics: ['slo_attainment_ratio'], unit: 'ratio', max: 1 },
  { title: 'Goodput (tokens/s)', metrics: ['goodput_tokens_per_second'] },
  { title: 'KV cache usage', metrics: ['kv_cache_usage_ratio'], unit: 'ratio', max: 1 },
  { title: 'Running and waiting requests', metrics: ['requests_running', 'requests_waiting'] },
  { title: 'Preemptions per second', metrics: ['preemptions_per_second'] },
];
const PALETTE = ['#2f6fdf', '#e0662e', '#2a9d57', '#a347c8', '#c9a227', '#d6336c', '#1b9aaa', '#6b7a8f'];
const REFRESH_MS = 5000;
let refreshTimer = null;

/** A series' name in the legend: what differs between the lines of one chart. */
function seriesLabel(series, chart) {
  const parts = [];
  if (chart.metrics.length > 1) parts.push(series.metric.replace(/_seconds$/, '').replace(/^[a-z0-9]+_/, (m) => (m.startsWith('requests') ? 'requests ' : '')));
  if (series.model) parts.push(series.model);
  if (series.tenant) parts.push(`tenant ${series.tenant}`);
  if (series.upstream) parts.push(series.upstream);
  return parts.join(' · ') || series.metric;
}

async function overviewPage() {
  clearTimeout(refreshTimer);
  const r = await api('/api/v1/metrics?since=15m');
  if (!r.ok) {
    mount(h('h1', {}, 'Overview'), h('p', { class: 'muted' }, `No metric series: ${errorText(r)}.`),
      h('p', {}, h('a', { href: '/ui/traces' }, 'Search the traces')));
    return;
  }
  drawOverview(r.json);
  if (r.json.source === 'agent') refreshTimer = setTimeout(() => run(overviewPage), REFRESH_MS);
}

function drawOverview(doc) {
  const live = doc.source === 'agent';
  setStatus(live ? `live · every ${REFRESH_MS / 1000} s` : 'from the store');
  const grid = h('div', { class: 'charts' });
  for (const chart of CHARTS) {
    const series = (doc.series ?? []).filter((x) => chart.metrics.includes(x.metric));
    grid.append(chartCard(chart, doc.times ?? [], series, (doc.step_seconds || 5) * 1000));
  }
  mount(h('h1', {}, 'Overview'),
    h('p', { class: 'muted' }, `${live ? 'The running agent' : 'The store'}: the last 15 minutes, one step every ${doc.step_seconds ?? '?'} s.`),
    grid);
  document.body.dataset.renderedMs = performance.now().toFixed(1);
}

function chartCard(chart, times, series, stepMs) {
  const card = h('section', { class: 'chart', 'data-metric': chart.metrics[0] }, h('h2', {}, chart.title));
  const withData = series.filter((x) => x.values.some((v) => v !== null));
  if (withData.length === 0) {
    card.append(h('p', { class: 'muted nodata' }, 'No data.'));
    return card;
  }
  card.append(chartSvg(chart, times, withData, stepMs));
  const legend = h('ul', { class: 'legend' });
  withData.forEach((x, i) => {
    const last = [...x.values].reverse().find((v) => v !== null);
    const swatch = s('svg', { width: 10, height: 10, class: 'swatch' });
    swatch.append(s('rect', { width: 10, height: 10, fill: PALETTE[i % PALETTE.length] }));
    legend.append(h('li', {}, swatch, ` ${seriesLabel(x, chart)}: `, h('b', {}, fmtValue(last, chart.unit))));
  });
  card.append(legend);
  return card;
}

const W = 460;
const H = 160;
const PAD = { l: 52, r: 8, t: 8, b: 20 };

const MIN_STEPS_SHOWN = 12;

function chartSvg(chart, times, series, stepMs) {
  // An agent that has just started has a few steps: they are drawn at the right of a minute
  // or so, not stretched over the whole width.
  const t1 = times[times.length - 1];
  const t0 = Math.min(times[0], t1 - MIN_STEPS_SHOWN * stepMs);
  let max = chart.max ?? 0;
  for (const x of series) for (const v of x.values) if (v !== null && v > max) max = v;
  if (max <= 0) max = 1;
  const X = (t) => PAD.l + ((t - t0) / (t1 - t0)) * (W - PAD.l - PAD.r);
  const Y = (v) => H - PAD.b - (v / max) * (H - PAD.t - PAD.b);
  const svg = s('svg', { viewBox: `0 0 ${W} ${H}`, class: 'plot', role: 'img' });
  drawAxes(svg, chart, max, X, Y, t0, t1);
  series.forEach((x, i) => drawLine(svg, times, x.values, X, Y, PALETTE[i % PALETTE.length]));
  return svg;
}

function drawAxes(svg, chart, max, X, Y, t0, t1) {
  for (const f of [0, 0.5, 1]) {
    svg.append(s('line', { x1: PAD.l, x2: W - PAD.r, y1: Y(max * f), y2: Y(max * f), class: 'grid' }));
    const label = s('text', { x: PAD.l - 4, y: Y(max * f) + 4, class: 'axis', 'text-anchor': 'end' });
    label.textContent = fmtValue(max * f, chart.unit);
    svg.append(label);
  }
  for (const t of [t0, t1]) {
    const label = s('text', { x: X(t), y: H - 4, class: 'axis', 'text-anchor': t === t0 ? 'start' : 'end' });
    label.textContent = new Date(t).toLocaleTimeString();
    svg.append(label);
  }
}

/** A polyline per run of steps with data (null breaks the line), and a mark per point. */
function drawLine(svg, times, values, X, Y, colour) {
  let run = [];
  const flush = () => {
    if (run.length > 1) svg.append(s('polyline', { points: run.join(' '), fill: 'none', stroke: colour, 'stroke-width': 1.5 }));
    run = [];
  };
  values.forEach((v, i) => {
    if (v === null || times[i] === undefined) return flush();
    const p = `${X(times[i]).toFixed(1)},${Y(v).toFixed(1)}`;
    run.push(p);
    svg.append(s('circle', { cx: X(times[i]).toFixed(1), cy: Y(v).toFixed(1), r: 1.8, fill: colour, class: 'pt' }));
  });
  flush();
}

// ---- traces: the search --------------------------------------------------------------------

const SEARCH_FIELDS = [
  ['model', 'model', 'text'], ['tenant', 'tenant', 'text'], ['status', 'status', 'select'],
  ['min_ms', 'at least (ms)', 'number'], ['since', 'since (15m, or unix ms)', 'text'],
  ['until', 'until (unix ms)', 'text'], ['q', 'text in ids, names, content', 'text'],
];
const CAUSE_LOOKUPS = 20;  // the slowest rows whose latency cause is read from their trace

function searchForm(params) {
  const form = h('form', { class: 'search', method: 'get', action: '/ui/traces' });
  for (const [name, label, type] of SEARCH_FIELDS) {
    let input;
    if (type === 'select') {
      input = h('select', { name, id: `f-${name}` },
        ['', 'ok', 'error', 'unset'].map((v) => h('option', { value: v, selected: params.get(name) === v }, v || 'any')));
    } else {
      input = h('input', { type, name, id: `f-${name}`, value: params.get(name) ?? '', min: type === 'number' ? '0' : null });
    }
    form.append(h('label', { for: `f-${name}` }, label, input));
  }
  form.append(h('button', { type: 'submit' }, 'Search'));
  // Empty fields stay out of the address, so that a shared link says only what was asked.
  form.addEventListener('submit', (ev) => {
    ev.preventDefault();
    const q = new URLSearchParams();
    for (const [k, v] of new FormData(form)) if (String(v).trim() !== '') q.set(k, String(v).trim());
    location.assign(`/ui/traces${q.size ? `?${q}` : ''}`);
  });
  return form;
}

async function tracesPage() {
  const params = new URLSearchParams(location.search);
  const query = new URLSearchParams();
  for (const [name] of SEARCH_FIELDS) if (params.get(name)) query.set(name, params.get(name));
  query.set('limit', params.get('limit') || '100');
  const r = await api(`/api/v1/traces?${query}`);
  const form = searchForm(params);
  if (!r.ok) return mount(h('h1', {}, 'Traces'), form, h('p', { class: 'error' }, errorText(r)));
  const traces = r.json.traces;
  setStatus(`${traces.length} trace${traces.length === 1 ? '' : 's'}`);
  const table = tracesTable(traces);
  mount(h('h1', {}, 'Traces'), form, traces.length ? table : h('p', { class: 'muted' }, 'No trace matches.'));
  document.body.dataset.renderedMs = performance.now().toFixed(1);
  await fillCauses(traces, table);
}

function tracesTable(traces) {
  const longest = Math.max(1e-9, ...traces.map((t) => t.duration_ms));
  const body = h('tbody');
  for (const t of traces) {
    const bar = h('div', { class: `bar ${t.status === 'error' ? 'bar-error' : ''}` });
    bar.style.width = `${Math.max(0.5, (t.duration_ms / longest) * 100)}%`;
    const href = traceHref(t.trace_id);
    body.append(h('tr', { 'data-span': t.trace_id },
      h('td', { class: 'nowrap' }, fmtTime(t.start_time_unix_nano)),
      h('td', {}, href ? h('a', { href, class: 'trace-link' }, t.name || t.trace_id) : t.name, h('div', { class: 'id' }, t.trace_id)),
      h('td', {}, t.model ?? ''), h('td', {}, t.tenant ?? ''),
      h('td', { class: `st st-${t.status}` }, t.status ?? ''),
      h('td', { class: 'dur' }, h('div', { class: 'bar-lane' }, bar), h('span', {}, fmtMs(t.duration_ms))),
      h('td', { class: 'cause' }, '')));
  }
  return h('table', { class: 'traces' },
    h('thead', {}, h('tr', {}, ['started', 'trace', 'model', 'tenant', 'status', 'duration', 'latency cause'].map((c) => h('th', {}, c)))),
    body);
}

/**
 * The search's summary has no latency cause: it is an attribute of the trace's spans (the
 * engine's request span decides, the entry span carries the gateway's own). Read the slowest
 * shown traces, a few at a time.
 */
async function fillCauses(traces, table) {
  const slowest = [...traces].sort((a, b) => b.duration_ms - a.duration_ms).slice(0, CAUSE_LOOKUPS);
  const cells = new Map([...table.querySelectorAll('tbody tr')].map((tr) => [tr.getAttribute('data-span'), tr.querySelector('.cause')]));
  const queue = [...slowest];
  const worker = async () => {
    for (let t = queue.shift(); t; t = queue.shift()) {
      const r = await api(`/api/v1/traces/${encodeURIComponent(t.trace_id)}`);
      const cause = r.ok ? causeOf(r.json.spans) : null;
      cells.get(t.trace_id).textContent = cause ?? '–';
    }
  };
  await Promise.all([worker(), worker(), worker()]);
}

function causeOf(spans) {
  let best = null;
  for (const sp of spans) {
    const c = sp.attributes?.['infertel.latency.cause'];
    if (typeof c !== 'string') continue;
    if (best === null || sp.parent_span_id) best = c;  // the engine's span wins over the entry's
  }
  return best;
}

// ---- one trace: the waterfall ----------------------------------------------------------------

// The engine's phases and request spans, by span name, in the colour of their kind.
const PHASES = [
  ['phase-queue', /^(wait|queue|prefill_waiting|decode_waiting|request_process)$/],
  ['phase-prefill', /^(prefill|prefill_forward|chunked_prefill|prefill_prepare|prefill_bootstrap)$/],
  ['phase-decode', /^(decode|decode_forward|decode_loop|decode_prepare|decode_bootstrap|decode_transferred|spec_.*)$/],
  ['phase-kv', /^(kv_transfer|prefill_transfer_kv_cache)$/],
  ['phase-tokenize', /^(tokenize|detokenize|api_server_dispatch|dpc_dispatch)$/],
  ['phase-engine', /^(llm_request|(\S+ )?Req \S+)$/],
];

function phaseOf(span, isRoot) {
  for (const [cls, re] of PHASES) if (re.test(span.name)) return cls;
  return isRoot ? 'phase-entry' : 'phase-other';
}

/** The spans as a tree: depth-first, children by start time; orphans are roots. */
function treeOrder(spans) {
  const byId = new Map(spans.map((sp) => [sp.span_id, sp]));
  const kids = new Map();
  const roots = [];
  for (const sp of spans) {
    const p = sp.parent_span_id;
    if (p && byId.has(p) && p !== sp.span_id) (kids.get(p) ?? kids.set(p, []).get(p)).push(sp);
    else roots.push(sp);
  }
  const byStart = (a, b) => (BigInt(a.start_time_unix_nano) < BigInt(b.start_time_unix_nano) ? -1 : 1);
  const out = [];
  const seen = new Set();
  const visit = (sp, depth) => {
    if (seen.has(sp.span_id)) return;
    seen.add(sp.span_id);
    out.push({ span: sp, depth, root: depth === 0 });
    for (const c of (kids.get(sp.span_id) ?? []).sort(byStart)) visit(c, depth + 1);
  };
  for (const r of roots.sort(byStart)) visit(r, 0);
  return out;
}

async function tracePage() {
  const id = decodeURIComponent(location.pathname.slice('/ui/trace/'.length));
  if (!HEX32.test(id)) return mount(h('h1', {}, 'Trace'), h('p', { class: 'error' }, 'A trace id is 32 hex digits.'));
  const r = await api(`/api/v1/traces/${encodeURIComponent(id)}`);
  if (!r.ok) return mount(h('h1', {}, 'Trace'), h('p', { class: 'error' }, errorText(r)));
  drawTrace(id, r.json.spans);
  document.body.dataset.renderedMs = performance.now().toFixed(1);
  performance.mark('infertel-waterfall-drawn');
}

function drawTrace(id, spans) {
  const rows = treeOrder(spans);
  let t0 = null;
  let t1 = null;
  for (const sp of spans) {
    const a = BigInt(sp.start_time_unix_nano);
    const b = BigInt(sp.end_time_unix_nano);
    if (t0 === null || a < t0) t0 = a;
    if (t1 === null || b > t1) t1 = b;
  }
  const total = Math.max(1, Number(t1 - t0));
  const pct = (ns) => (Number(BigInt(ns) - t0) / total) * 100;
  const panel = h('aside', { class: 'panel' });
  const fall = h('div', { class: 'waterfall' }, timeScale(total));
  const select = (row, sp) => {
    for (const x of fall.querySelectorAll('.row.selected')) x.classList.remove('selected');
    row.classList.add('selected');
    showSpan(panel, sp, id);
  };
  for (const r of rows) fall.append(waterfallRow(r, pct, select));
  setStatus(`${spans.length} span${spans.length === 1 ? '' : 's'} · ${fmtMs(total / 1e6)}`);
  const root = rows[0]?.span;
  mount(h('h1', {}, root ? root.name : 'Trace', ' ', h('span', { class: 'id' }, id)),
    legend(), h('div', { class: 'trace-view' }, fall, panel));
  if (root) select(fall.querySelector('.row'), root);
}

function timeScale(totalNs) {
  const lane = h('div', { class: 'lane scale' });
  for (const f of [0, 0.25, 0.5, 0.75, 1]) {
    const tick = h('span', { class: 'tick' }, fmtMs((totalNs * f) / 1e6));
    tick.style.left = `${f * 100}%`;
    lane.append(tick);
  }
  return h('div', { class: 'row head' }, h('div', { class: 'label' }, 'span'), lane);
}

function legend() {
  const names = { 'phase-entry': 'entry', 'phase-engine': 'engine request', 'phase-queue': 'queue',
    'phase-prefill': 'prefill', 'phase-kv': 'KV transfer', 'phase-decode': 'decode', 'phase-tokenize': 'tokenize', 'phase-other': 'other' };
  return h('ul', { class: 'phase-legend' },
    Object.entries(names).map(([cls, name]) => h('li', {}, h('span', { class: `chip ${cls}` }), name)),
    h('li', {}, h('span', { class: 'chip event-chip' }), 'event'));
}

function waterfallRow({ span: sp, depth, root }, pct, select) {
  const phase = phaseOf(sp, root);
  const left = pct(sp.start_time_unix_nano);
  const bar = h('div', { class: `bar ${phase}${sp.status_code === 2 || sp.status_code === 'ERROR' ? ' bar-error' : ''}`,
    title: `${sp.name}: ${fmtMs(spanMs(sp))}` });
  bar.style.left = `${left}%`;
  bar.style.width = `${Math.max(0, pct(sp.end_time_unix_nano) - left)}%`;
  const lane = h('div', { class: 'lane' }, bar);
  for (const ev of sp.events ?? []) {
    const mark = h('span', { class: 'event', title: `${ev.name} at ${fmtOffset(ev.time_unix_nano, sp.start_time_unix_nano)}` });
    mark.style.left = `${pct(ev.time_unix_nano)}%`;
    lane.append(mark);
  }
  const label = h('div', { class: 'label' }, sp.name, (sp.links ?? []).length ? h('span', { class: 'link-mark', title: 'has links' }, ' ↗') : null,
    h('span', { class: 'ms' }, fmtMs(spanMs(sp))));
  label.style.paddingLeft = `${4 + depth * 14}px`;
  const row = h('div', { class: 'row', 'data-span': HEX16.test(sp.span_id) ? sp.span_id : '', 'data-phase': phase, 'data-name': sp.name }, label, lane);
  row.addEventListener('click', () => select(row, sp));
  return row;
}

const spanMs = (sp) => Number(BigInt(sp.end_time_unix_nano) - BigInt(sp.start_time_unix_nano)) / 1e6;

// ---- the side panel: every attribute of the selected span ------------------------------------

const CONTENT_KEYS = /^(gen_ai\.(input|output)\.messages|gen_ai\.system_instructions|gen_ai\.prompt|gen_ai\.completion|gen_ai\.completions\..*\.arguments)$/;

const KINDS = ['unspecified', 'internal', 'server', 'client', 'producer', 'consumer'];
const STATUSES = ['unset', 'ok', 'error'];

function showSpan(panel, sp, traceId) {
  const parts = [
    h('h2', {}, sp.name),
    kvTable([
      ['span id', sp.span_id], ['parent', sp.parent_span_id ?? '(root)'], ['kind', KINDS[sp.kind] ?? String(sp.kind ?? '')],
      ['service', sp.service_name ?? ''], ['status', `${STATUSES[sp.status_code] ?? sp.status_code ?? ''}${sp.status_message ? `: ${sp.status_message}` : ''}`],
      ['start', fmtTime(sp.start_time_unix_nano)], ['duration', fmtMs(spanMs(sp))],
    ]),
    h('h3', {}, 'Attributes'), attributesTable(sp.attributes ?? {}),
    eventsList(sp), linksList(sp, traceId),
    h('h3', {}, 'Resource'), attributesTable(sp.resource?.attributes ?? sp.resource ?? {}),
    sp.scope ? h('p', { class: 'muted' }, `scope: ${typeof sp.scope === 'string' ? sp.scope : JSON.stringify(sp.scope)}`) : null];
  panel.replaceChildren(...parts.filter(Boolean));
}

function kvTable(pairs) {
  return h('table', { class: 'kv' }, h('tbody', {}, pairs.map(([k, v]) => h('tr', {}, h('th', {}, k), h('td', {}, v)))));
}

/** Captured content is JSON text: shown indented, as text. */
function valueNode(key, v) {
  if (typeof v === 'string' && CONTENT_KEYS.test(key)) {
    let text = v;
    try { text = JSON.stringify(JSON.parse(v), null, 2); } catch { /* shown as it came */ }
    return h('pre', { class: 'content' }, text);
  }
  return h('span', {}, typeof v === 'string' ? v : JSON.stringify(v));
}

function attributesTable(attrs) {
  const keys = Object.keys(attrs).sort();
  if (!keys.length) return h('p', { class: 'muted' }, 'none');
  return h('table', { class: 'kv attrs' }, h('tbody', {}, keys.map((k) => h('tr', {}, h('th', {}, k), h('td', {}, valueNode(k, attrs[k]))))));
}

function eventsList(sp) {
  const events = sp.events ?? [];
  if (!events.length) return null;
  return h('div', {}, h('h3', {}, `Events (${events.length})`),
    events.map((ev) => h('div', { class: 'event-item' },
      h('div', {}, h('b', {}, ev.name), ` ${fmtOffset(ev.time_unix_nano, sp.start_time_unix_nano)}`),
      attributesTable(ev.attributes ?? {}))));
}

function linksList(sp, traceId) {
  const links = sp.links ?? [];
  if (!links.length) return null;
  return h('div', {}, h('h3', {}, `Links (${links.length})`),
    links.map((l) => {
      const href = l.trace_id !== traceId ? traceHref(l.trace_id) : null;
      const what = `${l.trace_id === traceId ? 'this trace' : `trace ${l.trace_id}`}, span ${l.span_id}`;
      return h('div', { class: 'link-item' }, href ? h('a', { href, class: 'span-link' }, what) : what,
        attributesTable(l.attributes ?? {}));
    }));
}

// ---- config: the live switches ---------------------------------------------------------------

/** The config document, or null when no agent is running (`infertel ui`). */
async function fetchConfig() {
  for (const path of ['/api/v1/config', '/api/config']) {
    const r = await api(path);
    if (r.ok) return { base: path, doc: r.json };
    if (r.json?.error?.type === 'no_agent') return null;
  }
  return null;
}

async function configPage() {
  const got = await fetchConfig();
  if (!got) {
    setStatus('no agent');
    mount(h('h1', {}, 'Configuration'),
      h('p', { class: 'no-agent' }, 'No agent is running: this page shows a store only. Start `infertel agent` to see and change its switches.'));
    return;
  }
  const keys = got.doc.keys ?? [];
  setStatus(`${keys.length} keys`);
  const body = h('tbody');
  for (const k of keys) body.append(configRow(got.base, k));
  mount(h('h1', {}, 'Configuration'),
    h('p', { class: 'muted' }, 'Effective values and where they come from. A change here is the console API layer (over the console file, the environment and the defaults); live keys apply at once, the others at the next restart.'),
    h('table', { class: 'config' },
      h('thead', {}, h('tr', {}, ['key', 'value', 'source', 'apply', 'environment', 'change'].map((c) => h('th', {}, c)))),
      body));
  document.body.dataset.renderedMs = performance.now().toFixed(1);
}

const shown = (v) => (typeof v === 'string' ? v : JSON.stringify(v));

function configRow(base, k) {
  const valueCell = h('td', { class: 'value' }, shown(k.value));
  const sourceCell = h('td', {}, `${k.source}${k.layer ? ` (${k.layer})` : ''}`);
  const message = h('div', { class: 'msg' });
  const editor = valueEditor(k);
  const apply = async (method, body) => {
    const r = await api(`${base}/${encodeURIComponent(k.key)}`, { method, body });
    if (!r.ok) return (message.textContent = errorText(r));
    message.textContent = r.json.pending_restart ? 'applies at the next restart' : 'applied';
    valueCell.textContent = shown(r.json.value);
    sourceCell.textContent = `${r.json.source}${r.json.layer ? ` (${r.json.layer})` : ''}`;
  };
  const set = h('button', { type: 'button', class: 'set' }, 'Set');
  set.addEventListener('click', () => run(() => apply('PUT', { value: editor.read() })));
  const reset = h('button', { type: 'button', class: 'reset', title: 'remove the value set here' }, 'Reset');
  reset.addEventListener('click', () => run(() => apply('DELETE')));
  // An engine knob this engine cannot change: shown, not offered.
  if (k.unsupported) {
    for (const control of [editor.node, set, reset]) control.disabled = true;
    message.textContent = k.unsupported;
  }
  return h('tr', { 'data-key': k.key },
    h('td', {}, h('code', {}, k.key), k.accepted ? h('div', { class: 'muted' }, k.accepted) : null),
    valueCell, sourceCell, h('td', {}, k.apply ?? ''), h('td', {}, k.env ?? ''),
    h('td', { class: 'nowrap' }, editor.node, set, reset, message));
}

/** An input for a key's type; read() gives the JSON value to PUT. */
function valueEditor(k) {
  if (k.type === 'bool') {
    const sel = h('select', { 'aria-label': k.key }, ['true', 'false'].map((v) => h('option', { value: v, selected: String(k.value) === v }, v)));
    return { node: sel, read: () => sel.value === 'true' };
  }
  const input = h('input', { type: 'text', value: shown(k.value ?? ''), 'aria-label': k.key });
  const read = () => {
    if (k.type === 'int') return Number(input.value);
    if (k.type === 'list' || k.type === 'table') {
      try { return JSON.parse(input.value); } catch { return input.value; }
    }
    return input.value;
  };
  return { node: input, read };
}

// ---- routing -----------------------------------------------------------------------------------

// Path → [the nav entry it lights, the page]; index.html is served for each of them.
const ROUTES = [
  [(p) => p === '/ui/' || p === '/ui', 'overview', overviewPage],
  [(p) => p === '/ui/traces', 'traces', tracesPage],
  [(p) => p.startsWith('/ui/trace/'), 'traces', tracePage],
  [(p) => p === '/ui/config', 'config', configPage],
];

function notFoundPage() {
  mount(h('h1', {}, 'Not found'), h('p', {}, h('a', { href: '/ui/' }, 'Overview')));
}

function route() {
  const found = ROUTES.find(([matches]) => matches(location.pathname));
  if (!found) return notFoundPage;
  document.querySelector(`nav a[data-page="${found[1]}"]`)?.classList.add('active');
  return found[2];
}

document.addEventListener('DOMContentLoaded', () => run(route()));
