#!/usr/bin/env bash
# Builds the libFuzzer targets of tests/fuzz/ with clang (ASan+UBSan) in build-fuzz/ and runs
# each for SECONDS (default 60), from corpora seeded with the repository's fixtures and the
# seeds in tests/fuzz/corpus/. Prints one line per target (runs, seconds, runs per second) and
# fails if any target finds a crash, a leak or a broken invariant (the input is kept in
# build-fuzz/artifacts/ and named in the output: make it a unit test).
#   scripts/fuzz.sh [SECONDS] [TARGET…]      `make fuzz` = scripts/fuzz.sh 600
# FUZZ_RUNS=N stops each target after N executions (or SECONDS, whichever comes first);
# FUZZ_MAX_LEN overrides every target's input size limit (see max_len below).
set -euo pipefail
cd "$(dirname "$0")/.."
SECONDS_EACH=${1:-60}
shift || true
OUT=build-fuzz
mkdir -p "$OUT"
cmake -S tests/fuzz -B "$OUT" -G Ninja -DCMAKE_CXX_COMPILER=clang++ -DCMAKE_BUILD_TYPE=None \
  ${FUZZ_CMAKE_FLAGS:-} >"$OUT/configure.log" 2>&1 || { cat "$OUT/configure.log"; exit 1; }
cmake --build "$OUT" -j "$(nproc)" >"$OUT/build.log" 2>&1 || { tail -50 "$OUT/build.log"; exit 1; }

targets=("$@")
if [ "${#targets[@]}" -eq 0 ]; then
  mapfile -t targets < <(find "$OUT" -maxdepth 1 -type f -name '*_fuzz' -executable -printf '%f\n' | sort)
fi

# seed DIR PREFIX FILE…: copies each file into DIR with PREFIX (bytes that pick a target's
# mode) in front, so the fixtures reach the parser the way the target reads its input.
seed() {
  local dir=$1 prefix=$2
  shift 2
  local f
  for f in "$@"; do
    [ -f "$f" ] || continue
    { printf "$prefix"; cat "$f"; } >"$dir/seed-$(basename "$f")"
  done
}

# seed_pieces DIR PREFIX MAX START FILE…: like seed, but cuts each file into pieces of whole
# records (a record begins at a line matching the regex START) of at most MAX bytes each, so a
# long fixture seeds many inputs of the size the target explores rather than one input that
# -max_len cuts to its first bytes.
seed_pieces() {
  local dir=$1 prefix=$2 max=$3 start=$4
  shift 4
  local f piece
  for f in "$@"; do
    [ -f "$f" ] || continue
    LC_ALL=C awk -v max="$max" -v start="$start" -v out="$dir/.piece-$(basename "$f")" '
      function flush() { if (buf != "") { n++; printf "%s", buf > (out "-" n); close(out "-" n) }
                         buf = "" }
      function take() { if (length(buf) + length(rec) > max) flush(); buf = buf rec; rec = "" }
      $0 ~ start && rec != "" { take() }
      { rec = rec $0 "\n" }
      END { take(); flush() }' "$f"
    for piece in "$dir"/.piece-"$(basename "$f")"-*; do
      { printf "$prefix"; cat "$piece"; } >"$dir/seed-${piece##*/.piece-}"
      rm -f "$piece"
    done
  done
}

# max_len TARGET: the input size limit. A scrape or an event stream is a sequence of records
# (families, events) read one at a time; what one record leaves for the next (families seen,
# a tool call's arguments, the usage) shows within a few records, so inputs past 2 KiB only
# repeat records and cost time in proportion (8 KiB scrapes ran at a tenth of the rate).
max_len() {
  case "$1" in
    prometheus_text_fuzz | sse_stream_fuzz) echo 2048 ;;
    # Every bound of a console document but its size (64 KiB, a unit test's) is reached in
    # under 1 KiB: 17 levels of nesting in about 100 bytes, a billion laughs in 871.
    console_document_fuzz) echo 2048 ;;
    *) echo 8192 ;;
  esac
}

# A 16 MiB quarantine instead of 256: an input's frees are still held long after the input is
# done, so a use after free is still caught, but the allocator reuses warm pages instead of
# faulting in new ones (a third of the time of the yaml-cpp target went to page faults).
export ASAN_OPTIONS=${ASAN_OPTIONS:-quarantine_size_mb=16}

mkdir -p "$OUT/artifacts"
status=0
for t in "${targets[@]}"; do
  corpus="$OUT/corpus/$t"
  mkdir -p "$corpus"
  [ -d "tests/fuzz/corpus/$t" ] && cp -n tests/fuzz/corpus/"$t"/* "$corpus"/ 2>/dev/null || true
  case "$t" in
    prometheus_text_fuzz) seed_pieces "$corpus" "" 1024 '^# HELP' tests/fixtures/*metrics*.txt ;;
    otlp_json_fuzz) seed "$corpus" '\x00' tests/fixtures/*otlp*.json ;;
    sse_stream_fuzz)
      seed_pieces "$corpus" '\x01\x07' 1536 '^data:' tests/fixtures/*sse*.txt
      seed_pieces "$corpus" '\x41\x20' 1536 '^data:' tests/fixtures/*sse*.txt ;;
  esac
  log="$OUT/$t.log"
  if "$OUT/$t" -max_total_time="$SECONDS_EACH" -max_len="${FUZZ_MAX_LEN:-$(max_len "$t")}" \
    -runs="${FUZZ_RUNS:--1}" -timeout=30 -rss_limit_mb=2048 \
    -artifact_prefix="$OUT/artifacts/$t-" -print_final_stats=1 "$corpus" >"$log" 2>&1; then
    runs=$(grep -o 'Done [0-9]* runs' "$log" | grep -o '[0-9]*' | tail -1)
    secs=$(grep -o 'in [0-9]* second' "$log" | grep -o '[0-9]*' | tail -1)
    printf 'fuzz %-22s %12s runs in %5s s (%s/s), no finding\n' "$t" "${runs:-?}" "${secs:-?}" \
      "$(( ${runs:-0} / (${secs:-1} > 0 ? ${secs:-1} : 1) ))"
  else
    status=1
    echo "fuzz $t: FINDING (log $log):"
    grep -E 'ERROR|SUMMARY|Test unit written|abort' "$log" | head -10
  fi
done
exit $status
