#!/usr/bin/env bash
# `make test`: every test. Unit tests (ctest), then the end-to-end tests with real peers
# (node's test runner driving the official openai client, OTLP decoded with the official
# protos, Prometheus tools), every fuzz target for a few seconds, then the demo in its short mode.
set -euo pipefail
BUILD_DIR=${1:-build}
cd "$(dirname "$0")/.."
status=0
echo "== unit tests"
(cd "$BUILD_DIR" && ctest --output-on-failure -j "$(nproc)") || status=1
echo "== end-to-end tests"
INFERTEL_BIN="$(pwd)/$BUILD_DIR/infertel" node --test --test-concurrency=1 tests/e2e/ || status=1
echo "== fuzz targets (a few seconds each, so that they keep building and their seeds pass)"
bash scripts/fuzz.sh 3 || status=1
echo "== demo (short)"
"./$BUILD_DIR/infertel" demo --duration 5 --store "$(mktemp -d)/demo.db" || status=1
exit $status
