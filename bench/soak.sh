#!/usr/bin/env bash
# bench/soak.sh BUILD_DIR — the agent left running under steady mixed load with the defaults
# (the store on), watched for anything that keeps growing: memory, file descriptors, threads,
# the store's disk, and what is dropped or refused.
#
# Builds nothing: takes the build directory holding `infertel`, `infertel-loadgen` and
# `infertel-otlp-bench`. One agent (vLLM, store on with --store-max-mb $BENCH_SOAK_STORE_MB,
# default 32, so that the bound and retention work many times over), not pinned (unless
# BENCH_SOAK_AGENT_CPU, below), as beside an engine. For $BENCH_SOAK_DURATION s (600):
#   - the loadgen (its upstream in the same process) sends $BENCH_SOAK_RATE req/s (1500) of
#     chat through the gateway, $BENCH_SOAK_STREAMS of them streams (0.25): each an entry span,
#     a join record, metrics;
#   - infertel-otlp-bench sends vLLM `llm_request` spans to the agent's OTLP gRPC receiver at
#     $BENCH_SOAK_SPAN_RATE spans/s (2000): they match no request, so each waits out the join
#     window in the assembler and is stored normalized, with its phases.
# Every $BENCH_SOAK_EVERY s (10) it samples the agent:
#   - VmRSS, open file descriptors, threads;
#   - the store directory's bytes (every file: partitions, WALs, metrics.db) and files, and the
#     files removed from the store that the agent still holds open (gone from the directory,
#     still on the disk) with their bytes;
#   - from /metrics, the spans the store wrote, the items every exporter dropped and the
#     receiver's refusals;
#   - what a web UI left open asks meanwhile: the newest 50 traces, then the first of them
#     whole, through /api/v1, with their answer times;
#   - and the overview page's series (/api/v1/metrics?since=15m), with its answer time;
# and it changes a live switch through the console's admin API (where captured content goes:
# span attributes, or attributes and log events, which the store writes too).
# With BENCH_SOAK_TENANTS=N (0: none) each request names one of N tenants in an `x-tenant-id`
# header, which the agent reads (INFERTEL_TENANT_FROM), and the agent judges every request
# against objectives (INFERTEL_SLO_TTFT_MS, INFERTEL_SLO_E2E_MS: $BENCH_SOAK_SLO_TTFT_MS, 20, and
# $BENCH_SOAK_SLO_E2E_MS, 100, so that the streams miss): past the tenant bound
# (INFERTEL_TENANT_MAX, 100 by default) tenants fold into `other`, and the summary prints the
# tenant and objective counters.
# With BENCH_SOAK_ENGINE=sglang the upstream is the project's SGLang simulator (`infertel sim
# --engine sglang --enable-trace --enable-metrics`, $BENCH_SOAK_SIM_SPEED times faster than its
# default step times, 20), which sends its own request spans to the agent's OTLP gRPC receiver
# and serves SGLang's /metrics; the agent runs with --engine sglang, the loadgen sends to it
# without an upstream of its own, no synthetic engine spans are sent, and the default rate is
# 300 req/s (the simulator's own CPU shares the cores).
# It prints one line a minute and a summary: RSS at the end of the first minute, at half time
# and at the end, and its growth over the second half (a least-squares line through its
# samples, KiB per minute); the largest and last fd and thread counts; the largest store size
# against the bound, alone and with the removed files still held; the agent's CPU; the queries' and switch
# changes' failures and slowest answers; drops (by exporter) and refusals; the gateway's
# non-zero counters (why a request failed, if one did). BENCH_SOAK_AGENT_ARGS adds agent flags.
# BENCH_SOAK_AGENT_CPU=N pins the agent alone to core N (`taskset`; the rest stay unpinned): an
# agent allowed one CPU, whose store writes pause in proportion to their work (pipeline/pacer.h).
# Every process started is stopped on exit.
set -euo pipefail

ROOT=$(cd "$(dirname "$0")/.." && pwd)
# shellcheck source=bench/lib.sh
source "$ROOT/bench/lib.sh"
use_build "${1:-build}" "soak bench" infertel infertel-loadgen infertel-otlp-bench

DURATION=${BENCH_SOAK_DURATION:-600}
ENGINE=${BENCH_SOAK_ENGINE:-vllm}
[[ $ENGINE == vllm || $ENGINE == sglang ]] ||
  { echo "soak bench: BENCH_SOAK_ENGINE is vllm or sglang, not $ENGINE" >&2; exit 2; }
