#!/usr/bin/env bash
# bench/ui_trace_page.sh BUILD_DIR — the web UI's trace page over a big store (issue 41's
# target: drawn in under a second with 10 million spans stored). Fills a store with
# $BENCH_UI_SPANS spans (default 10,000,000; store_format_bench, about 3 minutes), serves it
# with `infertel ui`, opens /ui/trace/{id} in headless chromium for $BENCH_UI_RUNS traces
# (default 5) among the newest and as many among the oldest (the first written minute), and
# prints the time from the navigation to the waterfall drawn (the page's data-rendered-ms:
# performance.now() when the last row is in the document).
#
# Needs: infertel and store_format_bench built in BUILD_DIR, /usr/bin/chromium, npm ci done.
set -euo pipefail
cd "$(dirname "$0")/.."
source bench/lib.sh
use_build "${1:-build}" "ui trace page bench" infertel
BENCH=$BUILD/bench/store_format_bench
[[ -x $BENCH ]] || { echo "ui trace page bench: $BENCH not built (make benches)" >&2; exit 1; }
SPANS=${BENCH_UI_SPANS:-10000000}
RUNS=${BENCH_UI_RUNS:-5}
bench_init "ui trace page bench" uibench

echo "ui trace page bench: $(date -u '+%Y-%m-%d %H:%M UTC'), $(nproc) cores, load average $(load_avg)"
# The bench's traces start at its start and go on from there: the first minute is the oldest.
first_ms=$(($(date +%s%3N) + 60000))
nice "$BENCH" --dir "$TMP/store" --spans "$SPANS" --max-mb 8192 >"$TMP/fill.log" 2>&1 ||
  bench_die "filling the store failed: $(tail -5 "$TMP/fill.log")"
stored=$(awk -F= '$1 == "RESULT stored_spans" { print $2 }' "$TMP/fill.log")

"$INFERTEL" ui --store "$TMP/store" --listen 127.0.0.1:0 >"$TMP/ui.log" 2>&1 &
PIDS+=($!)
url=$(wait_line "$TMP/ui.log" '^infertel ui: serving' | sed -E 's#.* on (http://[0-9.]+:[0-9]+)/ui/.*#\1#')
node bench/ui_trace_page.mjs "$url" "$RUNS" | tee "$TMP/page.log"
node bench/ui_trace_page.mjs "$url" "$RUNS" "$first_ms" | tee -a "$TMP/page.log"
r() { awk -F= -v k="$1" '$1 == "RESULT " k { print $2 }' "$TMP/page.log" | tr '\n' ' '; }
echo "trace page drawn (newest traces, then oldest): median $(r median_ms)ms, max $(r max_ms)ms" \
  "with ${stored:-$SPANS} spans stored (target 1000)"
