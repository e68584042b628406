#!/usr/bin/env bash
# bench/allocations.sh BUILD_DIR — heap allocations the agent makes per request and per relayed
# SSE event, for each way it can run (issue 7: "allocation per request and per chunk").
#
# Counts, not times: on a shared 2-core VM the CPU per request moves by a third between runs,
# while an allocation count moves by a few tenths, so a change that saves one allocation per
# request shows here even when no timing can resolve it.
#
# How: the agent links jemalloc, which prints its statistics at exit when MALLOC_CONF asks
# (stats_print). The merged arenas' `total: nrequests` is every malloc/new the process made,
# served from a thread cache or not; `nfill` and `nflush` count the thread caches' trips to the
# shared arenas, which is what memory allocated on one thread and freed on another costs.
# For each mode (the agent with no exporter, with the embedded store, exporting over OTLP gRPC
# to infertel-otlp-bench's sink), a fresh agent per run, each run the same length:
#   idle     no traffic: the agent's own background allocations (scrapes, timers, flushes)
#   plain    closed-loop non-streaming chat, 32 connections, $SECONDS_RUN s
#   short    SSE streams of $SHORT_EVENTS events
#   long     SSE streams of $LONG_EVENTS events
# Per request = (plain − idle) / requests. A stream costs a + b × events; the two stream runs
# give b, the allocations per relayed event, and a, per stream. Requests and events are the
# loadgen's counts (responses; events, and first events for streams), with no warm-up, so that
# every request the agent served is counted. Then the agent is stopped (SIGTERM) and its
# statistics read. About 1 minute.
#
# Environment: BENCH_ALLOC_SECONDS (3), BENCH_ALLOC_MODES ("nostore store otlp"),
#   BENCH_ALLOC_SHORT_EVENTS (10), BENCH_ALLOC_LONG_EVENTS (60),
#   BENCH_LOADGEN_CPU, BENCH_PROXY_CPU as in bench/run.sh.
# Output: one `RESULT allocations ...` line per mode and a table.
set -euo pipefail

ROOT=$(cd "$(dirname "$0")/.." && pwd)
# shellcheck source=bench/lib.sh
source "$ROOT/bench/lib.sh"
use_build "${1:-build}" allocations infertel infertel-loadgen infertel-otlp-bench
ldd "$INFERTEL" | grep -q jemalloc ||
  { echo "allocations: $INFERTEL does not link jemalloc, whose statistics this reads" >&2; exit 1; }

SECONDS_RUN=${BENCH_ALLOC_SECONDS:-3}
MODES=${BENCH_ALLOC_MODES:-nostore store otlp}
SHORT_EVENTS=${BENCH_ALLOC_SHORT_EVENTS:-10}
LONG_EVENTS=${BENCH_ALLOC_LONG_EVENTS:-60}

pin_cores
bench_init allocations alloc
AGENT_ARGS=(--threads 1)
agent_compat_flags "$INFERTEL"
UP_PORT=$("$LOADGEN" freeport)
SINK_PORT=0
[[ " $MODES " == *" otlp "* ]] && start_sink grpc "$TMP/sink.log"

# Only the merged arenas' summary: omit general info, destroyed and per-arena stats, bins,
# large classes, mutexes, extents and the HPA.
STATS_CONF=stats_print:true,stats_print_opts:gdablxeh

# run MODE KIND: one fresh agent, one run; prints "nrequests nfill nflush items streams"
run() {
  local mode=$1 kind=$2 args=()
  case $mode in
    nostore) args=(--no-store) ;;
    store) args=(--store "$TMP/$kind.db") ;;
    otlp) args=(--no-store --otlp-endpoint "http://127.0.0.1:$SINK_PORT" --otlp-protocol grpc) ;;
  esac
  MALLOC_CONF=$STATS_CONF start_agent "agent-$mode-$kind" "$UP_PORT" "${args[@]}"
  local out="" common=(--target "127.0.0.1:$AGENT_PORT" --label "$mode-$kind" --warmup 0
    --model bench-model --serve "127.0.0.1:$UP_PORT" --duration "$SECONDS_RUN")
  case $kind in
    idle) sleep "$SECONDS_RUN" ;;
    plain) out=$("${PIN_LG[@]}" "$LOADGEN" closed "${common[@]}" --connections 32) ;;
    short | long)
      local ev=$SHORT_EVENTS
      [[ $kind == long ]] && ev=$LONG_EVENTS
      out=$("${PIN_LG[@]}" "$LOADGEN" stream "${common[@]}" --streams 32 --events "$ev" --interval-ms 1)
      ;;
  esac
  sleep 1  # the exporters' last batch (OTEL_BSP_SCHEDULE_DELAY, 200 ms)
  kill -TERM "$AGENT_PID"
  wait "$AGENT_PID" 2>/dev/null || true
  python3 - "$TMP/agent-$mode-$kind.log" "$out" <<'PY'
import sys
total = None
for line in open(sys.argv[1]):
    t = line.split()
    if t and t[0] == "total:":
        total = [int(x) for x in t[1:]]
if total is None:
    sys.exit(f"allocations: no jemalloc statistics in {sys.argv[1]}")
# allocated nmalloc (#/s) ndalloc (#/s) nrequests (#/s) nfill (#/s) nflush (#/s)
res = {}
for line in sys.argv[2].splitlines():
    if line.startswith("RESULT"):
        res = dict(f.split("=", 1) for f in line.split()[1:])
items = float(res.get("count", 0))
streams = float(res.get("first_samples", 0))
print(total[5], total[7], total[9], int(items), int(streams))
PY
}

RESULTS=$TMP/results.txt
: >"$RESULTS"
echo "allocations: $(date -u +%FT%TZ), $SECONDS_RUN s per run, modes: $MODES"
for mode in $MODES; do
  for kind in idle plain short long; do
    { printf '%s %s ' "$mode" "$kind"; run "$mode" "$kind"; } >>"$RESULTS"
  done
done

python3 - "$RESULTS" <<'PY'
import sys
rows = {}
for line in open(sys.argv[1]):
    mode, kind, n, fill, flush, items, streams = line.split()
    rows[(mode, kind)] = (int(n), int(fill), int(flush), int(items), int(streams))
print()
print(f"{'mode':<10}{'per request':>13}{'fills+flushes':>15}{'per SSE event':>15}{'per stream':>12}  requests; streams/events, short and long")
for mode in dict.fromkeys(m for m, _ in rows):
    idle = rows[(mode, "idle")]
    plain, short, long_ = rows[(mode, "plain")], rows[(mode, "short")], rows[(mode, "long")]
    if plain[3] == 0 or short[4] == 0 or long_[4] == 0:
        sys.exit(f"allocations: {mode}: a run served nothing")
    per_req = (plain[0] - idle[0]) / plain[3]
    trips = (plain[1] + plain[2] - idle[1] - idle[2]) / plain[3]
    # n = idle + a × streams + b × events, for both stream runs
    s1, e1, n1 = short[4], short[3], short[0] - idle[0]
    s2, e2, n2 = long_[4], long_[3], long_[0] - idle[0]
    det = s1 * e2 - s2 * e1
    b = (s1 * n2 - s2 * n1) / det if det else float("nan")
    a = (n1 - b * e1) / s1
    print(f"{mode:<10}{per_req:>13.1f}{trips:>15.2f}{b:>15.2f}{a:>12.1f}  {plain[3]}; {s1}/{e1}, {s2}/{e2}")
    print(f"RESULT allocations mode={mode} per_request={per_req:.2f} trips_per_request={trips:.3f} "
          f"per_event={b:.3f} per_stream={a:.1f}")
PY
