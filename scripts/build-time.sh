#!/usr/bin/env bash
# Where a build's time went, from Ninja's log (.ninja_log: start and end in ms of every output):
# the seconds per kind of step (generated OTLP code, each source folder's compiles, the tests',
# links), largest first, then the slowest steps. The seconds are wall time per step, so on a
# loaded machine they include waiting; compare shares, and take CPU time from `time`
# (docs/building.md has the method).
#   scripts/build-time.sh [BUILD_DIR] [SLOWEST]
set -euo pipefail
BUILD_DIR=${1:-build}
SLOWEST=${2:-15}
LOG="$BUILD_DIR/.ninja_log"
[[ -f $LOG ]] || { echo "build-time: no $LOG" >&2; exit 1; }

# The last entry of each output wins (a rebuild appends).
awk -F'\t' '!/^#/ { ms[$4] = $2 - $1 } END { for (o in ms) print ms[o] "\t" o }' "$LOG" >"$BUILD_DIR/.steps"

awk -F'\t' '
function kind(o,   m) {
  if (o ~ /\.grpc\.pb\.cc\.o$/) return "compile generated .grpc.pb.cc"
  if (o ~ /\.pb\.cc\.o$/) return "compile generated .pb.cc"
  if (o ~ /\/unit\/[a-z_]+\/.*\.o$/ || o ~ /unit_[a-z_]+\.dir\/.*\.o$/) return "compile tests/unit"
  if (o ~ /^bench\/.*\.o$/) return "compile bench"
  if (match(o, /src\/[a-z_]+\//) && o ~ /\.o$/) return "compile " substr(o, RSTART, RLENGTH - 1)
  if (o ~ /\.a$/) return "archive (.a)"
  if (o ~ /^gen\//) return "protoc"
  if (o ~ /unit_[a-z_]+$/) return "link unit tests"
  if (o ~ /^bench\// || o ~ /infertel-/) return "link bench and tools"
  if (o ~ /(^|\/)infertel$/) return "link infertel"
  return "other"
}
{ k = kind($2); s[k] += $1; n[k]++; t += $1 }
END {
  for (k in s) printf "%9.1f s %5.1f %%  %4d  %s\n", s[k] / 1000, 100 * s[k] / t, n[k], k
  printf "%9.1f s          %4d  total (sum of steps)\n", t / 1000, NR
}' "$BUILD_DIR/.steps" | sort -rn
echo "slowest steps:"
sort -rn "$BUILD_DIR/.steps" | head -n "$SLOWEST" | awk -F'\t' '{ printf "%9.1f s  %s\n", $1 / 1000, $2 }'
rm -f "$BUILD_DIR/.steps"
