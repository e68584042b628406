#!/usr/bin/env bash
# bench/streams_memory.sh BUILD_DIR — resident memory of the agent holding many concurrent SSE
# streams, against nginx holding the same streams, in one run (issue 7: "5,000 concurrent SSE
# streams through one agent in at most 256 MiB resident").
#
# Builds nothing: takes the build directory holding `infertel` and `infertel-loadgen`.
# All on 127.0.0.1. For each target, in order (a fresh proxy per target):
#   direct          client → upstream (checks that client and upstream hold the streams)
#   nginx           client → nginx (bench/nginx.conf.template, one worker, worker_connections
#                   raised to hold every stream's two connections, with room) → upstream
#   infertel        client → infertel agent --no-store → upstream
#   infertel+store  the same with the embedded SQLite store (--store FILE), the default sink
# the upstream is infertel-loadgen's own (in the loadgen process): every stream sends an event
# every $INTERVAL_MS ms for longer than the run. The loadgen opens $STREAMS streams spread over
# $RAMP s (`stream --ramp --hold`), waits $SETTLE s, then measures for $DURATION s with every
# stream held open: open streams and the proxy's VmRSS every 250 ms, events received, per-event
# latency, the proxy's CPU. Then it cuts every stream. The proxy's VmRSS is read once idle
# (1 s after it started, before any traffic) and VmHWM (peak resident, ramp and teardown
# included) after the run (or the highest VmRSS sample, if larger), and VmRSS again 1 s after
# the streams were cut. nginx: the worker's figures (the master's are printed apart).
# Per-stream KiB = (steady − idle) / streams open. Proxies are pinned to core $PROXY_CPU, the
# loadgen to $LG_CPU, as in bench/run.sh. Every process started is stopped on exit.
# About 1.5 minutes with the defaults.
#
# Environment:
#   BENCH_SM_STREAMS        concurrent streams (5000)
#   BENCH_SM_INTERVAL_MS    time between two events of one stream, ms (1000)
#   BENCH_SM_RAMP           seconds over which the streams are opened (5)
#   BENCH_SM_SETTLE         seconds between the end of the ramp and the window (2)
#   BENCH_SM_DURATION       measured seconds, every stream open (10)
#   BENCH_SM_TARGETS        targets to run, in order ("direct nginx infertel infertel+store")
#   BENCH_SM_AGENT_THREADS  agent --threads (default: the agent's default)
#   BENCH_SM_BOUND_MIB      the bound the agent's resident memory is held to (256)
#   BENCH_SM_NGINX_CONNECTIONS  nginx worker_connections (2 × streams × 9/8 + 128)
#   BENCH_LOADGEN_CPU, BENCH_PROXY_CPU  cores of the loadgen and of the proxy (0, 1)
# Output: the loadgen's lines, one `RESULT streams_memory ...` line per target, a summary.
set -euo pipefail

ROOT=$(cd "$(dirname "$0")/.." && pwd)
# shellcheck source=bench/lib.sh
source "$ROOT/bench/lib.sh"
use_build "${1:-build}" "streams bench" infertel infertel-loadgen

STREAMS=${BENCH_SM_STREAMS:-5000}
INTERVAL_MS=${BENCH_SM_INTERVAL_MS:-1000}
RAMP=${BENCH_SM_RAMP:-5}
SETTLE=${BENCH_SM_SETTLE:-2}
DURATION=${BENCH_SM_DURATION:-10}
TARGETS=${BENCH_SM_TARGETS:-direct nginx infertel infertel+store}
AGENT_THREADS=${BENCH_SM_AGENT_THREADS:-}
BOUND_MIB=${BENCH_SM_BOUND_MIB:-256}
MODEL=bench-model
# Long enough that no stream ends before the client cuts it.
EVENTS=$(awk -v r="$RAMP" -v s="$SETTLE" -v d="$DURATION" -v i="$INTERVAL_MS" \
  'BEGIN { printf "%d", (r + s + d + 30) * 1000 / i + 1 }')

if [[ $TARGETS == *nginx* ]]; then
  command -v nginx >/dev/null || { echo "streams bench: nginx not installed (make deps)" >&2; exit 1; }
fi

