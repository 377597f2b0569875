#!/usr/bin/env bash
# Prints a content hash of agent/runtimes/<lang>/ so that a changed shim rebuilds its image layer.
# agent/runtimes/images.ts computes the same value (sha256 over sorted "path\0content" records).
set -euo pipefail
ROOT="$(cd "$(dirname "${BASH_SOURCE[0]}")/../.." && pwd)"
cd "$ROOT/agent/runtimes/$1"
find . -type f ! -name '*.md' | LC_ALL=C sort | while read -r f; do
  printf '%s\0' "${f#./}"; cat "$f"; printf '\0'
done | sha256sum | cut -c1-16
