#!/usr/bin/env bash
# The engine contract's rule (docs/architecture.md, "Engines"): outside src/engines/ and
# src/sim/, no code names an engine: what is engine-specific is asked of the engine's profile
# through the registry. Comments may name engines; code (identifiers, strings) may not.
# That includes the tables of config/ and core/: an engine's config keys and metric families
# are rows in its own folder (NAME_keys.cc, NAME_families.cc), which the registry adds to those
# tables at start-up. Files not yet moved behind the contract would be listed below, file by
# file (none is left): a new file that names an engine fails, and so does a listed file that
# no longer does (remove it from the list, so that the list says what is left to do).
set -euo pipefail
cd "$(dirname "$0")/.."

# Each still names an engine in code (issue: the engine contract). Empty: every file is behind
# the contract.
exceptions=(
)

# The code of a file without its comments: // to the end of a line (not the // of a URL) and
# /* … */ on one line.
code_of() {
  sed -E -e 's#/\*([^*]|\*+[^*/])*\*+/##g' -e 's#(^|[[:space:]])//.*$##' "$1"
}

# listed WORD LIST…: whether WORD is one of LIST. (Not `printf | grep -q` nor `code_of |
# grep >/dev/null`: grep leaves at the first match, the writer may then die of SIGPIPE, and
# under pipefail the pipeline fails now and then although it matched.)
listed() {
  local word=$1 x
  shift
  for x in "$@"; do [ "$x" = "$word" ] && return 0; done
  return 1
}

status=0
found=()
while IFS= read -r file; do
  code=$(code_of "$file")
  if grep -iqE 'vllm|sglang' <<<"$code"; then
    found+=("$file")
    if ! listed "$file" "${exceptions[@]}"; then
      echo "engine names: $file names an engine in code; ask the engine's profile instead:"
      grep -niE 'vllm|sglang' <<<"$code" | sed -n '1,5s/^/  /p'
      status=1
    fi
  fi
done < <(find src -type f \( -name '*.h' -o -name '*.cc' \) -not -path 'src/engines/*' \
  -not -path 'src/sim/*' | sort)
for ex in "${exceptions[@]}"; do
  if ! listed "$ex" "${found[@]}"; then
    echo "engine names: $ex no longer names an engine: remove it from tests/engine_names.sh"
    status=1
  fi
done
[ "$status" -eq 0 ] || exit 1
if [ "${#exceptions[@]}" -eq 0 ]; then
  echo "engine names: no code outside src/engines and src/sim names an engine"
else
  echo "engine names: no code outside src/engines and src/sim names an engine, but ${#exceptions[@]} listed files"
fi