# File descriptors: the loadgen holds both ends (client and upstream) of every stream, a proxy
# its client and upstream connections; 256 spare for listeners, logs, the store.
NEED_FDS=$((2 * STREAMS + 256))
ulimit -n "$(ulimit -Hn)" 2>/dev/null || true
if (($(ulimit -n) < NEED_FDS)); then
  echo "streams bench: $STREAMS streams need $NEED_FDS file descriptors per process; the hard" \
    "limit is $(ulimit -Hn) (raise it, e.g. in /etc/security/limits.conf, or lower BENCH_SM_STREAMS)" >&2
  exit 1
fi
# nginx counts both connections of a stream, and once fewer than 1/16 of its worker_connections
# are free it starts closing connections that wait for a request ("worker_connections are not
# enough, reusing connections"), new streams among them: 1/8 spare on top.
export NGINX_WORKER_CONNECTIONS=${BENCH_SM_NGINX_CONNECTIONS:-$((2 * STREAMS * 9 / 8 + 128))}

pin_cores
bench_init "streams bench" streams
agent_compat_flags "$INFERTEL"
AGENT_ARGS=()
[[ -n $AGENT_THREADS ]] && AGENT_ARGS=(--threads "$AGENT_THREADS")

RESULTS=$TMP/results.txt
: >"$RESULTS"
run_target() {  # run_target NAME
  local name=$1 port pid="" master="" idle=0 master_rss=0 up
  up=$("$LOADGEN" freeport)
  case $name in
    direct) port=$up ;;
    nginx)
      start_nginx nginx "$up"
      port=$NGINX_PORT pid=$NGINX_WORKER master=$NGINX_MASTER
      ;;
    infertel)
      start_agent agent "$up" --no-store
      port=$AGENT_PORT pid=$AGENT_PID
      ;;
    infertel+store)
      start_agent agent-store "$up" --store "$TMP/streams.db"
      port=$AGENT_PORT pid=$AGENT_PID
      ;;
    *) bench_die "unknown target $name" ;;
  esac
  if [[ -n $pid ]]; then
    sleep 1
    idle=$(rss_kib "$pid" VmRSS)
  fi
  local watch=()
  [[ -n $pid ]] && watch=(--cpu-pids "$pid" --rss-pids "$pid")
  local log=$TMP/lg-$name.log
  echo "streams bench: $name: $STREAMS streams over ${RAMP} s, measured for ${DURATION} s"
  "${PIN_LG[@]}" "$LOADGEN" stream --target "127.0.0.1:$port" --serve "127.0.0.1:$up" \
    --label "$name" --model "$MODEL" --streams "$STREAMS" --events "$EVENTS" \
    --interval-ms "$INTERVAL_MS" --ramp "$RAMP" --hold \
    --warmup "$(awk -v r="$RAMP" -v s="$SETTLE" 'BEGIN { print r + s }')" \
    --duration "$DURATION" "${watch[@]}" >"$log" 2>&1 || true
  grep -v '^RESULT' "$log" | grep -v 'upstream listening' | tail -n 4 || true
  grep -q '^RESULT' "$log" || { cat "$log" >&2; bench_die "$name: the loadgen produced no result"; }
  local peak=0 after=0
  if [[ -n $pid ]]; then
    # VmHWM is brought up to date only at some memory events, so it can lag behind a VmRSS
    # sampled earlier: the peak is the larger of the two.
    peak=$(rss_kib "$pid" VmHWM)
    peak=$(awk -v a="$peak" -v b="$(result_field "$log" rss_max_kib)" -v c="$(result_field "$log" hwm_kib)" \
      'BEGIN { m = a; if (b > m) m = b; if (c > m) m = c; print m }')
    sleep 1
    after=$(rss_kib "$pid" VmRSS)
    [[ -n $master ]] && master_rss=$(rss_kib "$master" VmRSS)
  fi
  local f=$log
  local open_min open_max opened errors events_s p50 p99 steady steady_max cpu_us
  open_min=$(result_field "$f" open_min) open_max=$(result_field "$f" open_max)
  opened=$(result_field "$f" opened) errors=$(result_field "$f" errors)
  events_s=$(result_field "$f" per_s) p50=$(result_field "$f" p50_us) p99=$(result_field "$f" p99_us)
  steady=$(result_field "$f" rss_mean_kib) steady_max=$(result_field "$f" rss_max_kib)
  cpu_us=$(result_field "$f" proxy_cpu_us_per_item)
  local per_stream
  per_stream=$(awk -v s="${steady:-0}" -v i="$idle" -v n="$open_min" \
    'BEGIN { if (s > 0 && n > 0) printf "%.1f", (s - i) / n; else print 0 }')
  echo "RESULT streams_memory target=$name streams=$STREAMS open_min=$open_min open_max=$open_max" \
    "opened=$opened errors=$errors events_per_s=$events_s event_p50_us=$p50 event_p99_us=$p99" \
    "idle_kib=$idle steady_kib=${steady:-0} steady_max_kib=${steady_max:-0} peak_kib=$peak" \
    "after_kib=$after master_kib=$master_rss per_stream_kib=$per_stream" \
    "proxy_cpu_us_per_event=${cpu_us:-0}" | tee -a "$RESULTS"
  [[ -n $pid ]] && { stop_pid "${master:-$pid}"; }
  return 0
}

