#!/usr/bin/env bash
# bench/otlp_pipeline.sh BUILD_DIR — OTLP receive → normalize → export against pass-through
# (receive → export), over OTLP gRPC and OTLP/HTTP, in one run (see docs/performance-history.md,
# "OTLP pipeline").
#
# Builds nothing: takes the build directory holding `infertel` and `infertel-otlp-bench`.
# All on 127.0.0.1. For each mode (normalize: vLLM instrumentation on; pass-through:
# OTEL_INSTRUMENTATION_VLLM_ENABLED=false, so vLLM spans leave untouched), each transport
# ($BENCH_OTLP_TRANSPORTS, default "grpc http": the agent receives and exports over the same
# one, protobuf on both) and each phase a fresh sink and a fresh agent (--no-store, pinned to
# core $AGENT_CPU; sender and sink on core $LOAD_CPU):
#   max   sender as fast as possible for $MAX_DURATION s (backing off $RETRY_MS ms when the agent
#         answers "retry later": its export queue stayed full for the receiver's wait, 250 ms;
#         the requests that waited are counted too); over the window [2 s, end − 1 s]:
#         spans out/s at the sink, spans in/s at the agent's receiver, the agent's CPU seconds
#         (utime+stime from /proc) → spans per CPU-second ("per core"); VmHWM at the end; from
#         the sink, how long after its end (stamped at the accepted send) the first llm_request
#         of each export arrived, p50/p99/max over the whole phase (normalize: the join window
#         included).
#   rss   sender at $RSS_RATE spans/s for $RSS_DURATION s; VmRSS sampled every 0.5 s (steady =
#         mean over the last half), VmHWM at the end (peak).
# The spans match no gateway request, so in the normalize mode each waits --join-window-ms and
# goes out normalized with its phases (4 spans out per llm_request); the assembler counters
# from /metrics confirm it. The max phase runs $BENCH_OTLP_ROUNDS times (default 3) per mode
# and transport, alternating, and the per-core figures are medians. Every process started is
# stopped on exit. About 5 minutes with both transports.
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
# The sender's pause after "retry later": 20 ms measures the agent; 1000 is what the engines'
# Python exporters do (they wait the 1 s the agent names).
RETRY_MS=${BENCH_OTLP_RETRY_MS:-20}
# Empty: the agent's default export queue. Set (e.g. 65536) to size it above the bursts the
# join window releases (see docs/performance-history.md).
BSP_QUEUE=${BENCH_OTLP_BSP_QUEUE:-}
read -r -a TRANSPORTS <<<"${BENCH_OTLP_TRANSPORTS:-grpc http}"
for tr in "${TRANSPORTS[@]}"; do
  [[ $tr == grpc || $tr == http ]] || { echo "otlp bench: unknown transport '$tr' (grpc, http)" >&2; exit 2; }
done
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
stop() { stop_pid "$1"; }

