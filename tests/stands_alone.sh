#!/usr/bin/env bash
# The repository stands alone: nothing that builds, tests, benchmarks or demonstrates it may
# read a path outside the checkout (a user clones this repository and nothing else).
# Fails naming each file that refers to a sibling folder or an absolute work-area path.
set -euo pipefail
cd "$(dirname "$0")/.."
if git rev-parse --git-dir >/dev/null 2>&1; then
  files=$(git ls-files --cached --others --exclude-standard)
else
  files=$(find . -type f -not -path './build*' -not -path './node_modules/*' | sed 's#^\./##')
fi
# Prose may tell the project's history; everything that runs may not look outside.
hits=$(printf '%s\n' "$files" | grep -v -E '^(docs/|README\.md$|tests/fixtures/SOURCES\.md$)' |
  grep -v -E '^tests/stands_alone\.sh$' |
  while read -r f; do [ -f "$f" ] && grep -l -E '\.\./shared|/work/(shared|main)' "$f" || true; done)
if [ -n "$hits" ]; then
  echo "files that read outside the repository:"
  echo "$hits"
  exit 1
fi
echo "the repository stands alone: $(printf '%s\n' "$files" | wc -l) files checked"
