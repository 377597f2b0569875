#!/usr/bin/env bash
# Starts the whole service locally: Docker (installed and started if missing), npm packages,
# runtime images, the Worker on local workerd and one agent. Ctrl-C stops the Worker and the agent;
# the Docker engine runs on in a session of its own (scripts/images/start-dockerd.sh), since other
# containers on the machine depend on it.
set -euo pipefail
cd "$(dirname "${BASH_SOURCE[0]}")/.."
# The pinned LTS Node (scripts/node-runtime.env) runs everything below, whatever Node the machine has.
. scripts/lib/ensure-node.sh
ensure_node
bash scripts/images/ensure-docker.sh
# --loglevel=error: npm's warnings (install scripts are reviewed in package.json's allowScripts) are not the start's business.
. scripts/lib/ensure-packages.sh
ensure_packages node_modules/wrangler --loglevel=error
exec node --import tsx scripts/start.ts
