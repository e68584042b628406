# shellcheck shell=bash
# bench/lib.sh — shell helpers shared by the bench scripts (sourced, not run).
#
# bench_init NAME TAG   message prefix NAME; a fresh temp dir $TMP (/tmp/infertel-TAG.XXXXXX);
#                       $PIDS, whose processes are stopped (and $TMP removed) on exit,
#                       Ctrl-C or SIGTERM. Add every started process: PIDS+=($!).
#                       BENCH_KEEP_TMP=1 keeps $TMP (the processes' logs) for a look.
# use_build DIR NAME TOOL...  the build's binaries as INFERTEL, LOADGEN, OTB.
# The rest needs no state beyond that: waiting for ports and log lines, /proc readings,
# the agent's optional flags, nginx from bench/nginx.conf.template.

# use_build DIR NAME TOOL...: the binaries of build directory DIR as INFERTEL, LOADGEN and OTB
# (infertel, infertel-loadgen, infertel-otlp-bench) and BUILD as its absolute path; exits with
# a message prefixed NAME when one of the TOOLs the script needs is not built.
use_build() {
  BUILD=$(cd "$1" && pwd)
  local name=$2 t
  shift 2
  INFERTEL=$BUILD/infertel
  LOADGEN=$BUILD/infertel-loadgen
  OTB=$BUILD/infertel-otlp-bench
  for t in "$@"; do
    [[ -x $BUILD/$t ]] || { echo "$name: $BUILD/$t not built (make benches)" >&2; exit 1; }
  done
}

bench_init() {
  BENCH_NAME=$1
  TMP=$(mktemp -d "/tmp/infertel-$2.XXXXXX")
  PIDS=()
  trap bench_cleanup EXIT
  trap 'exit 130' INT TERM
}

bench_cleanup() {
  local p
  for p in "${PIDS[@]}"; do kill "$p" 2>/dev/null || true; done
  for p in "${PIDS[@]}"; do wait "$p" 2>/dev/null || true; done
  if [[ -n ${BENCH_KEEP_TMP:-} ]]; then
    echo "$BENCH_NAME: logs kept in $TMP" >&2
  else
    rm -rf "$TMP"
  fi
}

bench_die() {
  echo "$BENCH_NAME: $*" >&2
  exit 1
}

wait_port() {  # wait_port PORT: until something accepts on 127.0.0.1:PORT (5 s at most)
  local i
  for i in $(seq 1 100); do
    if (exec 3<>"/dev/tcp/127.0.0.1/$1") 2>/dev/null; then return 0; fi
    sleep 0.05
  done
  echo "$BENCH_NAME: nothing listens on port $1" >&2
  return 1
}

wait_line() {  # wait_line FILE REGEX: prints the first matching line (10 s at most)
  local i line
  for i in $(seq 1 200); do
    line=$(grep -m1 -E "$2" "$1" 2>/dev/null || true)
    if [[ -n $line ]]; then echo "$line"; return 0; fi
    sleep 0.05
  done
  echo "$BENCH_NAME: no line /$2/ in $1:" >&2
  cat "$1" >&2
  return 1
}

port_of() { sed -E 's#.*http://[^:]+:([0-9]+).*#\1#'; }  # the port of the first http:// URL

stop_pid() {  # stop_pid PID: SIGTERM, wait, and forget it (so cleanup never signals a reused pid)
  kill "$1" 2>/dev/null || true
  wait "$1" 2>/dev/null || true
  local p rest=()
  for p in "${PIDS[@]}"; do [[ $p == "$1" ]] || rest+=("$p"); done
  PIDS=("${rest[@]}")
}

