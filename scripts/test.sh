#!/usr/bin/env bash
# Runs every test: type checks, the Worker suite in workerd, the agent suite against real Docker,
# the end-to-end and CLI suites against wrangler dev with real agents. Installs what it needs first
# (Docker, mmdebstrap, npm packages) and builds missing runtime images, so a fresh Debian machine
# needs nothing else. Prints "N passed, N failed" last.
set -euo pipefail
cd "$(dirname "${BASH_SOURCE[0]}")/.."
export WRANGLER_SEND_METRICS=false

bash scripts/images/ensure-docker.sh
if [ ! -x node_modules/.bin/vitest ] || [ package-lock.json -nt node_modules/.package-lock.json ]; then
  npm ci --no-audit --no-fund
fi

echo "== type check"
npx tsc -p tsconfig.json --noEmit
npx tsc -p tsconfig.node.json --noEmit

echo "== runtime images"
node --import tsx -e 'import("./agent/runtimes/images.ts").then(m => m.ensureOfflineImages(["py","js","go","rb","rs","cs"], l => console.log(l)))'

mkdir -p .state
results=.state/test-results.json
status=0
npx vitest run --reporter=default --reporter=json --outputFile.json="$results" "$@" || status=$?
node -e '
  const r = JSON.parse(require("fs").readFileSync(process.argv[1], "utf8"));
  console.log(`${r.numPassedTests} passed, ${r.numFailedTests} failed` + (r.numPendingTests ? `, ${r.numPendingTests} skipped` : ""));
' "$results" || true
exit $status