LOAD_BEFORE=$(load_avg)
echo "streams bench: $(date -u '+%Y-%m-%d %H:%M UTC'), $(nproc) cores, load average $LOAD_BEFORE"
echo "streams bench: $STREAMS streams, an event every $INTERVAL_MS ms each, ramp $RAMP s," \
  "settle $SETTLE s, window $DURATION s; loadgen on core ${LG_CPU:-any}, proxy on core" \
  "${PROXY_CPU:-any}; agent --threads ${AGENT_THREADS:-default}; nginx worker_connections" \
  "$NGINX_WORKER_CONNECTIONS; ulimit -n $(ulimit -n)"
for t in $TARGETS; do run_target "$t"; done
LOAD_AFTER=$(load_avg)

# ---- summary -------------------------------------------------------------------------------
echo
echo "load average before $LOAD_BEFORE, after $LOAD_AFTER"
echo
awk -v bound="$BOUND_MIB" '
  function mib(k) { return k > 0 ? sprintf("%.1f", k / 1024) : "-" }
  /^RESULT streams_memory/ {
    delete kv
    for (i = 3; i <= NF; i++) { split($i, p, "="); kv[p[1]] = p[2] }
    n++; name[n] = kv["target"]
    for (k in kv) v[n, k] = kv[k]
  }
  END {
    printf "%-16s %8s %8s %9s %6s %9s %9s %9s %9s %10s %11s\n", "target", "open min", "open max",
      "events/s", "errors", "idle MiB", "steady", "peak", "after", "KiB/stream", "p99 ms/event"
    for (i = 1; i <= n; i++) {
      printf "%-16s %8s %8s %9.0f %6s %9s %9s %9s %9s %10s %11.1f\n", name[i], v[i, "open_min"],
        v[i, "open_max"], v[i, "events_per_s"], v[i, "errors"], mib(v[i, "idle_kib"]),
        mib(v[i, "steady_kib"]), mib(v[i, "peak_kib"]), mib(v[i, "after_kib"]),
        name[i] == "direct" ? "-" : v[i, "per_stream_kib"], v[i, "event_p99_us"] / 1000
      if (name[i] == "nginx") nginx_ps = v[i, "per_stream_kib"]
      if (name[i] == "nginx") printf "%-16s (master process: %s MiB, not included)\n", "", mib(v[i, "master_kib"])
    }
    print ""
    for (i = 1; i <= n; i++) {
      if (name[i] !~ /^infertel/) continue
      steady = v[i, "steady_kib"] / 1024; peak = v[i, "peak_kib"] / 1024
      all = v[i, "open_min"] + 0 >= v[i, "streams"] + 0 && v[i, "errors"] + 0 == 0
      printf "target: %s streams in <= %d MiB resident (%s): steady %.1f MiB, peak %.1f MiB -> %s%s\n",
        v[i, "streams"], bound, name[i], steady, peak, (peak <= bound && all) ? "met" : "missed",
        all ? "" : " (not every stream was open throughout)"
      if (nginx_ps > 0)
        printf "        per stream: %s KiB against nginx %s KiB (%.1fx)\n", v[i, "per_stream_kib"],
          nginx_ps, v[i, "per_stream_kib"] / nginx_ps
    }
  }' "$RESULTS"
