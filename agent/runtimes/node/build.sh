#!/bin/sh
# Build step for Node.js functions: /src holds the unpacked zip, /out becomes the artifact, no network.
set -eu
cd /src
if [ ! -f handler.js ]; then
  echo "error: handler.js not found at the top level of the zip"
  exit 1
fi
echo "checking handler.js"
node --check handler.js
cp -a /src/. /out/
cd /out
if [ -f package.json ] && [ ! -d node_modules ]; then
  echo "installing package.json dependencies (offline: file: and vendored tarballs only)"
  npm install --offline --omit=dev --no-audit --no-fund --no-update-notifier --loglevel=error
elif [ -d node_modules ]; then
  echo "using vendored node_modules"
fi
echo "build complete"
