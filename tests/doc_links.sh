#!/usr/bin/env bash
# Every relative link in README.md and docs/*.md points at a file of the checkout, and a link
# with an anchor at a heading of that file: pages are split and sections renamed, and a link
# that still renders but leads nowhere is not seen in review. Anchors are made from headings
# as GitHub makes them (lower case; punctuation and symbols dropped; each space a hyphen; a
# repeated heading's anchor suffixed -1, -2, …). Links inside code are not links.
# Fails naming each broken link with its file and line.
set -euo pipefail
cd "$(dirname "$0")/.."
python3 - README.md docs/*.md <<'PY'
import os
import re
import sys

def anchors(path, cache={}):
    if path not in cache:
        seen, out, fence = {}, set(), False
        with open(path, encoding="utf-8") as f:
            for line in f:
                if line.startswith("```"):
                    fence = not fence
                    continue
                m = None if fence else re.match(r"^#{1,6}\s+(.*?)\s*#*\s*$", line)
                if not m:
                    continue
                slug = re.sub(r"[^\w\- ]", "", m.group(1).strip().lower()).replace(" ", "-")
                n = seen.get(slug)
                seen[slug] = 0 if n is None else n + 1
                out.add(slug if n is None else f"{slug}-{n + 1}")
        cache[path] = out
    return cache[path]

broken = checked = 0
for doc in sys.argv[1:]:
    fence = False
    with open(doc, encoding="utf-8") as f:
        for number, line in enumerate(f, 1):
            if line.startswith("```"):
                fence = not fence
                continue
            if fence:
                continue
            for m in re.finditer(r"\]\(([^)\s]+)\)", re.sub(r"`[^`]*`", "", line)):
                target = m.group(1)
                if re.match(r"^[a-z][a-z0-9+.-]*:", target):  # http:, https:, mailto:
                    continue
                checked += 1
                path, _, anchor = target.partition("#")
                full = os.path.normpath(os.path.join(os.path.dirname(doc), path)) if path else doc
                if not os.path.exists(full):
                    print(f"{doc}:{number}: {target}: no file {full}")
                    broken += 1
                elif anchor and full.endswith(".md") and anchor not in anchors(full):
                    print(f"{doc}:{number}: {target}: no heading #{anchor} in {full}")
                    broken += 1
if broken:
    print(f"{broken} broken of {checked} relative links")
    sys.exit(1)
print(f"{checked} relative links in {len(sys.argv) - 1} pages lead somewhere")
PY
