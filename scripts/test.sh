#!/usr/bin/env bash
# Runs every test: type checks, Redocly's lint of the OpenAPI document, the Worker suite in workerd, the agent suite against real Docker,
# the end-to-end and CLI suites against the Worker on local workerd with real agents. Installs what it needs first
# (Docker, mmdebstrap, Chromium for the browser tests, npm packages) and builds missing runtime images, so a fresh Debian machine
# needs nothing else. The four vitest projects run one after another: on two cores, Docker-heavy
# suites running side by side starve each other. Prints "N passed, N failed" last.
#
#   bash scripts/test.sh                 every project
#   bash scripts/test.sh worker agent    only these projects (extra vitest arguments after --)
set -euo pipefail
cd "$(dirname "${BASH_SOURCE[0]}")/.."
export WRANGLER_SEND_METRICS=false

projects=()
while [ $# -gt 0 ] && [ "$1" != "--" ]; do projects+=("$1"); shift; done
[ "${1:-}" = "--" ] && shift
[ ${#projects[@]} -eq 0 ] && projects=(worker agent e2e cli)

# The pinned LTS Node (scripts/node-runtime.env) runs everything below, whatever Node the machine has.
. scripts/lib/ensure-node.sh
ensure_node
bash scripts/images/ensure-docker.sh
bash scripts/ensure-chromium.sh
. scripts/lib/ensure-packages.sh
ensure_packages node_modules/.bin/vitest

echo "== type check"
npx tsc -p tsconfig.json --noEmit
npx tsc -p tsconfig.node.json --noEmit
npx tsc -p tsconfig.bench.json --noEmit

echo "== OpenAPI lint (Redocly, recommended rules: redocly.yaml)"
npm run --silent lint:openapi

echo "== runtime images"
node --import tsx -e 'import("./agent/runtimes/images.ts").then((m) => m.ensureOfflineImages(["py", "js", "go", "rb", "rs", "cs"], (l) => console.log(l)))'

mkdir -p .state/test-results
rm -f .state/test-results/*.json
status=0
for p in "${projects[@]}"; do
  echo "== vitest project: $p"
  npx vitest run --project "$p" --reporter=default --reporter=json --outputFile.json=".state/test-results/$p.json" "$@" || status=1
done
node -e '
  const fs = require("fs");
  let passed = 0, failed = 0, skipped = 0;
  for (const f of fs.readdirSync(".state/test-results")) {
    const r = JSON.parse(fs.readFileSync(".state/test-results/" + f, "utf8"));
    passed += r.numPassedTests; failed += r.numFailedTests; skipped += r.numPendingTests;
  }
  console.log(`${passed} passed, ${failed} failed` + (skipped ? `, ${skipped} skipped` : ""));
'
exit $status
