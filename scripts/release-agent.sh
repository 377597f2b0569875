#!/usr/bin/env bash
# Builds the agent's release folder: one bundled JavaScript file (no TypeScript, tsx or
# node_modules needed at run time) plus the runtime-image definitions it builds its images from,
# laid out with the repository's relative paths so that scripts/images/build-offline.sh and the
# agent find them next to the bundle.
#
#   scripts/release-agent.sh [--with-images python,node,...] [OUT_DIR]      default dist/agent
#
# --with-images also saves those built runtime images (gcfaas/<lang>:offline, or the tag in
# GCFAAS_IMAGE_TAG) into OUT_DIR/images.tar, which install-agent.sh then loads instead of building.
#
#   OUT_DIR/gcfaas-agent.mjs        the agent (node/bin/node gcfaas-agent.mjs --help)
#   OUT_DIR/node/bin/node           the Node.js it runs on, the pinned LTS of scripts/node-runtime.env
#                                   (official build, SHA-512 checked): the host needs no Node of its own
#   OUT_DIR/agent/runtimes/<lang>/  shims, Dockerfiles and Debian package lists per language
#   OUT_DIR/scripts/images/         build-offline.sh, shim-hash.sh, ensure-docker.sh
#   OUT_DIR/install-agent.sh        the installer (run it from this folder)
#   OUT_DIR/VERSION                 package version and commit
#   OUT_DIR/SHA256SUMS              the SHA-256 of every other file (sha256sum -c reads it);
#                                   install-agent.sh checks the release against it
#   OUT_DIR/images.tar.sha256       with --with-images: the tarball's digest, for when it travels alone
#
# The last line printed is the SHA-256 of SHA256SUMS: give it to install-agent.sh --release-sha256
# on the host, through a channel other than the copy, to pin the whole release.
set -euo pipefail
ROOT="$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)"
images=""
if [ "${1:-}" = "--with-images" ]; then
  images="${2:?--with-images needs a list of languages, e.g. python,node}"
  shift 2
fi
OUT="$(mkdir -p "${1:-$ROOT/dist/agent}" && cd "${1:-$ROOT/dist/agent}" && pwd)"
cd "$ROOT"

rm -rf "$OUT/agent" "$OUT/scripts" "$OUT/node" "$OUT/images.tar" "$OUT/images.tar.sha256" "$OUT/SHA256SUMS"
mkdir -p "$OUT/agent" "$OUT/scripts" "$OUT/node/bin"

# shellcheck source=lib/ensure-node.sh
. "$ROOT/scripts/lib/ensure-node.sh"
ensure_node >&2
cp "$(command -v node)" "$OUT/node/bin/node"
[ -f "$(pinned_node_dir)/LICENSE" ] && cp "$(pinned_node_dir)/LICENSE" "$OUT/node/LICENSE"

# ESM output: bundled CommonJS packages still call require() for Node's built-in modules, which
# an ES module lacks, so the banner gives them one. ssh2 (and through it cpu-features) carries
# optional native add-ons; docker-modem loads it only for ssh:// Docker hosts, so a stub stands in.
node_modules/.bin/esbuild agent/main.ts --bundle --platform=node --format=esm --target=node24 \
  --outfile="$OUT/gcfaas-agent.mjs" --log-level=warning --legal-comments=none \
  --alias:ssh2=./scripts/release/ssh2-unsupported.cjs \
  '--banner:js=import { createRequire as __gcfaasCreateRequire } from "node:module"; const require = __gcfaasCreateRequire(import.meta.url);'

# Only the image definitions: the agent's TypeScript (images.ts, languages.ts) is in the bundle.
cp -r agent/runtimes "$OUT/agent/runtimes"
find "$OUT/agent/runtimes" -maxdepth 1 -type f -delete
cp -r scripts/images "$OUT/scripts/images"
cp scripts/install-agent.sh "$OUT/install-agent.sh"

if [ -n "$images" ]; then
  tags=()
  IFS=, read -r -a dirs <<<"$images"
  for d in "${dirs[@]}"; do tags+=("gcfaas/$d:${GCFAAS_IMAGE_TAG:-offline}"); done
  docker save -o "$OUT/images.tar" "${tags[@]}"
  (cd "$OUT" && sha256sum images.tar >images.tar.sha256)
fi

version="$(node -p 'require("./package.json").version')"
commit="$(git rev-parse --short HEAD 2>/dev/null || echo unknown)"
printf '%s+%s\n' "$version" "$commit" >"$OUT/VERSION"
(cd "$OUT" && find . -type f ! -name SHA256SUMS ! -name '*.sha256' -printf '%P\n' | LC_ALL=C sort | xargs -r -d '\n' sha256sum >SHA256SUMS)
echo "agent release $(cat "$OUT/VERSION") in $OUT"
echo "SHA256SUMS sha256 $(sha256sum "$OUT/SHA256SUMS" | cut -d ' ' -f 1)"
