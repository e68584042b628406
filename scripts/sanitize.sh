#!/usr/bin/env bash
# The tests under sanitizers, in a build of their own (no jemalloc: the sanitizers bring their
# own allocator).
#   scripts/sanitize.sh address   ASan+UBSan: every unit test, then every end-to-end test
#   scripts/sanitize.sh thread    TSan: the unit tests of the threaded parts (pipeline,
#                                 receiver, gateway, metrics, console, export, engines, http),
#                                 building only those test binaries; TSAN_AREAS="pipeline http"
#                                 picks some of them
set -euo pipefail
cd "$(dirname "$0")/.."
kind=${1:-address}
# The areas whose code runs on more than one thread (the assembler, the admin server and the
# connection guard included): their unit tests are what TSan runs.
thread_areas=${TSAN_AREAS:-pipeline receiver gateway metrics console export engines http}
case "$kind" in
  address) OUT=build-asan; FLAGS="-fsanitize=address,undefined -fno-sanitize-recover=undefined" ;;
  thread) OUT=build-tsan; FLAGS="-fsanitize=thread" ;;
  *) echo "usage: $0 address|thread" >&2; exit 2 ;;
esac
launcher=$(command -v ccache >/dev/null && echo -DCMAKE_CXX_COMPILER_LAUNCHER=ccache || true)
cmake -S . -B "$OUT" -G Ninja -DCMAKE_BUILD_TYPE=RelWithDebInfo -DINFERTEL_JEMALLOC=OFF \
  -DINFERTEL_BUILD_BENCH=OFF -DCMAKE_CXX_FLAGS="$FLAGS -fno-omit-frame-pointer" \
  -DCMAKE_EXE_LINKER_FLAGS="$FLAGS" $launcher ${SANITIZE_CMAKE_FLAGS:-} >/dev/null
if [ "$kind" = address ]; then
  cmake --build "$OUT" -j "${JOBS:-$(nproc)}"
else
  cmake --build "$OUT" -j "${JOBS:-$(nproc)}" --target $(printf 'unit_%s ' $thread_areas)
fi
export ASAN_OPTIONS=${ASAN_OPTIONS:-detect_leaks=1:abort_on_error=1:strict_string_checks=1}
export UBSAN_OPTIONS=${UBSAN_OPTIONS:-print_stacktrace=1:halt_on_error=1}
# The suppressions cover the libraries built without TSan (gRPC's client and its Abseil), whose
# own synchronisation TSan cannot see; the file says why each is there.
export TSAN_OPTIONS=${TSAN_OPTIONS:-halt_on_error=1:second_deadlock_stack=1:suppressions=$(pwd)/scripts/tsan-suppressions.txt}
status=0
if [ "$kind" = address ]; then
  (cd "$OUT" && ctest --output-on-failure -j "$(nproc)") || status=1
  # The agents the end-to-end tests start write their reports to files: a test that never
  # looks at the agent's stderr or exit status cannot hide one.
  reports="$(pwd)/$OUT/e2e-reports"
  rm -rf "$reports" && mkdir -p "$reports"
  # Memory bounds of the tests scale (tests/e2e/lib/proc.mjs rssBoundMiB): ASan's memory is
  # about three times the program's, plus its quarantine of freed memory (64 MiB here).
  ASAN_OPTIONS="$ASAN_OPTIONS:quarantine_size_mb=64:log_path=$reports/asan" \
    UBSAN_OPTIONS="$UBSAN_OPTIONS:log_path=$reports/ubsan" \
    INFERTEL_E2E_MEMORY_FACTOR=3 INFERTEL_E2E_MEMORY_SLACK_MIB=64 \
    INFERTEL_BIN="$(pwd)/$OUT/infertel" node --test --test-concurrency=1 tests/e2e/ || status=1
  if [ -n "$(ls -A "$reports")" ]; then
    echo "sanitizer reports from the agents under test:" && head -50 "$reports"/*
    status=1
  fi
else
  for area in $thread_areas; do
    echo "== unit_$area under TSan"
    "$OUT/tests/unit_$area" --gtest_brief=1 || status=1
  done
fi
exit $status
