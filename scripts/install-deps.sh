#!/usr/bin/env bash
# Installs everything the build, the tests, the demo and the benchmarks need on Debian 12:
# Debian packages with apt, npm packages from the committed package-lock.json.
# Idempotent: packages already present are not installed again.
set -euo pipefail
cd "$(dirname "$0")/.."

APT_PACKAGES=(
  build-essential cmake ninja-build pkg-config git ca-certificates
  libboost-dev libboost-system-dev
  libgrpc++-dev protobuf-compiler-grpc libnghttp2-dev libprotobuf-dev protobuf-compiler libabsl-dev
  libsimdjson-dev libyaml-cpp-dev libsqlite3-dev sqlite3
  libspdlog-dev libfmt-dev libcli11-dev zlib1g-dev libzstd-dev
  libgtest-dev libgmock-dev googletest libbenchmark-dev libjemalloc-dev
  prometheus nginx-light wrk clang-format curl jq
  python3-yaml systemd
  clang libclang-rt-14-dev lld
  nodejs npm
  chromium
)

missing=()
for p in "${APT_PACKAGES[@]}"; do
  if [ "$p" = nodejs ] || [ "$p" = npm ]; then
    # A machine may carry a newer Node.js outside Debian's packages; use it when present.
    command -v "${p/nodejs/node}" >/dev/null 2>&1 && continue
  fi
  dpkg-query -W -f='${Status}' "$p" 2>/dev/null | grep -q "install ok installed" || missing+=("$p")
done
if [ "${#missing[@]}" -gt 0 ]; then
  echo "install-deps: apt-get install ${missing[*]}"
  SUDO=""
  [ "$(id -u)" -eq 0 ] || SUDO="sudo"
  $SUDO apt-get update -qq
  DEBIAN_FRONTEND=noninteractive $SUDO apt-get install -y -qq --no-install-recommends "${missing[@]}" >/dev/null
  # The Debian nginx and prometheus packages start system services; the tests and
  # benchmarks run their own instances on loopback ports, so stop the system ones.
  for svc in nginx prometheus prometheus-node-exporter; do
    $SUDO systemctl disable --now "$svc" >/dev/null 2>&1 || true
  done
fi

# npm packages: exactly what package-lock.json pins.
if [ ! -f node_modules/.package-lock.json ] || ! cmp -s package-lock.json node_modules/.infertel-lock; then
  echo "install-deps: npm ci"
  npm ci --no-audit --no-fund --loglevel=error
  cp package-lock.json node_modules/.infertel-lock
fi