RATE=${BENCH_SOAK_RATE:-1500}
[[ $ENGINE == sglang ]] && RATE=${BENCH_SOAK_RATE:-300}
STREAMS=${BENCH_SOAK_STREAMS:-0.25}
SPAN_RATE=${BENCH_SOAK_SPAN_RATE:-2000}
[[ $ENGINE == sglang ]] && SPAN_RATE=0
STORE_MB=${BENCH_SOAK_STORE_MB:-32}
EVERY=${BENCH_SOAK_EVERY:-10}
TENANTS=${BENCH_SOAK_TENANTS:-0}
# More agent flags, e.g. "--otlp-endpoint http://127.0.0.1:9" (an exporter whose collector is
# down, beside the store).
read -r -a EXTRA <<<"${BENCH_SOAK_AGENT_ARGS:-}"

bench_init "soak bench" soak
agent_compat_flags "$INFERTEL"
PIN_PROXY=()
AGENT_CPU=${BENCH_SOAK_AGENT_CPU:-}
[[ -z $AGENT_CPU ]] || PIN_PROXY=(taskset -c "$AGENT_CPU")
AGENT_ARGS=()
AGENT_ENGINE=$ENGINE

UP_PORT=$("$LOADGEN" freeport)
if ((TENANTS > 0)); then
  export INFERTEL_TENANT_FROM=header:x-tenant-id
  export INFERTEL_SLO_TTFT_MS=${BENCH_SOAK_SLO_TTFT_MS:-20}
  export INFERTEL_SLO_E2E_MS=${BENCH_SOAK_SLO_E2E_MS:-100}
