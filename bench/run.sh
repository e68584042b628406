#!/usr/bin/env bash
# bench/run.sh BUILD_DIR — the gateway against nginx, in one run (see docs/performance.md).
#
# Builds nothing: takes the build directory holding `infertel` and `infertel-loadgen`.
# Starts, all on 127.0.0.1:
#   - the upstream: infertel-loadgen's own minimal vLLM-shaped server, run inside each
#     loadgen process (same process, same clock as the client) on one fixed port;
#   - nginx as a plain reverse proxy (bench/nginx.conf.template, one worker);
#   - infertel-tcp-relay (bench/tcp_relay.cc): bytes copied both ways with raw epoll, no HTTP,
#     the floor of what any proxy adds on this machine (open loop and streams only: its
#     throughput is not an HTTP proxy's);
#   - infertel agent --no-store (no trace or log exporter, so no entry spans or content
#     events are built; metrics and join records are), infertel agent --store (the
#     embedded SQLite store on, the default: entry spans built, captured and stored) and
#     infertel agent --no-store --otlp-endpoint (entry spans built and exported over OTLP
#     gRPC to infertel-otlp-bench's sink, as to a collector; the sink runs on the load's core
#     and its count of spans received is printed, so a run that exported nothing shows);
#   - optionally (BENCH_SIM=1, the default) `infertel sim` with fast settings as a second
#     upstream, behind a second nginx and a second agent.
# Pinning (with 2+ cores): every proxy on core $PROXY_CPU, loadgen + upstream on core $LG_CPU,
# so a proxy never competes with the load it serves and nginx and infertel get the same core.
# Then, back to back, for every mode: direct (client → upstream), nginx, infertel, infertel
# with the store, infertel exporting over OTLP:
#   fixed   open-loop non-streaming chat at $RATE req/s for $DURATION s, the targets
#           alternating for $OPEN_ROUNDS rounds (3)
#   closed  closed-loop maximum throughput with $CLOSED_CONNS connections, the targets
#           alternating for $CLOSED_ROUNDS rounds (3), each reported by its median round
#   stream  $STREAMS concurrent SSE streams, an event every $INTERVAL_MS ms per stream, the
#           targets alternating for $OPEN_ROUNDS rounds
# and prints added latency (proxy − direct) and the ratios against the issue 7 targets. A
# latency added is taken in each round against the direct run of the same round, and reported
# as the median of the rounds: one slow minute of the machine then moves one round, not the
# verdict. Every process it starts is stopped on exit. Whole run: about 8 minutes (7.5 without
# the sim).
set -euo pipefail

ROOT=$(cd "$(dirname "$0")/.." && pwd)
# shellcheck source=bench/lib.sh
source "$ROOT/bench/lib.sh"
use_build "${1:-build}" bench infertel infertel-loadgen infertel-otlp-bench infertel-tcp-relay
command -v nginx >/dev/null || { echo "bench: nginx not installed (make deps)" >&2; exit 1; }

RATE=${BENCH_RATE:-1000}
DURATION=${BENCH_DURATION:-10}
WARMUP=${BENCH_WARMUP:-1}
CONNS=${BENCH_CONNECTIONS:-64}
CLOSED_CONNS=${BENCH_CLOSED_CONNECTIONS:-32}
CLOSED_DURATION=${BENCH_CLOSED_DURATION:-5}
# The closed loop alternates its targets for this many rounds and reports each target's median
# round: the machine's speed moves by a third within minutes, and one round per target let a
# slow minute decide the throughput ratio.
CLOSED_ROUNDS=${BENCH_CLOSED_ROUNDS:-3}
# The open-loop and streaming runs too: a p99 over 10 s moved by 2-10x with the machine from one
# run to the next, the baseline's as much as the agent's (docs/performance.md).
OPEN_ROUNDS=${BENCH_OPEN_ROUNDS:-3}
STREAMS=${BENCH_STREAMS:-32}
EVENTS=${BENCH_EVENTS:-50}
INTERVAL_MS=${BENCH_INTERVAL_MS:-4}
AGENT_THREADS=${BENCH_AGENT_THREADS:-1}
SIM=${BENCH_SIM:-1}
MODEL=bench-model

