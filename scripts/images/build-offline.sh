#!/usr/bin/env bash
# Builds the offline runtime images (no container registry needed): a Debian root
# filesystem from mmdebstrap, imported as gcfaas/<lang>-base:offline, then the language's shim
# layered on top from agent/runtimes/<lang>/Dockerfile.offline as gcfaas/<lang>:offline (or the tag in
# GCFAAS_IMAGE_TAG, so that a checkout with a changed shim can test its images beside others').
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

# Each language's base comes from agent/runtimes/<lang>/offline-base.sh: SUITE (the Debian suite of
# the root filesystem), EXTRA_SOURCES (more suites, e.g. bookworm-backports for Go 1.21) and
# PACKAGES. The suites are chosen for the specification's runtime versions (docs/runtimes.md).
# Build tools live in the same image as the runtime: the builder and the runner may be configured
# with different images in production (see docs/runtimes.md).
base_spec() { echo "$ROOT/agent/runtimes/$1/offline-base.sh"; }

image_exists() { docker image inspect "$1" >/dev/null 2>&1; }

build_base() {
  local lang="$1" tag="gcfaas/$1-base:offline" spec
  spec="$(base_spec "$lang")"
  [ -f "$spec" ] || { echo "unknown language: $lang" >&2; return 1; }
  local spec_hash
  spec_hash="$(sha256sum "$spec" | cut -c1-16)"
  if image_exists "$tag" && [ "$force_base" -eq 0 ] \
    && [ "$(docker image inspect -f '{{ index .Config.Labels "gcfaas.base-spec" }}' "$tag" 2>/dev/null)" = "$spec_hash" ]; then
    echo "[$lang] base image $tag present, skipping mmdebstrap"
    return
  fi
  local SUITE="" EXTRA_SOURCES="" PACKAGES=""
  # shellcheck disable=SC1090
  . "$spec"
  local sources=("deb $MIRROR $SUITE main")
  case "$SUITE" in
    trixie|bookworm|bullseye)
      sources+=("deb $MIRROR $SUITE-updates main" "deb $SECURITY_MIRROR $SUITE-security main") ;;
  esac
  for extra in $EXTRA_SOURCES; do sources+=("deb $MIRROR $extra main"); done
  echo "[$lang] mmdebstrap $SUITE ${EXTRA_SOURCES:+(+ $EXTRA_SOURCES) }with $PACKAGES"
  mmdebstrap --quiet --variant=minbase --include="$PACKAGES" \
    --aptopt='APT::Install-Recommends "false"' \
    --dpkgopt='path-exclude=/usr/share/doc/*' --dpkgopt='path-exclude=/usr/share/man/*' \
    --dpkgopt='path-exclude=/usr/share/locale/*' \
    "$SUITE" - "${sources[@]}" \
    | docker import --change "LABEL gcfaas.base-spec=$spec_hash" \
        --message "gcfaas $lang base from Debian $SUITE" - "$tag" >/dev/null
  echo "[$lang] imported $tag"
}

build_shim() {
  local lang="$1" tag="gcfaas/$1:${GCFAAS_IMAGE_TAG:-offline}" dir="$ROOT/agent/runtimes/$1"
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
  build_base "$lang"
  build_shim "$lang"
done
