#!/usr/bin/env bash
# bench/otlp_pipeline.sh BUILD_DIR — OTLP receive → normalize → export against pass-through
# (receive → export), in one run (see docs/performance.md, "OTLP pipeline").
#
# Builds nothing: takes the build directory holding `infertel` and `infertel-otlp-bench`.
# All on 127.0.0.1. For each mode (normalize: vLLM instrumentation on; pass-through:
# OTEL_INSTRUMENTATION_VLLM_ENABLED=false, so vLLM spans leave untouched) and each phase a
# fresh sink and a fresh agent (--no-store, OTLP gRPC export to the sink, pinned to core
# $AGENT_CPU; sender and sink on core $LOAD_CPU):
#   max   sender as fast as possible for $MAX_DURATION s (backing off 20 ms when the agent
#         answers "retry later": its export queue is full); over the window [2 s, end − 1 s]:
#         spans out/s at the sink, spans in/s at the agent's receiver, the agent's CPU seconds
#         (utime+stime from /proc) → spans per CPU-second ("per core").
#   rss   sender at $RSS_RATE spans/s for $RSS_DURATION s; VmRSS sampled every 0.5 s (steady =
#         mean over the last half), VmHWM at the end (peak).
# The spans match no gateway request, so in the normalize mode each waits --join-window-ms and
# goes out normalized with its phases (4 spans out per llm_request); the assembler counters
# from /metrics confirm it. The max phase runs $BENCH_OTLP_ROUNDS times (default 3) per mode,
# alternating, and the per-core figures are medians. Every process started is stopped on
# exit. About 3 minutes.
set -euo pipefail

# shellcheck source=bench/lib.sh
source "$(dirname "$0")/lib.sh"
use_build "${1:-build}" "otlp bench" infertel infertel-otlp-bench

MAX_DURATION=${BENCH_OTLP_MAX_DURATION:-15}
ROUNDS=${BENCH_OTLP_ROUNDS:-3}
RSS_DURATION=${BENCH_OTLP_RSS_DURATION:-15}
RSS_RATE=${BENCH_OTLP_RSS_RATE:-10000}
BATCH=${BENCH_OTLP_BATCH:-512}
SEND_THREADS=${BENCH_OTLP_SEND_THREADS:-4}
JOIN_MS=${BENCH_OTLP_JOIN_WINDOW_MS:-100}
# Empty: the agent's default export queue. Set (e.g. 65536) to size it above the bursts the
# join window releases (see docs/performance.md).
BSP_QUEUE=${BENCH_OTLP_BSP_QUEUE:-}
TARGET_RATE=200000     # issue 7: spans/s per core
TARGET_RSS_MIB=48      # issue 7: RSS at 10k spans/s

if (($(nproc) >= 2)); then
  AGENT_CPU=${BENCH_OTLP_AGENT_CPU:-1}
  LOAD_CPU=${BENCH_OTLP_LOAD_CPU:-0}
  PIN_AGENT=(taskset -c "$AGENT_CPU")
  PIN_LOAD=(taskset -c "$LOAD_CPU")
else
  PIN_AGENT=(taskset -c 0)
  PIN_LOAD=()
fi
TCK=$(getconf CLK_TCK)

bench_init "otlp bench" otlpbench

now() { date +%s.%N; }
sink_count() {  # last cumulative count the sink printed
  awk '/^SINK / { for (i = 1; i <= NF; i++) if ($i ~ /^spans=/) { sub("spans=", "", $i); n = $i } } END { print n + 0 }' "$1"
}
stop() { stop_pid "$1"; }