pin_cores
bench_init bench bench
AGENT_ARGS=(--threads "$AGENT_THREADS")

# Flags of newer agents: no OTLP receivers and no version probe of the bench upstream.
agent_compat_flags "$INFERTEL"

UP_PORT=$("$LOADGEN" freeport)
start_nginx nginx "$UP_PORT"
NGINX_LG_PORT=$NGINX_PORT NGINX_LG_PID=$NGINX_WORKER
"${PIN_PROXY[@]}" "$BUILD/infertel-tcp-relay" --listen 127.0.0.1:0 --to "127.0.0.1:$UP_PORT" \
  >"$TMP/relay.log" 2>&1 &
RELAY_PID=$!
PIDS+=("$RELAY_PID")
RELAY_PORT=$(wait_line "$TMP/relay.log" 'listening on' | port_of)
start_agent agent "$UP_PORT" --no-store
AGENT_LG_PORT=$AGENT_PORT AGENT_LG_PID=$AGENT_PID
start_agent agent-store "$UP_PORT" --store "$TMP/bench.db"
STORE_LG_PORT=$AGENT_PORT STORE_LG_PID=$AGENT_PID
start_sink grpc "$TMP/sink.log"
start_agent agent-otlp "$UP_PORT" --no-store --otlp-endpoint "http://127.0.0.1:$SINK_PORT" \
  --otlp-protocol grpc
OTLP_LG_PORT=$AGENT_PORT OTLP_LG_PID=$AGENT_PID
OTLP_ADMIN=$(wait_line "$TMP/agent-otlp.log" 'admin listening on' | port_of)
echo "bench: exporting (no-store agent): $(grep -m1 'exporting to' "$TMP/agent.log" || echo '?')"
echo "bench: exporting (store agent):    $(grep -m1 'exporting to' "$TMP/agent-store.log" || echo '?')"
echo "bench: exporting (otlp agent):     $(grep -m1 'exporting to' "$TMP/agent-otlp.log" || echo '?')"

# name  port  pids whose CPU is measured
TARGETS=(
  "direct $UP_PORT -"
  "relay $RELAY_PORT $RELAY_PID"
  "nginx $NGINX_LG_PORT $NGINX_LG_PID"
  "infertel $AGENT_LG_PORT $AGENT_LG_PID"
  "infertel+store $STORE_LG_PORT $STORE_LG_PID"
  "infertel+otlp $OTLP_LG_PORT $OTLP_LG_PID"
)

RESULTS=$TMP/results.txt
: >"$RESULTS"
run_lg() {  # run_lg MODE NAME PORT PIDS ARGS...: one loadgen run, its RESULT line kept
  local mode=$1 name=$2 port=$3 pids=$4
  shift 4
  local cpu=()
  [[ $pids != - ]] && cpu=(--cpu-pids "$pids")
  local out
  out=$("${PIN_LG[@]}" "$LOADGEN" "$mode" --target "127.0.0.1:$port" --label "$name" \
    --warmup "$WARMUP" --model "$MODEL" "${cpu[@]}" "$@") || true
  grep -v '^RESULT' <<<"$out" | grep -v 'upstream listening' || true
  grep '^RESULT' <<<"$out" >>"$RESULTS" || echo "bench: $mode $name produced no result" >&2
}

echo "bench: $(date -u +%FT%TZ), $(nproc) cores, load average $(cut -d' ' -f1-3 /proc/loadavg)"
echo "bench: loadgen+upstream on core ${LG_CPU:-any}, proxies on core ${PROXY_CPU:-any}," \
  "agent --threads $AGENT_THREADS, nginx worker_processes 1"
LOAD_BEFORE=$(cut -d' ' -f1-3 /proc/loadavg)

