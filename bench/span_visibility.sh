#!/usr/bin/env bash
# bench/span_visibility.sh BUILD_DIR — how long after a request ends its spans are visible in
# the backend, under load (issue 7: "a span visible in the backend at most 1 s (p99) after its
# request ends").
#
# Builds nothing: takes the build directory holding `infertel`, `infertel-loadgen` and
# `infertel-otlp-bench`. All on 127.0.0.1. The backend is `infertel-otlp-bench sink --record`,
# an OTLP gRPC TraceService that writes, per span received, its trace id and its arrival time
# on CLOCK_MONOTONIC (system-wide on Linux, so comparable with the loadgen's). The load is
# `infertel-loadgen fixed --record`: open loop at $RATE req/s for $DURATION s after 1 s of
# warm-up, a share $STREAM_FRACTION of the requests SSE streams; each request carries a
# `traceparent` with a trace id of its own, and the loadgen writes per request the
# CLOCK_MONOTONIC time at which the whole response had arrived. `infertel-otlp-bench join`
# pairs the two: visibility = first arrival of the span at the sink − end of the response.
#   bench      upstream: the loadgen's own (answers at once). Agent: `infertel agent --no-store
#              --otlp-protocol grpc --otlp-endpoint <sink>`, receivers off, the agent's export
#              batching delay (default 200 ms). Span: the gateway's entry span (`entry`, the
#              child of the client's span).
#   sim-DMS    upstream: `infertel sim` (vLLM, fast settings as in bench/run.sh) exporting its
#              native `llm_request` spans over OTLP gRPC to the agent's receiver, with the
#              sim's own batch delay set to D ms (OTEL_BSP_SCHEDULE_DELAY, given to the sim
#              only; Python's SDK, hence vLLM, defaults to 5000, and exports early when a batch
#              of 512 is full; `infertel launch` starts vLLM with 500). Spans: `entry`, and the normalized `llm_request` with its
#              phases (`wait`, `prefill`, `decode`) of the same traces. Their visibility
#              includes the sim's delay; the agent's --join-window-ms only delays an engine span
#              that arrives before its request has ended at the gateway.
# The load goes on for $COOLDOWN s after the window, unmeasured, so that the window's last spans
# leave as they would under continuing load (not with the last, partial batch of a run that
# stops). After the load the sink keeps receiving for $GRACE s (sim phases: + the sim's delay);
# a request whose span has not arrived by then counts as missing. The agent is pinned to core
# $AGENT_CPU, loadgen, sim and sink to $LOAD_CPU. Every process started is stopped on exit.
# About 2 minutes with the defaults.
#
# Environment:
#   BENCH_VIS_RATE             requests per second (500)
#   BENCH_VIS_DURATION         measured seconds per phase (15)
#   BENCH_VIS_STREAM_FRACTION  share of requests that are SSE streams (0.2)
#   BENCH_VIS_SIM_DELAYS       the sim's OTEL_BSP_SCHEDULE_DELAY per sim phase, ms ("100 500 5000";
#                              empty: no sim phase)
#   BENCH_VIS_AGENT_DELAY_MS   the agent's --export-delay-ms (default: the agent's default)
#   BENCH_VIS_JOIN_WINDOW_MS   the agent's --join-window-ms (default: the agent's default)
#   BENCH_VIS_AGENT_THREADS    agent --threads (default: the agent's default)
#   BENCH_VIS_COOLDOWN         seconds of unmeasured load after the window (2)
#   BENCH_VIS_GRACE            seconds the sink keeps receiving after the load (3)
#   BENCH_VIS_BOUND_MS         the bound on p99 (1000)
#   BENCH_VIS_AGENT_CPU, BENCH_VIS_LOAD_CPU  cores (1, 0)
# Output: the tools' lines, `RESULT join label=PHASE group=SPAN ...` per phase and span kind,
# a summary.
set -euo pipefail

ROOT=$(cd "$(dirname "$0")/.." && pwd)
# shellcheck source=bench/lib.sh
source "$ROOT/bench/lib.sh"
use_build "${1:-build}" "visibility bench" infertel infertel-loadgen infertel-otlp-bench

RATE=${BENCH_VIS_RATE:-500}
DURATION=${BENCH_VIS_DURATION:-15}
STREAM_FRACTION=${BENCH_VIS_STREAM_FRACTION:-0.2}
SIM_DELAYS=${BENCH_VIS_SIM_DELAYS-100 500 5000}
AGENT_DELAY_MS=${BENCH_VIS_AGENT_DELAY_MS:-}
JOIN_WINDOW_MS=${BENCH_VIS_JOIN_WINDOW_MS:-}
AGENT_THREADS=${BENCH_VIS_AGENT_THREADS:-}
COOLDOWN=${BENCH_VIS_COOLDOWN:-2}
GRACE=${BENCH_VIS_GRACE:-3}
BOUND_MS=${BENCH_VIS_BOUND_MS:-1000}
MODEL=bench-model

