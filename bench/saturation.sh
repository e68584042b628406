#!/usr/bin/env bash
# bench/saturation.sh BUILD_DIR — the agent at saturation against nginx, in one run: added p99,
# throughput and CPU per request, with the store on (the default) and with --no-store (issue 38,
# item 4; see docs/performance-history.md, "Saturation: bench/saturation.sh").
#
# Builds nothing: takes the build directory holding `infertel` and `infertel-loadgen`.
# Starts, all on 127.0.0.1: the upstream (`infertel-loadgen serve`: answers a chat completion at
# once with a fixed vLLM-shaped body) and wrk on core $LG_CPU; nginx (bench/nginx.conf.template,
# one worker) and two agents with their defaults (gateway threads, store, receivers on
# OS-chosen ports) on core $PROXY_CPU: `--store FILE` (the default destination, in the temp
# dir) and `--no-store`. Then, for $BENCH_SAT_ROUNDS rounds (4), alternating direct, nginx,
# infertel+store, infertel: wrk closed loop, $BENCH_SAT_CONNECTIONS (32) connections on one
# wrk thread, non-streaming chat, $BENCH_SAT_DURATION s (6) after an unmeasured second.
# Per run: requests/s, p50/p99 (wrk's), and the proxy's CPU per request (utime + stime of the
# nginx worker or the whole agent from /proc/PID/stat around the run, divided by the requests;
# the upstream is another process, so its cost is not in it); for the agents also the CPU per
# request of each thread and their context switches per request. Each ratio is taken round by round against nginx's run of the same
# round (added p99 = p99 − direct's p99 of the same round) and reported as the median of the
# rounds. All of it twice by default: with that layout ("pinned") and with nothing pinned
# ("shared", nginx with one worker per core), BENCH_SAT_LAYOUT below. Every process it starts
# is stopped on exit. About 3 minutes per layout (more on a loaded machine).
set -euo pipefail

ROOT=$(cd "$(dirname "$0")/.." && pwd)
# shellcheck source=bench/lib.sh
source "$ROOT/bench/lib.sh"
use_build "${1:-build}" "saturation bench" infertel infertel-loadgen
command -v nginx >/dev/null || { echo "saturation bench: nginx not installed (make deps)" >&2; exit 1; }
command -v wrk >/dev/null || { echo "saturation bench: wrk not installed (make deps)" >&2; exit 1; }

ROUNDS=${BENCH_SAT_ROUNDS:-4}
DURATION=${BENCH_SAT_DURATION:-6}
CONNS=${BENCH_SAT_CONNECTIONS:-32}
# Where the processes run. `pinned` (the default): the upstream and wrk on core 0, each proxy
# alone on core 1 with one nginx worker; the proxy's core saturates, so throughput is the
# inverse of its CPU per request. `shared`: nothing pinned, every process on both cores as an
# agent beside an engine runs, nginx with one worker per core (its `worker_processes auto`,
# two here, as the agent's two gateway workers); throughput is then what the whole machine
# serves, the proxy's CPU taken from the upstream and wrk as it would be from an engine.
# BENCH_SAT_LAYOUT="pinned shared" (the default) runs the whole bench once per layout.
LAYOUT=${BENCH_SAT_LAYOUT:-pinned shared}
if [[ $LAYOUT == *" "* ]]; then
  for one in $LAYOUT; do BENCH_SAT_LAYOUT=$one bash "$0" "$@" || exit; done
  exit 0
fi
[[ $LAYOUT == pinned || $LAYOUT == shared ]] ||
  { echo "saturation bench: BENCH_SAT_LAYOUT is pinned or shared, not $LAYOUT" >&2; exit 2; }