for ((round = 1; round <= OPEN_ROUNDS; round++)); do
  for t in "${TARGETS[@]}"; do
    read -r name port pids <<<"$t"
    run_lg fixed "$name" "$port" "$pids" --serve "127.0.0.1:$UP_PORT" --rate "$RATE" \
      --duration "$DURATION" --connections "$CONNS"
  done
done
for ((round = 1; round <= CLOSED_ROUNDS; round++)); do
  for t in "${TARGETS[@]}"; do
    read -r name port pids <<<"$t"
    [[ $name == relay ]] && continue
    run_lg closed "$name" "$port" "$pids" --serve "127.0.0.1:$UP_PORT" \
      --duration "$CLOSED_DURATION" --connections "$CLOSED_CONNS"
  done
done
for ((round = 1; round <= OPEN_ROUNDS; round++)); do
  for t in "${TARGETS[@]}"; do
    read -r name port pids <<<"$t"
    run_lg stream "$name" "$port" "$pids" --serve "127.0.0.1:$UP_PORT" --streams "$STREAMS" \
      --events "$EVENTS" --interval-ms "$INTERVAL_MS" --duration "$DURATION"
  done
done

if [[ $SIM == 1 ]]; then
  "${PIN_LG[@]}" "$INFERTEL" sim --engine vllm --listen 127.0.0.1:0 --model "$MODEL" \
    --step-fixed-ms 0.05 --prefill-ms-per-token 0.001 --decode-ms-per-token 0.001 \
    >"$TMP/sim.log" 2>&1 &
  PIDS+=($!)
  SIM_PORT=$(wait_line "$TMP/sim.log" 'listening on' | port_of)
  wait_port "$SIM_PORT"
  start_nginx nginx-sim "$SIM_PORT"
  start_agent agent-sim "$SIM_PORT" --no-store
  for t in "sim-direct $SIM_PORT -" "sim-nginx $NGINX_PORT $NGINX_WORKER" \
    "sim-infertel $AGENT_PORT $AGENT_PID"; do
    read -r name port pids <<<"$t"
    run_lg fixed "$name" "$port" "$pids" --rate "$RATE" --duration "$DURATION" \
      --connections "$CONNS" --max-tokens 16
  done
fi
LOAD_AFTER=$(cut -d' ' -f1-3 /proc/loadavg)
sleep 1  # the OTLP agent's last batch (OTEL_BSP_SCHEDULE_DELAY, 200 ms by default)
SUNK=$(sink_count "$TMP/sink.log")
# Spans the OTLP agent dropped and counted (a full export queue at saturation: bounded, by design).
DROPPED=$(metric "$OTLP_ADMIN" infertel_exporter_dropped_items)

# ---- summary -------------------------------------------------------------------------------
python3 - "$RESULTS" "$LOAD_BEFORE" "$LOAD_AFTER" "$SUNK" "$DROPPED" <<'PY'
import sys
runs = {}
for line in open(sys.argv[1]):
    kv = dict(f.split("=", 1) for f in line.split()[1:])
    r = {k: (float(v) if k not in ("mode", "label") else v) for k, v in kv.items()}
    runs.setdefault((kv["mode"], kv["label"]), []).append(r)
def rate(r):  # requests per proxy CPU-second (closed loop), else per second
    return r["count"] / r["proxy_cpu_s"] if r.get("proxy_cpu_s", 0) > 0 else r["per_s"]
