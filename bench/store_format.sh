#!/usr/bin/env bash
# bench/store_format.sh BUILD_DIR — the embedded store's format in one run (docs/store.md,
# "Figures"): bytes per span on disk for the demo's traffic (`infertel demo --duration 30`),
# against the single-file format's 870 bytes per span measured on the same traffic before
# (issue 38; that format is no longer built), the write rate on one core, and the two query
# times with $BENCH_SF_SPANS spans in the store (default 10,000,000; about 3 minutes).
#
# Needs: infertel and store_format_bench built in BUILD_DIR.
set -euo pipefail
cd "$(dirname "$0")/.."
source bench/lib.sh
use_build "${1:-build}" "store format bench" infertel
BENCH=$BUILD/bench/store_format_bench
[[ -x $BENCH ]] || { echo "store format bench: $BENCH not built (make benches)" >&2; exit 1; }
SPANS=${BENCH_SF_SPANS:-10000000}
OLD_BYTES_PER_SPAN=870  # the single-file store, demo traffic (issue 38)
bench_init "store format bench" storefmt

echo "store format bench: $(date -u '+%Y-%m-%d %H:%M UTC'), $(nproc) cores, load average $(load_avg)"

# 1. The demo's traffic: files in the store directory over the spans stored.
nice "$INFERTEL" demo --duration 30 --store "$TMP/demo" >"$TMP/demo.log" 2>&1 ||
  bench_die "demo failed: $(tail -5 "$TMP/demo.log")"
spans=$("$INFERTEL" spans --store "$TMP/demo" --json | wc -l)
bytes=$(du -sb --exclude=lock --exclude=retention "$TMP/demo" | cut -f1)
per_span=$(awk -v b="$bytes" -v s="$spans" 'BEGIN { printf "%.1f", b / s }')
echo "demo: $spans spans (with their logs and metrics) in $bytes bytes: $per_span bytes per span;" \
  "the single-file format: $OLD_BYTES_PER_SPAN; $(awk -v o=$OLD_BYTES_PER_SPAN -v n="$per_span" 'BEGIN { printf "%.1f", o / n }')x fewer"

# 2. and 3. Writes on one thread, then the queries, with $SPANS spans in the store.
"$BENCH" --dir "$TMP/big" --spans "$SPANS" --max-mb 8192 | tee "$TMP/bench.log"
r() { awk -F= -v k="$1" '$1 == "RESULT " k { print $2 }' "$TMP/bench.log"; }
echo "write: $(r write_spans_per_s) spans/s wall, $(r write_spans_per_cpu_s) per CPU second (target 100000)"
echo "trace by id: mean $(r trace_by_id_mean_ms) ms, max $(r trace_by_id_max_ms) ms with $(r stored_spans) spans (target 10)"
echo "page of 50 traces: mean $(r page_mean_ms) ms, max $(r page_max_ms) ms (target 200)"
