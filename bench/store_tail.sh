#!/usr/bin/env bash
# bench/store_tail.sh BUILD_DIR — what the embedded store's writer does to the gateway's tail
# when both share one core (see docs/performance-history.md, "The store on the gateway's core").
#
# Builds nothing: takes the build directory holding `infertel` and `infertel-loadgen`. Two
# agents in front of one loadgen upstream, both pinned to core $PROXY_CPU (bench/lib.sh
# pin_cores; loadgen and upstream on $LG_CPU): `--no-store` (the baseline, same process
# otherwise) and `--store FILE`. For $BENCH_ST_ROUNDS rounds (default 4), alternating, each
# gets open-loop non-streaming chat at $BENCH_ST_RATE req/s (1000) for $BENCH_ST_DURATION s
# (10). Prints each round's p99 and p99.9, the medians, and the ratio of the store agent's
# median added p99 (over direct, measured in the same script) to the baseline's.
#
# When `perf sched` can record (linux-perf installed, perf_event_paranoid allowing it), each
# store round also records the scheduler on the agent's core for $BENCH_ST_PERF_SECONDS s
# (5) and prints, from `perf sched timehist --state`, for the store agent's threads: the store
# lane's runs, how many lasted over 1 ms and the longest; the gateway thread's waits after a
# preemption (switched out runnable), how many over 1 ms and the longest; and its longest delay
# from a wake-up to running. That is the mechanism the store can add to the tail: a thread
# holding the core while the gateway waits for it. The p99 rounds vary a lot on a shared VM;
# the scheduler figures much less. Every process started is stopped on exit.
# About 2 minutes.
set -euo pipefail

ROOT=$(cd "$(dirname "$0")/.." && pwd)
# shellcheck source=bench/lib.sh
source "$ROOT/bench/lib.sh"
use_build "${1:-build}" "store tail bench" infertel infertel-loadgen

RATE=${BENCH_ST_RATE:-1000}
DURATION=${BENCH_ST_DURATION:-10}
ROUNDS=${BENCH_ST_ROUNDS:-4}
PERF_SECONDS=${BENCH_ST_PERF_SECONDS:-5}

pin_cores
bench_init "store tail bench" storetail
agent_compat_flags "$INFERTEL"
AGENT_ARGS=(--threads 1)

PERF=""
if [[ -n $PROXY_CPU ]] && command -v perf >/dev/null &&
  perf sched record -C "$PROXY_CPU" -o "$TMP/probe.data" -- true >/dev/null 2>&1; then
  PERF=1
fi

UP_PORT=$("$LOADGEN" freeport)
start_agent agent "$UP_PORT" --no-store
BASE_PORT=$AGENT_PORT BASE_PID=$AGENT_PID
start_agent agent-store "$UP_PORT" --store "$TMP/bench.db"
STORE_PORT=$AGENT_PORT STORE_PID=$AGENT_PID

RESULTS=$TMP/results.txt
: >"$RESULTS"
fixed() {  # fixed LABEL PORT: one open-loop run, its RESULT line kept
  local out
  out=$("${PIN_LG[@]}" "$LOADGEN" fixed --target "127.0.0.1:$2" --label "$1" --warmup 1 \
    --model bench-model --serve "127.0.0.1:$UP_PORT" --rate "$RATE" --duration "$DURATION") || true
  grep '^RESULT' <<<"$out" >>"$RESULTS" || echo "store tail bench: $1 produced no result" >&2
}

# The scheduler's view of one store round, for the store agent's threads only: runs of the
# store lane; the gateway thread's waits that began with a preemption (its previous run ended
# in state R), and its delays from a wake-up to running.
sched_summary() {  # sched_summary PERF_DATA AGENT_PID
  perf sched timehist -i "$1" -C "$PROXY_CPU" --state 2>/dev/null | awk -v pid="$2" '
    index($3, "/" pid "]") == 0 { next }
    $3 ~ /^traces:store/ { n++; if ($6 > 1.0) long++; if ($6 > max) max = $6 }
    $3 ~ /^gateway-io/ {
      if (state[$3] == "R") { p++; if ($4 > 1.0) pl++; if ($4 > pmax) pmax = $4 }
      if ($5 > dmax) dmax = $5
      state[$3] = $NF
    }
    END {
      printf "store lane runs %d, over 1 ms %d, longest %.2f ms; gateway: preempted %d times, waits over 1 ms %d, longest %.2f ms, longest wake-up delay %.3f ms\n", n, long, max, p, pl, pmax, dmax
    }'
}

echo "store tail bench: $(date -u '+%Y-%m-%d %H:%M UTC'), $(nproc) cores, load average $(load_avg)"
echo "store tail bench: $RATE req/s for $DURATION s, $ROUNDS rounds; perf sched: $([[ -n $PERF ]] && echo on || echo off)"
fixed direct "$UP_PORT"
for r in $(seq 1 "$ROUNDS"); do
  fixed "no-store-$r" "$BASE_PORT"
  if [[ -n $PERF ]]; then
    (sleep 2 && perf sched record -C "$PROXY_CPU" -o "$TMP/sched.data" -- sleep "$PERF_SECONDS" \
      >/dev/null 2>&1) &
    REC=$!
    fixed "store-$r" "$STORE_PORT"
    wait "$REC" || true
    echo "  round $r: $(sched_summary "$TMP/sched.data" "$STORE_PID")"
  else
    fixed "store-$r" "$STORE_PORT"
  fi
done
fixed direct-after "$UP_PORT"

python3 - "$RESULTS" <<'PY'
import statistics, sys
rows = {}
for line in open(sys.argv[1]):
    f = dict(kv.split("=", 1) for kv in line.split()[1:] if "=" in kv)
    rows[f["label"]] = f
def col(prefix, key):
    return [float(v[key]) for k, v in sorted(rows.items()) if k.startswith(prefix + "-")]
direct = statistics.median(float(rows[k]["p99_us"]) for k in ("direct", "direct-after") if k in rows)
print(f"{'target':<10}{'p99 per round (µs)':>40}{'median p99':>12}{'p99.9 median':>14}{'added p99':>11}")
added = {}
for name in ("no-store", "store"):
    p99, p999 = col(name, "p99_us"), col(name, "p999_us")
    if not p99:
        continue
    m = statistics.median(p99)
    added[name] = m - direct
    print(f"{name:<10}{' / '.join(f'{v:,.0f}' for v in p99):>40}{m:>12,.0f}"
          f"{statistics.median(p999):>14,.0f}{added[name]:>11,.0f}")
print(f"direct p99 (median of before and after): {direct:,.0f} µs")
if added.get("no-store", 0) > 0 and "store" in added:
    print(f"store / no-store, median added p99: {added['store'] / added['no-store']:.2f}x")
PY