fi
STORE=$TMP/store
start_agent agent "$UP_PORT" --store "$STORE" --store-max-mb "$STORE_MB" "${EXTRA[@]}"
ADMIN=$(wait_line "$TMP/agent.log" 'admin listening on http://' | port_of)
RECV=$(wait_line "$TMP/agent.log" 'OTLP gRPC receiver listening on ')
RECV=${RECV##*:}

echo "soak bench: $(date -u '+%Y-%m-%d %H:%M UTC'), $(nproc) cores, load average $(load_avg)"
echo "soak bench: $DURATION s; engine $ENGINE$([[ $ENGINE == sglang ]] && echo " (the simulator, its own spans)"); $RATE req/s through the gateway ($STREAMS streams), $SPAN_RATE synthetic engine spans/s over OTLP gRPC; store bound $STORE_MB MiB${AGENT_CPU:+; the agent pinned to core $AGENT_CPU}${EXTRA[*]:+; agent flags: ${EXTRA[*]}}$( ((TENANTS > 0)) && echo "; $TENANTS tenants, objectives TTFT $INFERTEL_SLO_TTFT_MS ms, e2e $INFERTEL_SLO_E2E_MS ms")"

SERVE=(--serve "127.0.0.1:$UP_PORT")
if [[ $ENGINE == sglang ]]; then
  OTEL_EXPORTER_OTLP_TRACES_PROTOCOL=grpc "$INFERTEL" sim --engine sglang \
    --listen "127.0.0.1:$UP_PORT" --model-path bench-model --enable-trace --enable-metrics \
    --otlp-traces-endpoint "http://127.0.0.1:$RECV" --speed "${BENCH_SOAK_SIM_SPEED:-20}" \
    --max-running-requests 256 >"$TMP/sim.log" 2>&1 &
  PIDS+=($!)
  wait_port "$UP_PORT"
  SERVE=()
fi
"$LOADGEN" fixed --target "127.0.0.1:$AGENT_PORT" "${SERVE[@]}" \
  --model bench-model --label soak --warmup 0 --rate "$RATE" --stream-fraction "$STREAMS" \
  --connections 512 --tenants "$TENANTS" \
  --duration "$DURATION" >"$TMP/loadgen.log" 2>&1 &
LG=$!
PIDS+=("$LG")
if ((SPAN_RATE > 0)); then
  "$OTB" send --target "127.0.0.1:$RECV" --rate "$SPAN_RATE" --duration "$DURATION" \
    --threads 1 --retry-ms 1000 >"$TMP/sender.log" 2>&1 &
  PIDS+=($!)
fi

SAMPLES=$TMP/samples.txt
: >"$SAMPLES"
store_bytes() { find "$STORE" -type f -printf '%s\n' 2>/dev/null | awk '{ s += $1 } END { print s + 0 }'; }
store_files() { find "$STORE" -type f 2>/dev/null | wc -l; }
# The agent's descriptors of files removed from the store but still open: `du` no longer sees
# them, the file system still keeps them. Prints "count KiB".
held_removed() {
  local fd n=0 bytes=0
  for fd in /proc/"$AGENT_PID"/fd/*; do
    [[ $(readlink "$fd" 2>/dev/null) == "$STORE"/*" (deleted)" ]] || continue
    n=$((n + 1))
    bytes=$((bytes + $(stat -L -c %s "$fd" 2>/dev/null || echo 0)))
  done
  echo "$n $((bytes / 1024))"
}
# What an operator with the web UI open does meanwhile: the newest 50 traces, then the first of
# them whole, through the admin API. Prints "list_code list_ms trace_code trace_ms".
# timed_get PATH [FILE]: GETs PATH of the admin API, its body into FILE (else dropped); prints
# "code ms" (0 0 when nothing answered).
timed_get() {
  local out code s
  out=$(curl -s -m 10 -o "${2:-/dev/null}" -w '%{http_code} %{time_total}' \
    "http://127.0.0.1:$ADMIN$1") || true
  read -r code s <<<"${out:-0 0}"
  awk -v a="$code" -v b="$s" 'BEGIN { printf "%d %.0f", a, b * 1000 }'
}
query_store() {
  local list id trace="0 0"
  list=$(timed_get "/api/v1/traces?limit=50" "$TMP/list.json")
  id=$(grep -o '"trace_id":"[0-9a-f]*"' "$TMP/list.json" 2>/dev/null | head -1 | cut -d'"' -f4)
  [[ -n $id ]] && trace=$(timed_get "/api/v1/traces/$id")
  echo -n "$list $trace"
}
# The web UI's overview page: the agent's series over the last 15 minutes. Prints "code ms".
query_overview() { timed_get "/api/v1/metrics?since=15m"; }
# An operator changing a live switch: where captured content goes, span attributes or span
# attributes and log events (which the store then writes as log records), turn by turn. Prints
# the PUT's status code.
FLIP_KEY=otel.instrumentation.genai.message-content.capture-strategy
flip_switch() {
  local value=span
  (($1 % 2)) && value=span_and_event
  curl -s -m 10 -o /dev/null -w '%{http_code}' -X PUT -H 'Content-Type: application/json' \
    -d "{\"value\":\"$value\"}" "http://127.0.0.1:$ADMIN/api/config/$FLIP_KEY" || echo 0
}
t0=$(date +%s)
cpu0=$(cpu_ticks "$AGENT_PID")
turn=0
printf '%6s %10s %5s %7s %10s %5s %12s %9s %9s %7s %9s %8s %8s\n' s rss_kib fds threads store_kib \
  files stored dropped refused removed removed_kib list_ms trace_ms
while kill -0 "$LG" 2>/dev/null; do
  sleep "$EVERY"
  kill -0 "$AGENT_PID" 2>/dev/null || bench_die "the agent exited: $(tail -3 "$TMP/agent.log")"
  t=$(($(date +%s) - t0))
  line=$(printf '%d %d %d %d %d %d %d %d %d' "$t" "$(rss_kib "$AGENT_PID" VmRSS)" \
    "$(find "/proc/$AGENT_PID/fd" -mindepth 1 -maxdepth 1 2>/dev/null | wc -l)" \
    "$(find "/proc/$AGENT_PID/task" -mindepth 1 -maxdepth 1 | wc -l)" \
    "$(($(store_bytes) / 1024))" "$(store_files)" \
    "$(curl -s "http://127.0.0.1:$ADMIN/metrics" | awk '/^infertel_exporter_sent_items(_total)?\{/ && /exporter="store"/ && /signal="traces"/ { s += $NF } END { printf "%.0f", s }')" \
    "$(metric "$ADMIN" infertel_exporter_dropped_items)" \
    "$(metric "$ADMIN" infertel_receiver_throttled_requests)")
  turn=$((turn + 1))
  line="$line $(held_removed) $(query_store) $(flip_switch "$turn") $(query_overview)"
  echo "$line" >>"$SAMPLES"
  # One line a minute on the terminal; every sample in the summary.
  if (((t / EVERY) % (60 / EVERY) == 0)); then
    awk '{ printf "%6d %10d %5d %7d %10d %5d %12d %9d %9d %7d %9d %8d %8d\n", $1, $2, $3, $4, $5, $6, $7, $8, $9, $10, $11, $13, $15 }' <<<"$line"
  fi
done
wait "$LG" || true
cpu1=$(cpu_ticks "$AGENT_PID")
t1=$(date +%s)
curl -s "http://127.0.0.1:$ADMIN/metrics" >"$TMP/metrics.txt" || true

[[ -s $SAMPLES ]] || bench_die "no sample taken"
echo "soak bench: loadgen: $(grep '^RESULT' "$TMP/loadgen.log" | tr -s ' ' | cut -c1-240)"
echo "soak bench: sender: $(grep -s '^RESULT' "$TMP/sender.log" || echo none)"
awk -v c="$((cpu1 - cpu0))" -v hz="$(getconf CLK_TCK)" -v s="$((t1 - t0))" -v r="$RATE" \
  'BEGIN { printf "soak bench: the agent'"'"'s CPU: %.1f s over %d s, %.0f%% of a core; %.0f µs per gateway request, its share of the streams'"'"' events and the engine spans included\n", c / hz, s, 100 * c / hz / s, 1e6 * c / hz / (s * r) }'
awk -v bound_kib=$((STORE_MB * 1024)) '
  { t[NR] = $1; rss[NR] = $2; fd[NR] = $3; th[NR] = $4; st[NR] = $5; n = NR
    if ($3 > maxfd) maxfd = $3; if ($4 > maxth) maxth = $4; if ($5 > maxst) maxst = $5
    if ($10 > maxrm) maxrm = $10; if ($5 + $11 > maxheld) maxheld = $5 + $11
    q++; if ($12 != 200) qbad++; if ($14 != 200) tbad++
    if ($13 > qmax) qmax = $13; if ($15 > tmax) tmax = $15; if ($16 != 200) fbad++
    if ($17 != 200) obad++; if ($18 > omax) omax = $18 }
  END {
    first = 1; while (first < n && t[first] < 60) first++
    half = 1; while (half < n && t[half] < t[n] / 2) half++
    # least squares over the second half: RSS (KiB) against time (min)
    for (i = half; i <= n; i++) { x = t[i] / 60; sx += x; sy += rss[i]; sxx += x * x; sxy += x * rss[i]; k++ }
    slope = (k > 1 && k * sxx - sx * sx > 0) ? (k * sxy - sx * sy) / (k * sxx - sx * sx) : 0
    printf "soak bench: RSS %d KiB at %d s, %d KiB at %d s, %d KiB at %d s; second half: %+.0f KiB/min\n", rss[first], t[first], rss[half], t[half], rss[n], t[n], slope
    printf "soak bench: fds: at most %d, last %d; threads: at most %d, last %d\n", maxfd, fd[n], maxth, th[n]
    printf "soak bench: store: at most %d KiB of the %d KiB bound (%.1f%%), last %d KiB\n", maxst, bound_kib, 100 * maxst / bound_kib, st[n]
    printf "soak bench: store queries: %d newest-50 pages, %d not answered 200, the slowest %d ms; %d traces by id, %d not 200, the slowest %d ms\n", q, qbad, qmax, q, tbad, tmax
    printf "soak bench: live switch changes: %d, %d not answered 200\n", q, fbad
    printf "soak bench: overview series (15 min): %d asked, %d not answered 200, the slowest %d ms\n", q, obad, omax
    printf "soak bench: removed files still held open: at most %d; the store with them at most %d KiB (%.1f%% of the bound)\n", maxrm, maxheld, 100 * maxheld / bound_kib
  }' "$SAMPLES"
last=$(tail -1 "$SAMPLES")
read -r _ _ _ _ _ _ stored dropped refused _ <<<"$last"
echo "soak bench: spans stored $stored; items dropped by exporters $dropped; receiver refusals $refused"
echo "soak bench: dropped, by exporter and reason: $(grep -E '^infertel_exporter_dropped_items(_total)?\{' "$TMP/metrics.txt" |
  grep -v ' 0$' | tr '\n' ' ')"
# Why a request failed, if one did: the gateway's own counters that are not zero.
echo "soak bench: the gateway's counters: $(grep -E '^infertel_gateway_[a-z_]+_total' "$TMP/metrics.txt" |
  grep -v ' 0$' | tr '\n' ' ')"
if ((TENANTS > 0)); then
  echo "soak bench: tenants and objectives: $(grep -E '^infertel_(tenants|tenants_folded|slo_verdicts_dropped|overview_values_dropped)(_total)?(\{| )' "$TMP/metrics.txt" |
    tr '\n' ' ')"
  echo "soak bench: objectives judged: $(awk '/^infertel_slo_requests_total\{/ { n += $NF } /^infertel_slo_misses_total\{/ { m += $NF } END { printf "%.0f requests, %.0f misses", n, m }' "$TMP/metrics.txt"), series $(grep -c '^infertel_slo_requests_total{' "$TMP/metrics.txt")"
fi