SINK_PID=0 AGENT_PID=0 SINK_LOG="" AGENT_ADMIN=0 AGENT_GRPC=0
start_pair() {  # start_pair MODE TAG: a fresh sink and agent
  local mode=$1 tag=$2 line sink_port
  SINK_LOG=$TMP/sink-$tag.log
  "${PIN_LOAD[@]}" "$OTB" sink --listen 127.0.0.1:0 --interval-ms 250 >"$SINK_LOG" 2>&1 &
  SINK_PID=$!
  PIDS+=("$SINK_PID")
  line=$(wait_line "$SINK_LOG" '^LISTEN port=')
  sink_port=${line#LISTEN port=}
  local env=()
  [[ $mode == passthrough ]] && env+=(OTEL_INSTRUMENTATION_VLLM_ENABLED=false)
  [[ -n $BSP_QUEUE ]] && env+=(OTEL_BSP_MAX_QUEUE_SIZE="$BSP_QUEUE")
  env "${env[@]}" "${PIN_AGENT[@]}" "$INFERTEL" agent --engine vllm --upstream http://127.0.0.1:1 \
    --listen 127.0.0.1:0 --admin 127.0.0.1:0 --receiver-grpc 127.0.0.1:0 --receiver-http off \
    --no-store --otlp-endpoint "http://127.0.0.1:$sink_port" --otlp-protocol grpc \
    --join-window-ms "$JOIN_MS" >"$TMP/agent-$tag.log" 2>&1 &
  AGENT_PID=$!
  PIDS+=("$AGENT_PID")
  line=$(wait_line "$TMP/agent-$tag.log" 'admin listening on http://')
  AGENT_ADMIN=${line##*:}
  line=$(wait_line "$TMP/agent-$tag.log" 'OTLP gRPC receiver listening on ')
  AGENT_GRPC=${line##*:}
}

declare -A R
run_max() {  # run_max MODE
  local mode=$1 t0 t1 c0 c1 o0 o1 i0 i1 sender
  start_pair "$mode" "max-$mode"
  nice -n 19 "${PIN_LOAD[@]}" "$OTB" send --target "127.0.0.1:$AGENT_GRPC" --rate 0 --duration "$MAX_DURATION" \
    --batch "$BATCH" --threads "$SEND_THREADS" >"$TMP/send-max-$mode.log" 2>&1 &
  sender=$!
  PIDS+=("$sender")
  sleep 2
  thread_ticks "$AGENT_PID" >"$TMP/threads0-$mode"
  t0=$(now); c0=$(cpu_ticks "$AGENT_PID"); o0=$(sink_count "$SINK_LOG")
  i0=$(metric "$AGENT_ADMIN" infertel_receiver_items)
  sleep $((MAX_DURATION - 3))
  t1=$(now); c1=$(cpu_ticks "$AGENT_PID"); o1=$(sink_count "$SINK_LOG")
  i1=$(metric "$AGENT_ADMIN" infertel_receiver_items)
  thread_ticks "$AGENT_PID" >"$TMP/threads1-$mode"
  R[$mode.threads]=$(thread_share "$TMP/threads0-$mode" "$TMP/threads1-$mode")
  R[$mode.thread_us]=$(thread_us_per_item "$TMP/threads0-$mode" "$TMP/threads1-$mode" $((i1 - i0)))
  wait "$sender" || echo "otlp bench: sender reported errors ($mode)" >&2
  sleep 0.5
  R[$mode.max_send]=$(awk '/^RESULT send/ { for (i = 1; i <= NF; i++) if ($i ~ /^rate=/) { sub("rate=", "", $i); print $i } }' "$TMP/send-max-$mode.log")
  R[$mode.in_rate]=$(awk -v a="$i0" -v b="$i1" -v t0="$t0" -v t1="$t1" 'BEGIN { printf "%.0f", (b - a) / (t1 - t0) }')
  R[$mode.out_rate]=$(awk -v a="$o0" -v b="$o1" -v t0="$t0" -v t1="$t1" 'BEGIN { printf "%.0f", (b - a) / (t1 - t0) }')
  R[$mode.cpu]=$(awk -v a="$c0" -v b="$c1" -v t0="$t0" -v t1="$t1" -v k="$TCK" 'BEGIN { printf "%.2f", (b - a) / k / (t1 - t0) }')
  R[$mode.in_per_core]=$(awk -v a="$i0" -v b="$i1" -v c0="$c0" -v c1="$c1" -v k="$TCK" 'BEGIN { printf "%.0f", (b - a) / ((c1 - c0) / k) }')
  R[$mode.out_per_core]=$(awk -v a="$o0" -v b="$o1" -v c0="$c0" -v c1="$c1" -v k="$TCK" 'BEGIN { printf "%.0f", (b - a) / ((c1 - c0) / k) }')
  R[$mode.max_drops]=$(metric "$AGENT_ADMIN" infertel_exporter_dropped_items)
  R[$mode.max_throttled]=$(metric "$AGENT_ADMIN" infertel_receiver_throttled_requests)
  R[$mode.counters]=$(curl -s "http://127.0.0.1:$AGENT_ADMIN/metrics" |
    grep -E '^infertel_(assembler_(engine_spans|unmatched|passthrough_spans|derived_spans|released_early)|receiver_items|exporter_(sent|dropped)_items)' | grep -v -E 'signal="(logs|metrics)"|transport="http"|} 0$' |
    awk '{ printf "%s%s", sep, $0; sep = "; " }')
  stop "$AGENT_PID"; stop "$SINK_PID"
}

run_rss() {  # run_rss MODE
  local mode=$1 sender samples=() s
  start_pair "$mode" "rss-$mode"
  R[$mode.rss_idle]=$(rss_kib "$AGENT_PID" VmRSS)
  "${PIN_LOAD[@]}" "$OTB" send --target "127.0.0.1:$AGENT_GRPC" --rate "$RSS_RATE" \
    --duration "$RSS_DURATION" --batch "$BATCH" --threads 2 >"$TMP/send-rss-$mode.log" 2>&1 &
  sender=$!
  PIDS+=("$sender")
  while kill -0 "$sender" 2>/dev/null; do
    samples+=("$(rss_kib "$AGENT_PID" VmRSS)")
    sleep 0.5
  done
  wait "$sender" || echo "otlp bench: sender reported errors ($mode rss)" >&2
  R[$mode.rss_peak]=$(rss_kib "$AGENT_PID" VmHWM)
  R[$mode.rss_drops]=$(metric "$AGENT_ADMIN" infertel_exporter_dropped_items)
  R[$mode.rss_steady]=$(printf '%s\n' "${samples[@]}" |
    awk '{ v[NR] = $1 } END { h = int(NR / 2) + 1; for (i = h; i <= NR; i++) { s += v[i]; n++ } printf "%.0f", s / n }')
  R[$mode.rss_send]=$(awk '/^RESULT send/ { for (i = 1; i <= NF; i++) if ($i ~ /^rate=/) { sub("rate=", "", $i); print $i } }' "$TMP/send-rss-$mode.log")
  stop "$AGENT_PID"; stop "$SINK_PID"
}

echo "otlp bench: $(date -u '+%Y-%m-%d %H:%M UTC'), $(nproc) cores, load average $(cut -d' ' -f1-3 /proc/loadavg)"
echo "otlp bench: agent on core(s) ${PIN_AGENT[2]}, sender and sink on ${PIN_LOAD[2]:-any}; batch $BATCH, join window $JOIN_MS ms, OTEL_BSP_MAX_QUEUE_SIZE ${BSP_QUEUE:-default}"
# The max phase runs $ROUNDS times per mode, the modes alternating, and the per-core figures
# are the medians: on a shared 2-vCPU VM one run moves by ±20 %. The other figures are the
# last round's.
declare -A PER_CORE
for ((round = 1; round <= ROUNDS; round++)); do
  for mode in normalize passthrough; do
    echo "otlp bench: $mode: max throughput (${MAX_DURATION} s, round $round of $ROUNDS)"
    run_max "$mode"
    PER_CORE[$mode.in]+="${R[$mode.in_per_core]} "
    PER_CORE[$mode.out]+="${R[$mode.out_per_core]} "
  done
done
median() { tr ' ' '\n' <<<"$1" | grep . | sort -n | awk '{ v[NR] = $1 } END { print (NR % 2) ? v[(NR + 1) / 2] : int((v[NR / 2] + v[NR / 2 + 1]) / 2) }'; }
for mode in normalize passthrough; do
  R[$mode.in_per_core]=$(median "${PER_CORE[$mode.in]}")
  R[$mode.out_per_core]=$(median "${PER_CORE[$mode.out]}")
  echo "otlp bench: $mode: RSS at $RSS_RATE spans/s (${RSS_DURATION} s)"
  run_rss "$mode"
done

mib() { awk -v k="$1" 'BEGIN { printf "%.1f", k / 1024 }'; }
met() { awk -v v="$1" -v t="$2" -v dir="$3" 'BEGIN { ok = (dir == "ge") ? v >= t : v <= t; print ok ? "met" : "missed" }'; }

echo
echo "counters (normalize): ${R[normalize.counters]}"
echo "counters (pass-through): ${R[passthrough.counters]}"
echo "spans in per CPU-second, each round (normalize): ${PER_CORE[normalize.in]}"
echo "spans in per CPU-second, each round (pass-through): ${PER_CORE[passthrough.in]}"
echo "agent CPU by thread, max run (normalize): ${R[normalize.threads]}"
echo "agent CPU by thread, max run (pass-through): ${R[passthrough.threads]}"
echo "agent CPU per span in by thread, µs, max run (normalize): ${R[normalize.thread_us]}"
echo "agent CPU per span in by thread, µs, max run (pass-through): ${R[passthrough.thread_us]}"
echo
printf '%-44s %14s %14s\n' "" normalize pass-through
printf '%-44s %14s %14s\n' "sender rate, spans/s (as fast as possible)" "${R[normalize.max_send]}" "${R[passthrough.max_send]}"
printf '%-44s %14s %14s\n' "spans in/s (agent receiver)" "${R[normalize.in_rate]}" "${R[passthrough.in_rate]}"
printf '%-44s %14s %14s\n' "spans out/s (sink)" "${R[normalize.out_rate]}" "${R[passthrough.out_rate]}"
printf '%-44s %14s %14s\n' "agent CPU (cores busy)" "${R[normalize.cpu]}" "${R[passthrough.cpu]}"
printf '%-44s %14s %14s\n' "spans in per CPU-second (per core), median" "${R[normalize.in_per_core]}" "${R[passthrough.in_per_core]}"
printf '%-44s %14s %14s\n' "spans out per CPU-second, median" "${R[normalize.out_per_core]}" "${R[passthrough.out_per_core]}"
printf '%-44s %14s %14s\n' "exporter drops (queue full), max run" "${R[normalize.max_drops]}" "${R[passthrough.max_drops]}"
printf '%-44s %14s %14s\n' "requests answered 'retry later', max run" "${R[normalize.max_throttled]}" "${R[passthrough.max_throttled]}"
printf '%-44s %14s %14s\n' "RSS idle, MiB" "$(mib "${R[normalize.rss_idle]}")" "$(mib "${R[passthrough.rss_idle]}")"
printf '%-44s %14s %14s\n' "RSS steady at $RSS_RATE spans/s, MiB" "$(mib "${R[normalize.rss_steady]}")" "$(mib "${R[passthrough.rss_steady]}")"
printf '%-44s %14s %14s\n' "RSS peak (VmHWM) at $RSS_RATE spans/s, MiB" "$(mib "${R[normalize.rss_peak]}")" "$(mib "${R[passthrough.rss_peak]}")"
printf '%-44s %14s %14s\n' "achieved rate in the RSS run, spans/s" "${R[normalize.rss_send]}" "${R[passthrough.rss_send]}"
printf '%-44s %14s %14s\n' "exporter drops, RSS run" "${R[normalize.rss_drops]}" "${R[passthrough.rss_drops]}"
ratio=$(awk -v a="${R[normalize.in_per_core]}" -v b="${R[passthrough.in_per_core]}" 'BEGIN { printf "%.2f", a / b }')
echo
echo "normalize / pass-through, spans in per core: $ratio"
echo "target ≥ $TARGET_RATE spans/s per core (spans in, normalize): ${R[normalize.in_per_core]} → $(met "${R[normalize.in_per_core]}" $TARGET_RATE ge)"
echo "target ≤ $TARGET_RSS_MIB MiB RSS at 10k spans/s (normalize, peak): $(mib "${R[normalize.rss_peak]}") → $(met "$(mib "${R[normalize.rss_peak]}")" $TARGET_RSS_MIB le)"