# start_sink TRANSPORT LOG: infertel-otlp-bench's OTLP sink (grpc or http) on the load's core, as
# a collector would be; its port in SINK_PORT.
start_sink() {
  "${PIN_LG[@]}" "$OTB" sink --transport "$1" --listen 127.0.0.1:0 --interval-ms 250 >"$2" 2>&1 &
  PIDS+=($!)
  local line
  line=$(wait_line "$2" '^LISTEN port=')
  SINK_PORT=${line#LISTEN port=}
}
sink_count() {  # sink_count LOG: the last cumulative count of spans the sink printed
  awk '/^SINK / { for (i = 1; i <= NF; i++) if ($i ~ /^spans=/) { sub("spans=", "", $i); n = $i } } END { print n + 0 }' "$1"
}
load_avg() { cut -d' ' -f1-3 /proc/loadavg; }
# cpu_ticks PID[,PID...]: utime + stime of the processes, summed.
cpu_ticks() {
  local p n=0
  for p in ${1//,/ }; do
    n=$((n + $(awk '{ sub(/^.*\) /, ""); print $12 + $13 }' "/proc/$p/stat")))
  done
  echo "$n"
}
# thread_ticks PID: one line per thread of PID, "name ticks" (utime + stime; the agent names
# its threads: gateway-io-0, assembler, traces:otlp_grpc, ...).
thread_ticks() {
  local t
  for t in /proc/"$1"/task/*; do
    printf '%s %s\n' "$(tr ' ' '_' <"$t/comm")" "$(awk '{ sub(/^.*\) /, ""); print $12 + $13 }' "$t/stat")"
  done 2>/dev/null
}
# thread_share BEFORE AFTER: each thread name's share of the CPU between two thread_ticks
# snapshots (threads of one name summed), largest first: "assembler=31% traces:otlp_grpc=28% ..."
thread_share() {
  awk 'NR == FNR { b[$1] += $2; next } { a[$1] += $2 }
       END { for (n in a) { d[n] = a[n] - b[n]; t += d[n] }
             for (n in d) if (d[n] > 0 && t > 0) printf "%s=%.0f%%\n", n, 100 * d[n] / t }' "$1" "$2" |
    sort -t= -k2 -rn | tr '\n' ' '
}
# thread_us_per_item BEFORE AFTER ITEMS: each thread name's CPU between two thread_ticks
# snapshots in microseconds per item, largest first: "assembler=2.10 traces:otlp_grpc=2.75 ..."
thread_us_per_item() {
  awk -v n="$3" -v k="$(getconf CLK_TCK)" 'NR == FNR { b[$1] += $2; next } { a[$1] += $2 }
       END { for (t in a) { d = a[t] - b[t]; if (d > 0 && n > 0) printf "%s=%.2f\n", t, 1e6 * d / k / n } }' "$1" "$2" |
    sort -t= -k2 -rn | tr '\n' ' '
}
rss_kib() { awk '/^'"$2"':/ { print $2 }' "/proc/$1/status"; }  # rss_kib PID VmRSS|VmHWM

# result_field FILE KEY [PREFIX]: the value of KEY=... on the last line starting with PREFIX
# (default RESULT).
result_field() {
  awk -v key="$2" -v pre="${3:-RESULT}" 'index($0, pre) == 1 {
      for (i = 1; i <= NF; i++) if (index($i, key "=") == 1) v = substr($i, length(key) + 2)
    } END { print v }' "$1"
}

metric() {  # metric ADMIN_PORT NAME: sum of the trace samples of counter NAME (with or without _total)
  curl -s "http://127.0.0.1:$1/metrics" |
    awk -v re="^$2(_total)?[ {]" '$0 ~ re && ($0 !~ /signal="/ || $0 ~ /signal="traces"/) { s += $NF } END { printf "%.0f", s }'
}

# pin_cores: with two cores or more, the load generator (and the upstream it serves) on core
# $BENCH_LOADGEN_CPU (default 0) and the proxy under test on $BENCH_PROXY_CPU (default 1), so
# that "per core" means one core. Sets LG_CPU, PROXY_CPU and the command prefixes PIN_LG and
# PIN_PROXY (empty on one core).
pin_cores() {
  if (($(nproc) >= 2)); then
    LG_CPU=${BENCH_LOADGEN_CPU:-0}
    PROXY_CPU=${BENCH_PROXY_CPU:-1}
    PIN_LG=(taskset -c "$LG_CPU")
    PIN_PROXY=(taskset -c "$PROXY_CPU")
  else
    LG_CPU="" PROXY_CPU=""
    PIN_LG=()
    PIN_PROXY=()
  fi
}

# start_agent NAME UPSTREAM_PORT ARGS...: `$INFERTEL agent` for vLLM in front of
# 127.0.0.1:UPSTREAM_PORT, started with ${PIN_PROXY[@]}, with the caller's ${AGENT_ARGS[@]}
# (may be empty), ${AGENT_EXTRA[@]} (agent_compat_flags) and ARGS; its log in $TMP/NAME.log.
# Sets AGENT_PORT and AGENT_PID once the gateway accepts.
start_agent() {
  local name=$1 up=$2
  shift 2
  "${PIN_PROXY[@]}" "$INFERTEL" agent --engine "${AGENT_ENGINE:-vllm}" --upstream "http://127.0.0.1:$up" \
    --listen 127.0.0.1:0 --admin 127.0.0.1:0 "${AGENT_ARGS[@]}" "${AGENT_EXTRA[@]}" "$@" \
    >"$TMP/$name.log" 2>&1 &
  AGENT_PID=$!
  PIDS+=("$AGENT_PID")
  AGENT_PORT=$(wait_line "$TMP/$name.log" 'gateway listening on' | port_of)
  wait_port "$AGENT_PORT"
}

# agent_compat_flags INFERTEL: sets AGENT_EXTRA to the flags newer agents have and the
# benchmarks want: the OTLP receivers on OS-chosen loopback ports (on by default in the
# product; with a receiver the gateway keeps a join record per request for the engine's
# spans, which is part of the measured cost) and no version probe of the upstream.
agent_compat_flags() {
  local help
  help=$("$1" agent --help 2>&1 || true)
  AGENT_EXTRA=()
  grep -q -- '--receiver-grpc' <<<"$help" && AGENT_EXTRA+=(--receiver-grpc 127.0.0.1:0)
  grep -q -- '--receiver-http' <<<"$help" && AGENT_EXTRA+=(--receiver-http 127.0.0.1:0)
  grep -q -- '--engine-version' <<<"$help" && AGENT_EXTRA+=(--engine-version v1)
  return 0
}

# start_nginx NAME UPSTREAM_PORT: nginx from bench/nginx.conf.template in $TMP/NAME, started
# with ${PIN_PROXY[@]} (may be empty); needs $ROOT and $LOADGEN (for a free port). With
# NGINX_WORKER_CONNECTIONS set, the config is a variant with that many worker_connections and a
# matching worker_rlimit_nofile; with NGINX_WORKER_PROCESSES set, that many workers instead of
# one. Sets NGINX_PORT, NGINX_MASTER, NGINX_WORKER (the first worker) and NGINX_WORKERS (all,
# comma-separated).
start_nginx() {
  local dir=$TMP/$1
  mkdir -p "$dir"
  NGINX_PORT=$("$LOADGEN" freeport)
  local variant=()
  if [[ -n ${NGINX_WORKER_CONNECTIONS:-} ]]; then
    local nofile=$((NGINX_WORKER_CONNECTIONS + 256)) hard
    hard=$(ulimit -Hn)
    [[ $hard != unlimited ]] && ((nofile > hard)) && nofile=$hard
    variant=(-e "s#worker_connections [0-9]*;#worker_connections $NGINX_WORKER_CONNECTIONS;#"
      -e "s#^worker_processes 1;#worker_processes 1;\nworker_rlimit_nofile $nofile;#")
  fi
  if [[ -n ${NGINX_WORKER_PROCESSES:-} ]]; then
    variant+=(-e "s#^worker_processes 1;#worker_processes $NGINX_WORKER_PROCESSES;#")
  fi
  sed -e "s#@PREFIX@#$dir#g" -e "s#@LISTEN_PORT@#$NGINX_PORT#g" -e "s#@UPSTREAM_PORT@#$2#g" \
    "${variant[@]}" "$ROOT/bench/nginx.conf.template" >"$dir/nginx.conf"
  "${PIN_PROXY[@]}" nginx -c "$dir/nginx.conf" -p "$dir/" -e "$dir/error.log" \
    >"$dir/stdout" 2>&1 &
  NGINX_MASTER=$!
  PIDS+=("$NGINX_MASTER")
  wait_port "$NGINX_PORT"
  local want=${NGINX_WORKER_PROCESSES:-1} i
  for ((i = 0; i < 50; i++)); do
    (($(pgrep -P "$NGINX_MASTER" | wc -l) >= want)) && break
    sleep 0.1
  done
  NGINX_WORKERS=$(pgrep -P "$NGINX_MASTER" | paste -sd, -)
  NGINX_WORKER=${NGINX_WORKERS%%,*}
  if [[ -z $NGINX_WORKER ]]; then
    cat "$dir/error.log" >&2
    bench_die "nginx worker not found"
  fi
}
