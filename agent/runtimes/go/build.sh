#!/bin/sh
# Build step for Go functions: compiles the function's package together with the shim into
# /out/handler. /src holds the unpacked zip (package at the top level, go.mod optional, vendor/
# optional), /out becomes the artifact, no network: GOPROXY=off.
set -eu
SDK_PATH=github.com/openfaas/templates-sdk/go-http
export GOPROXY=off GOSUMDB=off GOTOOLCHAIN=local GOFLAGS= CGO_ENABLED=0
export GOCACHE=/scratch/go-cache GOPATH=/scratch/go HOME=/scratch
# A private copy of the image's warm compile cache: builds never share a writable cache.
if [ -d /opt/gcfaas/go-cache ]; then mkdir -p "$GOCACHE" && cp -a /opt/gcfaas/go-cache/. "$GOCACHE/"; fi
cd /src
# A glob, not ls: ls uses statx, which gVisor's older releases refuse (EINVAL).
set -- ./*.go
if [ ! -e "$1" ]; then
  echo "error: no .go files at the top level of the zip"
  exit 1
fi
if [ ! -f go.mod ]; then
  # Quietly: go mod init's own advice ("go mod tidy") needs a network this build does not have.
  go mod init handler/function >/dev/null 2>&1
  echo "no go.mod in the zip: created one (module handler/function)"
fi
module="$(go mod edit -json | sed -n 's/^[[:space:]]*"Path": "\(.*\)",\{0,1\}$/\1/p' | head -n 1)"
echo "function module: $module"

mode=mod
if [ -f vendor/modules.txt ]; then
  mode=vendor
  if ! grep -q "^# $SDK_PATH " vendor/modules.txt; then
    # The SDK ships with the image: vendor it like any other dependency.
    mkdir -p "vendor/$SDK_PATH"
    cp /opt/gcfaas/go-sdk/handler.go "vendor/$SDK_PATH/"
    printf '# %s v0.0.0 => /opt/gcfaas/go-sdk\n## explicit; go 1.19\n%s\n# %s => /opt/gcfaas/go-sdk\n' \
      "$SDK_PATH" "$SDK_PATH" "$SDK_PATH" >> vendor/modules.txt
  fi
fi
if ! go mod edit -json | grep -q "\"Path\": \"$SDK_PATH\""; then
  go mod edit -require="$SDK_PATH@v0.0.0" -replace="$SDK_PATH=/opt/gcfaas/go-sdk"
fi

mkdir -p gcfaas_main
sed "s#__FUNCTION_MODULE__#$module#" /opt/gcfaas/main.go.tmpl > gcfaas_main/main.go
echo "go build (-mod=$mode)"
go build -mod="$mode" -trimpath -ldflags="-s -w" -o /out/handler ./gcfaas_main
echo "build complete"