if (($(nproc) >= 2)); then
  AGENT_CPU=${BENCH_VIS_AGENT_CPU:-1}
  LOAD_CPU=${BENCH_VIS_LOAD_CPU:-0}
  PIN_AGENT=(taskset -c "$AGENT_CPU")
  PIN_LOAD=(taskset -c "$LOAD_CPU")
else
  PIN_AGENT=()
  PIN_LOAD=()
fi

bench_init "visibility bench" visibility

AGENT_ARGS=(--engine vllm --listen 127.0.0.1:0 --admin 127.0.0.1:0 --receiver-http off
  --engine-version v1 --no-store --otlp-protocol grpc)
[[ -n $AGENT_DELAY_MS ]] && AGENT_ARGS+=(--export-delay-ms "$AGENT_DELAY_MS")
[[ -n $JOIN_WINDOW_MS ]] && AGENT_ARGS+=(--join-window-ms "$JOIN_WINDOW_MS")
[[ -n $AGENT_THREADS ]] && AGENT_ARGS+=(--threads "$AGENT_THREADS")

SINK_PID=0 SINK_PORT=0
start_sink() {  # start_sink PHASE → SINK_PID, SINK_PORT; spans recorded in $TMP/spans-PHASE.txt
  local line
  "${PIN_LOAD[@]}" "$OTB" sink --listen 127.0.0.1:0 --interval-ms 1000 \
    --record "$TMP/spans-$1.txt" >"$TMP/sink-$1.log" 2>&1 &
  SINK_PID=$!
  PIDS+=("$SINK_PID")
  line=$(wait_line "$TMP/sink-$1.log" '^LISTEN port=')
  SINK_PORT=${line#LISTEN port=}
}

AGENT_PID=0 AGENT_PORT=0 AGENT_ADMIN=0 AGENT_GRPC=""
start_agent() {  # start_agent PHASE UPSTREAM_URL RECEIVER(off|127.0.0.1:0)
  # The agent's own batching settings only: the sim's OTEL_BSP_* must not reach it.
  env -u OTEL_BSP_SCHEDULE_DELAY "${PIN_AGENT[@]}" "$INFERTEL" agent --upstream "$2" \
    --receiver-grpc "$3" --otlp-endpoint "http://127.0.0.1:$SINK_PORT" "${AGENT_ARGS[@]}" \
    >"$TMP/agent-$1.log" 2>&1 &
  AGENT_PID=$!
  PIDS+=("$AGENT_PID")
  AGENT_PORT=$(wait_line "$TMP/agent-$1.log" 'gateway listening on' | port_of)
  AGENT_ADMIN=$(wait_line "$TMP/agent-$1.log" 'admin listening on' | port_of)
  if [[ $3 != off ]]; then
    local line
    line=$(wait_line "$TMP/agent-$1.log" 'OTLP gRPC receiver listening on ')
    AGENT_GRPC=${line##* }
  fi
  wait_port "$AGENT_PORT"
}

RESULTS=$TMP/results.txt
: >"$RESULTS"
# run_load PHASE GRACE_S LOADGEN_ARGS...: the load, the grace, the sink stopped, the join.
run_load() {
  local phase=$1 grace=$2
  shift 2
  echo "visibility bench: $phase: $RATE req/s for $DURATION s (${STREAM_FRACTION} streams)"
  "${PIN_LOAD[@]}" "$LOADGEN" fixed --target "127.0.0.1:$AGENT_PORT" --label "$phase" \
    --model "$MODEL" --rate "$RATE" --duration "$DURATION" --warmup 1 --cooldown "$COOLDOWN" \
    --connections 64 --stream-fraction "$STREAM_FRACTION" --record "$TMP/requests-$phase.txt" \
    --cpu-pids "$AGENT_PID" "$@" >"$TMP/lg-$phase.log" 2>&1 || true
  grep -v 'upstream listening' "$TMP/lg-$phase.log" || true
  sleep "$grace"
  local dropped unmatched early
  dropped=$(metric "$AGENT_ADMIN" infertel_exporter_dropped_items)
  unmatched=$(metric "$AGENT_ADMIN" infertel_assembler_unmatched)
  early=$(metric "$AGENT_ADMIN" infertel_assembler_released_early)
  echo "RESULT agent label=$phase exporter_dropped=$dropped assembler_unmatched=$unmatched" \
    "assembler_released_early=$early" | tee -a "$RESULTS"
  stop_pid "$SINK_PID"
  grep '^RESULT' "$TMP/lg-$phase.log" >>"$RESULTS" || bench_die "$phase: the loadgen produced no result"
  "$OTB" join --requests "$TMP/requests-$phase.txt" --spans "$TMP/spans-$phase.txt" \
    --label "$phase" | tee -a "$RESULTS"
}

LOAD_BEFORE=$(load_avg)
echo "visibility bench: $(date -u '+%Y-%m-%d %H:%M UTC'), $(nproc) cores, load average $LOAD_BEFORE"
echo "visibility bench: agent on core ${AGENT_CPU:-any}, load, sim and sink on ${LOAD_CPU:-any};" \
  "agent --export-delay-ms ${AGENT_DELAY_MS:-default (200)}, --join-window-ms" \
  "${JOIN_WINDOW_MS:-default (3000)}, --threads ${AGENT_THREADS:-default}"

# Phase 1: the bench upstream, entry spans only.
UP_PORT=$("$LOADGEN" freeport)
start_sink bench
start_agent bench "http://127.0.0.1:$UP_PORT" off
run_load bench "$GRACE" --serve "127.0.0.1:$UP_PORT" --max-tokens 16 --events 8 --interval-ms 2
stop_pid "$AGENT_PID"

# Sim phases: the sim's native spans through the agent's receiver.
for delay in $SIM_DELAYS; do
  phase=sim-$delay
  SIM_PORT=$("$LOADGEN" freeport)
  start_sink "$phase"
  start_agent "$phase" "http://127.0.0.1:$SIM_PORT" 127.0.0.1:0
  env OTEL_BSP_SCHEDULE_DELAY="$delay" "${PIN_LOAD[@]}" "$INFERTEL" sim --engine vllm \
    --listen "127.0.0.1:$SIM_PORT" --model "$MODEL" --step-fixed-ms 0.05 \
    --prefill-ms-per-token 0.001 --decode-ms-per-token 0.001 \
    --otlp-traces-endpoint "$AGENT_GRPC" >"$TMP/sim-$phase.log" 2>&1 &
  SIM_PID=$!
  PIDS+=("$SIM_PID")
  wait_line "$TMP/sim-$phase.log" 'listening on' >/dev/null
  wait_port "$SIM_PORT"
  run_load "$phase" "$(awk -v g="$GRACE" -v d="$delay" 'BEGIN { print g + d / 1000 }')" \
    --max-tokens 16 --events 8
  stop_pid "$SIM_PID"
  stop_pid "$AGENT_PID"
done
LOAD_AFTER=$(load_avg)

# ---- summary -------------------------------------------------------------------------------
echo
echo "load average before $LOAD_BEFORE, after $LOAD_AFTER"
echo "visibility = first arrival at the sink − end of the response at the client (ms)"
echo
awk -v bound="$BOUND_MS" '
  /^RESULT join / {
    delete kv
    for (i = 3; i <= NF; i++) { split($i, p, "="); kv[p[1]] = p[2] }
    n++
    for (k in kv) v[n, k] = kv[k]
  }
  /^RESULT label=/ {  # the loadgen: achieved rate and errors per phase
    delete kv
    for (i = 2; i <= NF; i++) { split($i, p, "="); kv[p[1]] = p[2] }
    order[++phases] = kv["label"]
    rate[kv["label"]] = kv["per_s"]; errs[kv["label"]] = kv["errors"]
    cpu[kv["label"]] = kv["proxy_cpu_us_per_item"]
  }
  /^RESULT agent / {
    delete kv
    for (i = 3; i <= NF; i++) { split($i, p, "="); kv[p[1]] = p[2] }
    drop[kv["label"]] = kv["exporter_dropped"]; unm[kv["label"]] = kv["assembler_unmatched"]
  }
  END {
    printf "%-14s %-16s %8s %8s %8s %8s %8s %8s %8s\n", "phase", "span", "requests", "missing",
      "min", "p50", "p90", "p99", "max"
    for (i = 1; i <= n; i++)
      printf "%-14s %-16s %8s %8s %8.1f %8.1f %8.1f %8.1f %8.1f\n", v[i, "label"], v[i, "group"],
        v[i, "requests"], v[i, "missing"], v[i, "min_ms"], v[i, "p50_ms"], v[i, "p90_ms"],
        v[i, "p99_ms"], v[i, "max_ms"]
    print ""
    for (j = 1; j <= phases; j++) {
      l = order[j]
      printf "%-14s achieved %.0f req/s, %s errors, agent CPU %.0f us/req, exporter drops %s, unmatched engine spans %s\n",
        l, rate[l], errs[l], cpu[l], drop[l], unm[l]
    }
    print ""
    for (i = 1; i <= n; i++) {
      g = v[i, "group"]
      if (g != "entry" && g != "llm_request") continue
      ok = v[i, "p99_ms"] <= bound && v[i, "missing"] == 0
      printf "target: %s span visible <= %d ms p99 after its request ends (%s): p99 %.1f ms, %s missing -> %s\n",
        g, bound, v[i, "label"], v[i, "p99_ms"], v[i, "missing"], ok ? "met" : "missed"
    }
  }' "$RESULTS"