def median(xs, key=None):  # the lower median, as the rounds are reported
    xs = sorted(xs, key=key)
    return xs[(len(xs) - 1) // 2] if xs else None
# A target run in several rounds is reported by its median round: by req/cpu-s in the closed
# loop, by p99 in the open loop and the streams.
rows = {k: median(v, key=rate if k[0] == "closed" else (lambda r: r["p99_us"]))
        for k, v in runs.items()}
def fmt(x, spec="{:.1f}"):
    return "n/a" if x is None else spec.format(x)
def ratio(a, b):
    return None if a is None or b is None or b <= 0 else a / b
def joined(xs, spec):
    return " / ".join(fmt(x, spec) for x in xs)
def by_round(mode, label, base, f):
    # Round i of a target against round i of its baseline: the rounds alternate, so the two ran
    # within a minute of each other, and the machine's speed moved by as much as 1.7x between
    # rounds of one run.
    return [f(a, b) for a, b in zip(runs.get((mode, label), []), runs.get((mode, base), []))]
def added_by_round(mode, label, key):
    base = "sim-direct" if label.startswith("sim-") else "direct"
    return by_round(mode, label, base, lambda a, b: a[key] - b[key])
def added(mode, label, key):
    return median(added_by_round(mode, label, key))
def tput_by_round(label):
    return by_round("closed", label, "nginx", lambda a, b: ratio(rate(a), rate(b)))

print()
print(f"load average before {sys.argv[2]}, after {sys.argv[3]}")
print()
print("Non-streaming chat, open loop (latency in µs, from the scheduled send time)")
print("(each target's median round by p99; +p50 and +p99 the medians of the rounds' differences")
print(" from the direct run of the same round)")
print(f"{'target':<16}{'req/s':>9}{'err':>6}{'p50':>9}{'p90':>9}{'p99':>9}{'p99.9':>9}{'max':>9}{'+p50':>9}{'+p99':>9}{'cpu µs/req':>12}  +p99 by round")
for prefix in ("", "sim-"):
    base = prefix + "direct"
    for label in (base, prefix + "relay", prefix + "nginx", prefix + "infertel", prefix + "infertel+store", prefix + "infertel+otlp"):
        r = rows.get(("fixed", label))
        if r is None:
            continue
        add50 = added("fixed", label, "p50_us") if label != base else None
        add99 = added("fixed", label, "p99_us") if label != base else None
        cpu = r["proxy_cpu_us_per_item"] if label != base else None
        rounds = joined(added_by_round("fixed", label, "p99_us"), "{:.0f}") if label != base else ""
        print(f"{label:<16}{r['per_s']:>9.0f}{r['errors']:>6.0f}{r['p50_us']:>9.1f}{r['p90_us']:>9.1f}{r['p99_us']:>9.1f}"
              f"{r['p999_us']:>9.1f}{r['max_us']:>9.1f}{fmt(add50):>9}{fmt(add99):>9}{fmt(cpu):>12}  {rounds}")
print()
print("Closed loop (maximum throughput; proxy CPU = its CPU seconds over the window;")
print("the median of the alternating rounds, by req/cpu-s, or req/s for direct)")
print(f"{'target':<16}{'req/s':>9}{'err':>6}{'p50':>9}{'p99':>9}{'proxy cpu':>11}{'req/cpu-s':>11}{'loadgen cpu':>13}  rounds")
for label in ("direct", "nginx", "infertel", "infertel+store", "infertel+otlp"):
    r = rows.get(("closed", label))
    if r is None:
        continue
    per_core = r["count"] / r["proxy_cpu_s"] if r["proxy_cpu_s"] > 0 else None
    rounds = " / ".join(f"{rate(x):.0f}" for x in runs[("closed", label)])
    print(f"{label:<16}{r['per_s']:>9.0f}{r['errors']:>6.0f}{r['p50_us']:>9.1f}{r['p99_us']:>9.1f}"
          f"{r['proxy_cpu_s']/r['seconds']:>10.0%} {fmt(per_core, '{:.0f}'):>10}{r['loadgen_cpu_s']/r['seconds']:>12.0%}  {rounds}")
for label in ("infertel", "infertel+store", "infertel+otlp"):
    if tput_by_round(label):
        print(f"{label:<16}req/cpu-s against nginx's in the same round: {joined(tput_by_round(label), '{:.2f}x')}")
print()
print("Streaming (per-event latency in µs: receive time − upstream send time)")
print("(each target's median round by p99; +p50 and +p99 the medians of the rounds' differences)")
print(f"{'target':<16}{'events/s':>9}{'err':>6}{'p50':>9}{'p90':>9}{'p99':>9}{'p99.9':>9}{'+p50':>9}{'+p99':>9}{'cpu µs/event':>14}  +p99 by round")
for label in ("direct", "relay", "nginx", "infertel", "infertel+store", "infertel+otlp"):
    r = rows.get(("stream", label))
    if r is None:
        continue
    add50 = added("stream", label, "p50_us") if label != "direct" else None
    add99 = added("stream", label, "p99_us") if label != "direct" else None
    cpu = r["proxy_cpu_us_per_item"] if label != "direct" else None
    rounds = joined(added_by_round("stream", label, "p99_us"), "{:.0f}") if label != "direct" else ""
    print(f"{label:<16}{r['per_s']:>9.0f}{r['errors']:>6.0f}{r['p50_us']:>9.1f}{r['p90_us']:>9.1f}{r['p99_us']:>9.1f}"
          f"{r['p999_us']:>9.1f}{fmt(add50):>9}{fmt(add99):>9}{fmt(cpu):>14}  {rounds}")

print()
print("Issue 7 targets (each a ratio against nginx or a bound, same run)")
print(f"{'target':<58}{'infertel':>12}{'+store':>12}{'+otlp':>12}")
def line(name, f):
    vals = [f(l) for l in ("infertel", "infertel+store", "infertel+otlp")]
    print(f"{name:<58}" + "".join(f"{v:>12}" for v in vals))
def p99_ratio(l):
    x = ratio(added("fixed", l, "p99_us"), added("fixed", "nginx", "p99_us"))
    return "n/a" if x is None else f"{x:.2f}x {'ok' if x <= 1.5 else 'MISS'}"
def tput_ratio(l):
    # By round: the medians of the two targets taken apart could come from rounds minutes apart.
    x = median([r for r in tput_by_round(l) if r is not None])
    return "n/a" if x is None else f"{x:.2f}x {'ok' if x >= 0.5 else 'MISS'}"
def stream_p99(l):
    a = added("stream", l, "p99_us")
    return "n/a" if a is None else f"{a:.0f}us {'ok' if a <= 50 else 'MISS'}"
line("added p99, non-streaming: <= 1.5x nginx's added p99", p99_ratio)
line("throughput per core (req/cpu-s): >= 0.5x nginx's, by round", tput_ratio)
line("streaming added per-event p99: <= 50 us", stream_p99)
n50, n99 = added("fixed", "nginx", "p50_us"), added("fixed", "nginx", "p99_us")
print(f"(nginx itself added {fmt(n50)} µs p50, {fmt(n99)} µs p99 non-streaming; "
      f"{fmt(added('stream', 'nginx', 'p99_us'))} µs p99 per event)")
# The floor: a relay that only copies bytes. When it alone adds more than the 50 µs per event,
# the bound is below what one loopback hop and one wake-up cost here, for any proxy.
r50, r99 = added("fixed", "relay", "p50_us"), added("fixed", "relay", "p99_us")
rs99 = added("stream", "relay", "p99_us")
print(f"(a plain TCP relay, the floor, added {fmt(r50)} µs p50, {fmt(r99)} µs p99 non-streaming; "
      f"{fmt(rs99)} µs p99 per event{', above the 50 µs bound by itself' if rs99 is not None and rs99 > 50 else ''}; "
      f"by round {joined(added_by_round('stream', 'relay', 'p99_us'), '{:.0f}')})")
# Every request through the OTLP agent is one entry span, at the sink or counted as dropped. The
# loadgen's `answered` counts the requests answered in full at any time, warm-up included, in
# every mode (a stream is one request, however many events its `count` has), so the two must
# add up to at least their sum; requests that failed add spans the sum does not count.
sunk, dropped = int(sys.argv[4]), int(sys.argv[5])
sent = sum(int(r["answered"]) for (mode, label), rs in runs.items() if label == "infertel+otlp" for r in rs)
print(f"(+otlp: the sink received {sunk} entry spans and the agent counted {dropped} dropped, for {sent} "
      f"requests answered{'' if sunk + dropped >= sent else ': SPANS MISSING'})")
PY