# Extra flags for both agents: BENCH_SAT_AGENT_FLAGS="--threads 1".
read -r -a EXTRA <<<"${BENCH_SAT_AGENT_FLAGS:-}"
# A candidate, to measure a change in the same run: a fifth target "candidate", an agent with
# the store (another binary, BENCH_SAT_CANDIDATE_BIN, and/or other flags,
# BENCH_SAT_CANDIDATE_FLAGS), alternating with the others; its ratios are printed beside theirs.
CANDIDATE_BIN=${BENCH_SAT_CANDIDATE_BIN:-}
read -r -a CANDIDATE_FLAGS <<<"${BENCH_SAT_CANDIDATE_FLAGS:-}"
# BENCH_SAT_CANDIDATE_SETUP: a command run with the candidate's pid as its last argument once it
# listens (to change its threads' scheduling from outside, say).
CANDIDATE_SETUP=${BENCH_SAT_CANDIDATE_SETUP:-}
CANDIDATE=""
[[ -n $CANDIDATE_BIN || ${#CANDIDATE_FLAGS[@]} -gt 0 || -n $CANDIDATE_SETUP ]] && CANDIDATE=1

pin_cores
if [[ $LAYOUT == shared ]]; then
  PIN_LG=() PIN_PROXY=() LG_CPU="" PROXY_CPU=""
  NGINX_WORKER_PROCESSES=$(nproc)
fi
bench_init "saturation bench" saturation
agent_compat_flags "$INFERTEL"
AGENT_ARGS=("${EXTRA[@]}")

UP_PORT=$("$LOADGEN" freeport)
"${PIN_LG[@]}" "$LOADGEN" serve --serve "127.0.0.1:$UP_PORT" --model bench-model \
  --duration 100000 >"$TMP/upstream.log" 2>&1 &
PIDS+=($!)
wait_port "$UP_PORT"
start_nginx nginx "$UP_PORT"
start_agent agent-store "$UP_PORT" --store "$TMP/bench.db"
STORE_PORT=$AGENT_PORT STORE_PID=$AGENT_PID
start_agent agent "$UP_PORT" --no-store
NOSTORE_PORT=$AGENT_PORT NOSTORE_PID=$AGENT_PID
if [[ -n $CANDIDATE ]]; then
  SAVED=$INFERTEL
  INFERTEL=${CANDIDATE_BIN:-$INFERTEL}
  start_agent agent-candidate "$UP_PORT" --store "$TMP/candidate.db" "${CANDIDATE_FLAGS[@]}"
  CAND_PORT=$AGENT_PORT CAND_PID=$AGENT_PID
  if [[ -n $CANDIDATE_SETUP ]]; then $CANDIDATE_SETUP "$CAND_PID"; fi
  INFERTEL=$SAVED
fi

cat >"$TMP/chat.lua" <<'LUA'
wrk.method = "POST"
wrk.headers["Content-Type"] = "application/json"
wrk.body = '{"model":"bench-model","messages":[{"role":"system","content":"You are a helpful assistant. Answer briefly."},{"role":"user","content":"Summarise the benefits of continuous batching for LLM inference servers in two sentences."}],"temperature":0.7,"top_p":0.95,"max_tokens":16}'
LUA

# thread_switches PID: one line per thread of PID, "name switches" (voluntary and not).
thread_switches() {
  local t
  for t in /proc/"$1"/task/*; do
    printf '%s %s\n' "$(tr ' ' '_' <"$t/comm")" \
      "$(awk '/ctxt_switches/ { n += $2 } END { print n + 0 }' "$t/status")"
  done 2>/dev/null
}

RESULTS=$TMP/results.txt
: >"$RESULTS"
# run LABEL PORT PID: one closed-loop run; appends "RUN label= …" with wrk's figures and the
# proxy's CPU ticks, and one "THREADS label= …" line with its threads' µs per request.
run() {
  local label=$1 pid=$3 url="http://127.0.0.1:$2/v1/chat/completions"
  "${PIN_LG[@]}" wrk -t1 -c"$CONNS" -d1s -s "$TMP/chat.lua" "$url" >/dev/null 2>&1 || true
  local t0=0 t1=0
  [[ $pid != - ]] && {
    t0=$(cpu_ticks "$pid")
    thread_ticks "$pid" >"$TMP/th0"
    thread_switches "$pid" >"$TMP/sw0"
  }
  "${PIN_LG[@]}" wrk -t1 -c"$CONNS" -d"${DURATION}s" --latency -s "$TMP/chat.lua" "$url" \
    >"$TMP/wrk.out" 2>&1 || true
  [[ $pid != - ]] && {
    t1=$(cpu_ticks "$pid")
    thread_ticks "$pid" >"$TMP/th1"
    thread_switches "$pid" >"$TMP/sw1"
  }
  python3 - "$TMP/wrk.out" "$label" "$((t1 - t0))" "$(getconf CLK_TCK)" >>"$RESULTS" <<'PY'
import re, sys
text = open(sys.argv[1]).read()
def us(s):
    m = re.match(r"([\d.]+)(us|ms|s)", s)
    return float(m.group(1)) * {"us": 1, "ms": 1e3, "s": 1e6}[m.group(2)]
pct = dict(re.findall(r"^\s+(\d+)%\s+(\S+)", text, re.M))
n = re.search(r"(\d+) requests in ([\d.]+)(\w+)", text)
errs = sum(int(x) for x in re.findall(r"(?:Non-2xx or 3xx responses|Socket errors:.*?): (\d+)", text))
if not n or "99" not in pct:
    sys.stderr.write(f"saturation bench: no wrk result for {sys.argv[2]}:\n{text}\n")
    sys.exit(0)
count = int(n.group(1))
secs = float(n.group(2)) * {"s": 1, "ms": 1e-3, "m": 60}.get(n.group(3), 1)
cpu_us = int(sys.argv[3]) / int(sys.argv[4]) * 1e6
print(f"RUN label={sys.argv[2]} count={count} per_s={count / secs:.1f} p50={us(pct['50'])} "
      f"p99={us(pct['99'])} cpu_us_req={cpu_us / count if count else 0:.2f} errors={errs}")
PY
  if [[ $pid != - ]] && tail -1 "$RESULTS" | grep -q "label=$label "; then
    local n
    n=$(result_field "$RESULTS" count RUN)
    echo "THREADS label=$label $(thread_us_per_item "$TMP/th0" "$TMP/th1" "$n")" >>"$RESULTS"
    # Context switches per request, all threads: each is a wake-up or a preemption.
    echo "SWITCHES label=$label per_req=$(awk -v n="$n" 'NR == FNR { b += $2; next } { a += $2 }
      END { printf "%.3f", (n > 0 ? (a - b) / n : 0) }' "$TMP/sw0" "$TMP/sw1")" >>"$RESULTS"
  fi
}

echo "saturation bench: $(date -u '+%Y-%m-%d %H:%M UTC'), $(nproc) cores, load average $(load_avg)"
echo "saturation bench: layout $LAYOUT; wrk -t1 -c$CONNS ${DURATION}s per run, $ROUNDS alternating rounds;" \
  "nginx workers ${NGINX_WORKER_PROCESSES:-1}; upstream+wrk on core ${LG_CPU:-any}, proxies on core ${PROXY_CPU:-any};" \
  "agents: defaults${EXTRA[*]:+ + ${EXTRA[*]}}${CANDIDATE:+; candidate: ${CANDIDATE_BIN:-same binary} ${CANDIDATE_FLAGS[*]} ${CANDIDATE_SETUP}}"
LOAD_BEFORE=$(load_avg)
for ((r = 1; r <= ROUNDS; r++)); do
  run direct "$UP_PORT" -
  run nginx "$NGINX_PORT" "$NGINX_WORKERS"
  run infertel+store "$STORE_PORT" "$STORE_PID"
  run infertel "$NOSTORE_PORT" "$NOSTORE_PID"
  if [[ -n $CANDIDATE ]]; then run candidate "$CAND_PORT" "$CAND_PID"; fi
done
LOAD_AFTER=$(load_avg)
DROPPED=$(metric "$(wait_line "$TMP/agent-store.log" 'admin listening on' | port_of)" \
  infertel_exporter_dropped_items)

python3 - "$RESULTS" "$LOAD_BEFORE" "$LOAD_AFTER" "$DROPPED" "$LAYOUT" <<'PY'
import sys
runs, threads, switches = {}, {}, {}
for line in open(sys.argv[1]):
    kind, *fields = line.split()
    kv = dict(f.split("=", 1) for f in fields)
    label = kv.pop("label")
    if kind == "RUN":
        runs.setdefault(label, []).append({k: float(v) for k, v in kv.items()})
    elif kind == "SWITCHES":
        switches.setdefault(label, []).append(float(kv.get("per_req") or 0))
    else:
        threads.setdefault(label, []).append({k: float(v) for k, v in kv.items()})
def median(xs):  # the lower median, as bench/run.sh reports rounds
    xs = sorted(x for x in xs if x is not None)
    return xs[(len(xs) - 1) // 2] if xs else None
def fmt(x, spec="{:.0f}"):
    return "n/a" if x is None else spec.format(x)
def joined(xs, spec):
    return " / ".join(fmt(x, spec) for x in xs)
def by_round(label, f):
    rs = zip(runs.get(label, []), runs.get("nginx", []), runs.get("direct", []))
    return [f(a, n, d) for a, n, d in rs]
def added(a, d):
    return a["p99"] - d["p99"]
def p99_ratio(a, n, d):
    return added(a, d) / added(n, d) if added(n, d) > 0 else None
print(f"\nload average before {sys.argv[2]}, after {sys.argv[3]}")
print(f"{'target':<16}{'req/s':>9}{'p50 µs':>9}{'p99 µs':>9}{'+p99 µs':>9}{'cpu µs/req':>12}"
      "  (medians of the rounds)  rounds: req/s | +p99 | cpu µs/req")
LABELS = [l for l in ("infertel+store", "infertel", "candidate") if l in runs]
for label in ["direct", "nginx"] + LABELS:
    rs = runs.get(label, [])
    if not rs:
        continue
    adds = [added(a, d) for a, d in zip(rs, runs["direct"])] if label != "direct" else []
    cpu = median([r["cpu_us_req"] for r in rs]) if label != "direct" else None
    print(f"{label:<16}{median([r['per_s'] for r in rs]):>9.0f}{median([r['p50'] for r in rs]):>9.0f}"
          f"{median([r['p99'] for r in rs]):>9.0f}{fmt(median(adds)):>9}{fmt(cpu, '{:.1f}'):>12}"
          f"  {joined([r['per_s'] for r in rs], '{:.0f}')} | {joined(adds, '{:.0f}')}"
          f" | {joined([r['cpu_us_req'] for r in rs] if label != 'direct' else [], '{:.1f}')}")
errors = sum(r["errors"] for rs in runs.values() for r in rs)
print(f"errors (non-2xx, socket): {errors:.0f}; spans the store agent dropped: {sys.argv[4]}")
print("\nagent CPU per request by thread, µs (median round):")
for label in LABELS:
    ts = threads.get(label, [])
    if ts:
        names = sorted({k for t in ts for k in t}, key=lambda k: -median([t.get(k, 0) for t in ts]))
        print(f"  {label:<16}" + " ".join(f"{k}={median([t.get(k, 0) for t in ts]):.2f}" for k in names)
              + f"; context switches per request {joined(switches.get(label, []), '{:.2f}')}")
print("\nIssue 38 item 4 (each ratio against nginx's run of the same round, median of the rounds)")
print(f"{'target':<44}" + "".join(f"{l:>16}" for l in LABELS) + "  rounds (" + " | ".join(LABELS) + ")")
def row(name, f, ok):
    cells, rounds = [], []
    for label in LABELS:
        xs = by_round(label, f)
        m = median(xs)
        cells.append("n/a" if m is None else f"{m:.2f}x {'ok' if ok(m) else 'MISS'}")
        rounds.append(joined(xs, "{:.2f}"))
    print(f"{name:<44}" + "".join(f"{c:>16}" for c in cells) + "  " + " | ".join(rounds))
row("added p99: <= 1.5x nginx's", p99_ratio, lambda x: x <= 1.5)
row("throughput (req/s): >= 0.95x nginx's", lambda a, n, d: a["per_s"] / n["per_s"], lambda x: x >= 0.95)
row("CPU per request: <= 1.5x nginx's", lambda a, n, d: a["cpu_us_req"] / n["cpu_us_req"],
    lambda x: x <= 1.5)
# In a closed loop the latency is the connections over the throughput (Little's law), and with
# the proxy's core saturated the throughput is the inverse of its CPU per request: all three
# ratios follow the CPU per request. This row is the throughput that CPU alone allows. (Shared,
# the upstream's and wrk's CPU count too: no such simple bound.)
if sys.argv[5] == "pinned":
    allowed = "throughput its CPU per request allows"
    print(f"{allowed:<44}" + "".join(
        f"{median(by_round(l, lambda a, n, d: n['cpu_us_req'] / a['cpu_us_req'])):>15.2f}x"
        for l in LABELS))
PY