SINK_PID=0 AGENT_PID=0 SINK_LOG="" AGENT_ADMIN=0 AGENT_PORT=0
start_pair() {  # start_pair TRANSPORT MODE TAG: a fresh sink and agent
  local tr=$1 mode=$2 tag=$3 line sink_port receivers protocol
  SINK_LOG=$TMP/sink-$tag.log
  "${PIN_LOAD[@]}" "$OTB" sink --transport "$tr" --listen 127.0.0.1:0 --interval-ms 250 >"$SINK_LOG" 2>&1 &
  SINK_PID=$!
  PIDS+=("$SINK_PID")
  line=$(wait_line "$SINK_LOG" '^LISTEN port=')
  sink_port=${line#LISTEN port=}
  local env=()
  [[ $mode == passthrough ]] && env+=(OTEL_INSTRUMENTATION_VLLM_ENABLED=false)
  [[ -n $BSP_QUEUE ]] && env+=(OTEL_BSP_MAX_QUEUE_SIZE="$BSP_QUEUE")
  if [[ $tr == http ]]; then
    receivers=(--receiver-grpc off --receiver-http 127.0.0.1:0) protocol=http/protobuf
  else
    receivers=(--receiver-grpc 127.0.0.1:0 --receiver-http off) protocol=grpc
  fi
  env "${env[@]}" "${PIN_AGENT[@]}" "$INFERTEL" agent --engine vllm --upstream http://127.0.0.1:1 \
    --listen 127.0.0.1:0 --admin 127.0.0.1:0 "${receivers[@]}" \
    --no-store --otlp-endpoint "http://127.0.0.1:$sink_port" --otlp-protocol "$protocol" \
    --join-window-ms "$JOIN_MS" >"$TMP/agent-$tag.log" 2>&1 &
  AGENT_PID=$!
  PIDS+=("$AGENT_PID")
  line=$(wait_line "$TMP/agent-$tag.log" 'admin listening on http://')
  AGENT_ADMIN=${line##*:}
  if [[ $tr == http ]]; then
    line=$(wait_line "$TMP/agent-$tag.log" 'OTLP HTTP receiver listening on ')
  else
    line=$(wait_line "$TMP/agent-$tag.log" 'OTLP gRPC receiver listening on ')
  fi
  AGENT_PORT=${line##*:}
}

declare -A R
run_max() {  # run_max TRANSPORT MODE
  local tr=$1 mode=$2 k=$1.$2 t0 t1 c0 c1 o0 o1 i0 i1 sender
  start_pair "$tr" "$mode" "max-$k"
  nice -n 19 "${PIN_LOAD[@]}" "$OTB" send --transport "$tr" --target "127.0.0.1:$AGENT_PORT" --rate 0 --duration "$MAX_DURATION" \
    --batch "$BATCH" --threads "$SEND_THREADS" --retry-ms "$RETRY_MS" >"$TMP/send-max-$k.log" 2>&1 &
  sender=$!
  PIDS+=("$sender")
  sleep 2
  thread_ticks "$AGENT_PID" >"$TMP/threads0-$k"
  t0=$(now); c0=$(cpu_ticks "$AGENT_PID"); o0=$(sink_count "$SINK_LOG")
  i0=$(metric "$AGENT_ADMIN" infertel_receiver_items)
  sleep $((MAX_DURATION - 3))
  t1=$(now); c1=$(cpu_ticks "$AGENT_PID"); o1=$(sink_count "$SINK_LOG")
  i1=$(metric "$AGENT_ADMIN" infertel_receiver_items)
  thread_ticks "$AGENT_PID" >"$TMP/threads1-$k"
  R[$k.threads]=$(thread_share "$TMP/threads0-$k" "$TMP/threads1-$k")
  R[$k.thread_us]=$(thread_us_per_item "$TMP/threads0-$k" "$TMP/threads1-$k" $((i1 - i0)))
  wait "$sender" || echo "otlp bench: sender reported errors ($k)" >&2
  sleep 0.5
  R[$k.max_send]=$(awk '/^RESULT send/ { for (i = 1; i <= NF; i++) if ($i ~ /^rate=/) { sub("rate=", "", $i); print $i } }' "$TMP/send-max-$k.log")
  R[$k.in_rate]=$(awk -v a="$i0" -v b="$i1" -v t0="$t0" -v t1="$t1" 'BEGIN { printf "%.0f", (b - a) / (t1 - t0) }')
  R[$k.out_rate]=$(awk -v a="$o0" -v b="$o1" -v t0="$t0" -v t1="$t1" 'BEGIN { printf "%.0f", (b - a) / (t1 - t0) }')
  R[$k.cpu]=$(awk -v a="$c0" -v b="$c1" -v t0="$t0" -v t1="$t1" -v k="$TCK" 'BEGIN { printf "%.2f", (b - a) / k / (t1 - t0) }')
  R[$k.in_per_core]=$(awk -v a="$i0" -v b="$i1" -v c0="$c0" -v c1="$c1" -v k="$TCK" 'BEGIN { printf "%.0f", (b - a) / ((c1 - c0) / k) }')
  R[$k.out_per_core]=$(awk -v a="$o0" -v b="$o1" -v c0="$c0" -v c1="$c1" -v k="$TCK" 'BEGIN { printf "%.0f", (b - a) / ((c1 - c0) / k) }')
  R[$k.max_drops]=$(metric "$AGENT_ADMIN" infertel_exporter_dropped_items)
  R[$k.max_hwm]=$(rss_kib "$AGENT_PID" VmHWM)
  R[$k.max_throttled]=$(metric "$AGENT_ADMIN" infertel_receiver_throttled_requests)
  R[$k.max_waited]=$(metric "$AGENT_ADMIN" infertel_receiver_waited_requests)
  R[$k.counters]=$(curl -s "http://127.0.0.1:$AGENT_ADMIN/metrics" |
    grep -E '^infertel_(assembler_(engine_spans|unmatched|passthrough_spans|derived_spans|released_early|held_for_room)|receiver_items|exporter_(sent|dropped)_items)' | grep -v -E 'signal="(logs|metrics)"|} 0$' |
    awk '{ printf "%s%s", sep, $0; sep = "; " }')
  stop "$AGENT_PID"; stop "$SINK_PID"
  R[$k.delay]=$(awk '/^RESULT sink/ { for (i = 1; i <= NF; i++) if ($i ~ /^delay_(p50|p99|max)_ms=/) { split($i, kv, "="); printf "%s%s", sep, kv[2]; sep = " / " } }' "$SINK_LOG")
}

run_rss() {  # run_rss TRANSPORT MODE
  local tr=$1 mode=$2 k=$1.$2 sender samples=() s
  start_pair "$tr" "$mode" "rss-$k"
  R[$k.rss_idle]=$(rss_kib "$AGENT_PID" VmRSS)
  "${PIN_LOAD[@]}" "$OTB" send --transport "$tr" --target "127.0.0.1:$AGENT_PORT" --rate "$RSS_RATE" \
    --duration "$RSS_DURATION" --batch "$BATCH" --threads 2 >"$TMP/send-rss-$k.log" 2>&1 &
  sender=$!
  PIDS+=("$sender")
  while kill -0 "$sender" 2>/dev/null; do
    samples+=("$(rss_kib "$AGENT_PID" VmRSS)")
    sleep 0.5
  done
  wait "$sender" || echo "otlp bench: sender reported errors ($k rss)" >&2
  R[$k.rss_peak]=$(rss_kib "$AGENT_PID" VmHWM)
  R[$k.rss_drops]=$(metric "$AGENT_ADMIN" infertel_exporter_dropped_items)
  R[$k.rss_steady]=$(printf '%s\n' "${samples[@]}" |
    awk '{ v[NR] = $1 } END { h = int(NR / 2) + 1; for (i = h; i <= NR; i++) { s += v[i]; n++ } printf "%.0f", s / n }')
  R[$k.rss_send]=$(awk '/^RESULT send/ { for (i = 1; i <= NF; i++) if ($i ~ /^rate=/) { sub("rate=", "", $i); print $i } }' "$TMP/send-rss-$k.log")
  stop "$AGENT_PID"; stop "$SINK_PID"
}

echo "otlp bench: $(date -u '+%Y-%m-%d %H:%M UTC'), $(nproc) cores, load average $(cut -d' ' -f1-3 /proc/loadavg)"
echo "otlp bench: agent on core(s) ${PIN_AGENT[2]}, sender and sink on ${PIN_LOAD[2]:-any}; batch $BATCH, join window $JOIN_MS ms, OTEL_BSP_MAX_QUEUE_SIZE ${BSP_QUEUE:-default}; retry after $RETRY_MS ms; transports ${TRANSPORTS[*]}"
# The max phase runs $ROUNDS times per mode and transport, alternating, and the per-core
# figures are the medians: on a shared 2-vCPU VM one run moves by ±20 %. The other figures are
# the last round's.
declare -A PER_CORE
for ((round = 1; round <= ROUNDS; round++)); do
  for tr in "${TRANSPORTS[@]}"; do
    for mode in normalize passthrough; do
      echo "otlp bench: $tr $mode: max throughput (${MAX_DURATION} s, round $round of $ROUNDS)"
      run_max "$tr" "$mode"
      PER_CORE[$tr.$mode.in]+="${R[$tr.$mode.in_per_core]} "
      PER_CORE[$tr.$mode.out]+="${R[$tr.$mode.out_per_core]} "
    done
  done
done
median() { tr ' ' '\n' <<<"$1" | grep . | sort -n | awk '{ v[NR] = $1 } END { print (NR % 2) ? v[(NR + 1) / 2] : int((v[NR / 2] + v[NR / 2 + 1]) / 2) }'; }
for tr in "${TRANSPORTS[@]}"; do
  for mode in normalize passthrough; do
    R[$tr.$mode.in_per_core]=$(median "${PER_CORE[$tr.$mode.in]}")
    R[$tr.$mode.out_per_core]=$(median "${PER_CORE[$tr.$mode.out]}")
    echo "otlp bench: $tr $mode: RSS at $RSS_RATE spans/s (${RSS_DURATION} s)"
    run_rss "$tr" "$mode"
  done
done

mib() { awk -v k="$1" 'BEGIN { printf "%.1f", k / 1024 }'; }
met() { awk -v v="$1" -v t="$2" -v dir="$3" 'BEGIN { ok = (dir == "ge") ? v >= t : v <= t; print ok ? "met" : "missed" }'; }

for tr in "${TRANSPORTS[@]}"; do
  n=$tr.normalize p=$tr.passthrough
  echo
  echo "== transport: $tr"
  echo "counters (normalize): ${R[$n.counters]}"
  echo "counters (pass-through): ${R[$p.counters]}"
  echo "spans in per CPU-second, each round (normalize): ${PER_CORE[$n.in]}"
  echo "spans in per CPU-second, each round (pass-through): ${PER_CORE[$p.in]}"
  echo "agent CPU by thread, max run (normalize): ${R[$n.threads]}"
  echo "agent CPU by thread, max run (pass-through): ${R[$p.threads]}"
  echo "agent CPU per span in by thread, µs, max run (normalize): ${R[$n.thread_us]}"
  echo "agent CPU per span in by thread, µs, max run (pass-through): ${R[$p.thread_us]}"
  echo
  printf '%-44s %14s %14s\n' "$tr" normalize pass-through
  printf '%-44s %14s %14s\n' "sender rate, spans/s (as fast as possible)" "${R[$n.max_send]}" "${R[$p.max_send]}"
  printf '%-44s %14s %14s\n' "spans in/s (agent receiver)" "${R[$n.in_rate]}" "${R[$p.in_rate]}"
  printf '%-44s %14s %14s\n' "spans out/s (sink)" "${R[$n.out_rate]}" "${R[$p.out_rate]}"
  printf '%-44s %14s %14s\n' "agent CPU (cores busy)" "${R[$n.cpu]}" "${R[$p.cpu]}"
  printf '%-44s %14s %14s\n' "spans in per CPU-second (per core), median" "${R[$n.in_per_core]}" "${R[$p.in_per_core]}"
  printf '%-44s %14s %14s\n' "spans out per CPU-second, median" "${R[$n.out_per_core]}" "${R[$p.out_per_core]}"
  printf '%-44s %14s %14s\n' "exporter drops (queue full), max run" "${R[$n.max_drops]}" "${R[$p.max_drops]}"
  printf '%-44s %14s %14s\n' "RSS peak (VmHWM), max run, MiB" "$(mib "${R[$n.max_hwm]}")" "$(mib "${R[$p.max_hwm]}")"
  echo "llm_request end → sink, ms p50 / p99 / max, max run: normalize ${R[$n.delay]:-?}; pass-through ${R[$p.delay]:-?}"
  printf '%-44s %14s %14s\n' "requests that waited for room, max run" "${R[$n.max_waited]}" "${R[$p.max_waited]}"
  printf '%-44s %14s %14s\n' "requests answered 'retry later', max run" "${R[$n.max_throttled]}" "${R[$p.max_throttled]}"
  printf '%-44s %14s %14s\n' "RSS idle, MiB" "$(mib "${R[$n.rss_idle]}")" "$(mib "${R[$p.rss_idle]}")"
  printf '%-44s %14s %14s\n' "RSS steady at $RSS_RATE spans/s, MiB" "$(mib "${R[$n.rss_steady]}")" "$(mib "${R[$p.rss_steady]}")"
  printf '%-44s %14s %14s\n' "RSS peak (VmHWM) at $RSS_RATE spans/s, MiB" "$(mib "${R[$n.rss_peak]}")" "$(mib "${R[$p.rss_peak]}")"
  printf '%-44s %14s %14s\n' "achieved rate in the RSS run, spans/s" "${R[$n.rss_send]}" "${R[$p.rss_send]}"
  printf '%-44s %14s %14s\n' "exporter drops, RSS run" "${R[$n.rss_drops]}" "${R[$p.rss_drops]}"
done
echo
for tr in "${TRANSPORTS[@]}"; do
  n=$tr.normalize p=$tr.passthrough
  ratio=$(awk -v a="${R[$n.in_per_core]}" -v b="${R[$p.in_per_core]}" 'BEGIN { printf "%.2f", a / b }')
  echo "$tr: normalize / pass-through, spans in per core: $ratio"
  echo "$tr: target ≥ $TARGET_RATE spans/s per core (spans in, normalize): ${R[$n.in_per_core]} → $(met "${R[$n.in_per_core]}" $TARGET_RATE ge)"
  echo "$tr: target ≤ $TARGET_RSS_MIB MiB RSS at 10k spans/s (normalize, peak): $(mib "${R[$n.rss_peak]}") → $(met "$(mib "${R[$n.rss_peak]}")" $TARGET_RSS_MIB le)"
done
