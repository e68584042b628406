#!/usr/bin/env bash
# Builds the libFuzzer targets of tests/fuzz/ with clang (ASan+UBSan) in build-fuzz/ and runs
# each for SECONDS (default 60), from corpora seeded with the repository's fixtures and the
# seeds in tests/fuzz/corpus/. Prints one line per target (runs, seconds, runs per second) and
# fails if any target finds a crash, a leak or a broken invariant (the input is kept in
# build-fuzz/artifacts/ and named in the output: make it a unit test).
#   scripts/fuzz.sh [SECONDS] [TARGET…]      `make fuzz` = scripts/fuzz.sh 600
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

mkdir -p "$OUT/artifacts"
status=0
for t in "${targets[@]}"; do
  corpus="$OUT/corpus/$t"
  mkdir -p "$corpus"
  [ -d "tests/fuzz/corpus/$t" ] && cp -n tests/fuzz/corpus/"$t"/* "$corpus"/ 2>/dev/null || true
  case "$t" in
    prometheus_text_fuzz) seed "$corpus" "" tests/fixtures/*metrics*.txt ;;
    otlp_json_fuzz) seed "$corpus" '\x00' tests/fixtures/*otlp*.json ;;
    sse_stream_fuzz)
      seed "$corpus" '\x01\x07' tests/fixtures/*sse*.txt
      seed "$corpus" '\x41\x20' tests/fixtures/*sse*.txt ;;
  esac
  log="$OUT/$t.log"
  if "$OUT/$t" -max_total_time="$SECONDS_EACH" -max_len="${FUZZ_MAX_LEN:-8192}" -timeout=30 -rss_limit_mb=2048 \
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
