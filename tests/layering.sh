#!/usr/bin/env bash
# The folders' "never" arrows of docs/architecture.md, checked on the includes: a file under a
# folder on the left may not include a header under the folder on the right. The arrows not
# yet honoured are listed below as exceptions, file by file; a new include that breaks a rule
# fails, and so does an exception that no longer exists (remove it from the list, so that the
# list says what is left to do).
set -euo pipefail
cd "$(dirname "$0")/.."

# from-folder  include-prefix  why
rules=(
  "src/gateway sim/ the agent never depends on the simulator"
  "src/engines sim/ the agent never depends on the simulator"
  "src/sim app/ the simulator stands alone"
  "src/engines/vllm engines/sglang/ engines are independent folders"
  "src/engines/sglang engines/vllm/ engines are independent folders"
  "src/sim/sglang sim/vllm/ engines' simulators share through sim/engine/"
  "src/sim/vllm sim/sglang/ engines' simulators share through sim/engine/"
  "src/engines gateway/ engines read the exchange record, not the proxy"
  "src/metrics gateway/ metrics read the exchange record, not the proxy"
  "src/scrape gateway/ metrics read the exchange record, not the proxy"
  "src/config gateway/ config knows no consumer"
  "src/console gateway/ config knows no consumer"
  "src/receiver export/ codecs live in otlp/, not in an exporter"
  "src/otlp export/ codecs live in otlp/, not in an exporter"
  "src/core gateway/ the base knows no proxy"
  "src/http gateway/ the base knows no proxy"
  "src/core export/ the base knows no exporter"
  "src/http export/ the base knows no exporter"
  "src/export gateway/ exporters know no proxy"
  "src/openai gateway/ the exchange record knows no proxy: the gateway fills it"
  "src/analytics gateway/ analytics read the exchange record, not the proxy"
  "src/analytics export/ analytics know no exporter"
  "src/analytics engines/ analytics take timings, not an engine's spans"
  "src/analytics sim/ the agent never depends on the simulator"
  "src/ui gateway/ the UI reads the store, not the proxy"
  "src/ui sim/ the agent never depends on the simulator"
  "src/ui engines/ the UI reads the store, not an engine"
)

# file:include, each an arrow still to be taken away (issue: the engine contract).
exceptions=(
)

# listed WORD LIST…: whether WORD is one of LIST (not `printf | grep -q`, whose writer may die
# of SIGPIPE once grep leaves at the first match, failing the pipeline under pipefail).
listed() {
  local word=$1 x
  shift
  for x in "$@"; do [ "$x" = "$word" ] && return 0; done
  return 1
}

found=()
for rule in "${rules[@]}"; do
  read -r from prefix why <<<"$rule"
  [ -d "$from" ] || continue
  while IFS= read -r hit; do
    [ -n "$hit" ] || continue
    file=${hit%%:*}
    inc=$(sed -E 's/.*#include "([^"]+)".*/\1/' <<<"${hit#*:}")
    found+=("$file:$inc")
    if ! listed "$file:$inc" "${exceptions[@]}"; then
      echo "layering: $file includes $inc, but $from may not include $prefix: $why"
      status=1
    fi
  done < <(grep -rn --include='*.h' --include='*.cc' -E "^#include \"$prefix" "$from" |
    sed -E 's/^([^:]+):[0-9]+:/\1:/')
done
for ex in "${exceptions[@]}"; do
  if ! listed "$ex" "${found[@]}"; then
    echo "layering: the exception $ex no longer exists: remove it from tests/layering.sh"
    status=1
  fi
done
if [ "${status:-0}" -ne 0 ]; then exit 1; fi
echo "layering: ${#rules[@]} rules hold, ${#exceptions[@]} known exceptions left"
