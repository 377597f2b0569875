#!/usr/bin/env bash
# Builds the offline runtime images (no container registry needed): a Debian bookworm root
# filesystem from mmdebstrap, imported as gcfaas/<lang>-base:offline, then the language's shim
# layered on top from agent/runtimes/<lang>/Dockerfile.offline as gcfaas/<lang>:offline.
#
#   scripts/images/build-offline.sh [--force] [--force-base] [lang ...]
#
# Without languages, all six are built. Existing images are kept unless forced: --force rebuilds
# the shim layer (cheap), --force-base also re-runs mmdebstrap (about 30-90 s per language).
set -euo pipefail

ROOT="$(cd "$(dirname "${BASH_SOURCE[0]}")/../.." && pwd)"
MIRROR="${DEBIAN_MIRROR:-http://deb.debian.org/debian}"
SECURITY_MIRROR="${DEBIAN_SECURITY_MIRROR:-http://deb.debian.org/debian-security}"
ALL_LANGS=(python node go ruby rust csharp)

force=0
force_base=0
langs=()
for arg in "$@"; do
  case "$arg" in
    --force) force=1 ;;
    --force-base) force=1; force_base=1 ;;
    -h|--help) sed -n '2,9p' "$0"; exit 0 ;;
    *) langs+=("$arg") ;;
  esac
done
[ ${#langs[@]} -eq 0 ] && langs=("${ALL_LANGS[@]}")

# Debian packages per language. Build tools live in the same image as the runtime: the builder
# and the runner may be configured with different images in production (see docs/runtimes.md).
packages_for() {
  case "$1" in
    python) echo "python3,python3-pip" ;;
    node) echo "nodejs,npm" ;;
    go) echo "golang-go,ca-certificates" ;;
    ruby) echo "ruby,ruby-bundler" ;;
    rust) echo "rustc-web,cargo-web,gcc,libc6-dev" ;;
    csharp) echo "mono-mcs,mono-runtime,libmono-system-web-extensions4.0-cil,libmono-system-runtime-serialization4.0-cil" ;;
    *) echo "unknown language: $1" >&2; return 1 ;;
  esac
}

image_exists() { docker image inspect "$1" >/dev/null 2>&1; }

build_base() {
  local lang="$1" tag="gcfaas/$1-base:offline"
  if image_exists "$tag" && [ "$force_base" -eq 0 ]; then
    echo "[$lang] base image $tag present, skipping mmdebstrap"
    return
  fi
  echo "[$lang] mmdebstrap bookworm with $(packages_for "$lang")"
  mmdebstrap --quiet --variant=minbase --include="$(packages_for "$lang")" \
    --aptopt='APT::Install-Recommends "false"' \
    --dpkgopt='path-exclude=/usr/share/doc/*' --dpkgopt='path-exclude=/usr/share/man/*' \
    --dpkgopt='path-exclude=/usr/share/locale/*' \
    bookworm - \
    "deb $MIRROR bookworm main" "deb $MIRROR bookworm-updates main" \
    "deb $SECURITY_MIRROR bookworm-security main" \
    | docker import --message "gcfaas $lang base from Debian bookworm" - "$tag" >/dev/null
  echo "[$lang] imported $tag"
}

build_shim() {
  local lang="$1" tag="gcfaas/$1:offline" dir="$ROOT/agent/runtimes/$1"
  local hash
  hash="$(bash "$ROOT/scripts/images/shim-hash.sh" "$lang")"
  if image_exists "$tag" && [ "$force" -eq 0 ] \
    && [ "$(docker image inspect -f '{{ index .Config.Labels "gcfaas.shim-hash" }}' "$tag")" = "$hash" ]; then
    echo "[$lang] $tag up to date"
    return
  fi
  local output
  if ! output="$(docker build --quiet --network none -f "$dir/Dockerfile.offline" \
    --label "gcfaas.shim-hash=$hash" -t "$tag" "$dir" 2>&1)"; then
    echo "$output" >&2
    echo "[$lang] docker build of $tag failed" >&2
    return 1
  fi
  echo "[$lang] built $tag"
}

for lang in "${langs[@]}"; do
  packages_for "$lang" >/dev/null
  build_base "$lang"
  build_shim "$lang"
done
