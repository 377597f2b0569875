#!/usr/bin/env bash
# Registers gVisor's runsc as two Docker runtimes in daemon.json (default /etc/docker/daemon.json),
# keeping whatever else the file holds. Prints "yes" when it changed the file, "no" when the entries
# were already right; dockerd reads it at start or on SIGHUP.
#   runsc                --network=none: functions without egress and builds. runsc's own network
#                        stack refuses to start on these kernels (platform notes, gVisor #10704);
#   runsc-egress         --network=host: functions with egress. gVisor hands socket calls to the
#                        host kernel inside the container's own network namespace, on the agent's
#                        egress bridge, where the agent's iptables policy (agent/egress/) applies
#                        outside the sandbox;
#   --fsgofer-host-uds   lets the shim connect out to its channel socket, the one host socket
#                        bind-mounted into a function container (agent/runner/shim-channel.ts).
#
#   scripts/images/register-runsc.sh [daemon.json] [runsc path]
set -euo pipefail
FILE="${1:-/etc/docker/daemon.json}" RUNSC="${2:-$(command -v runsc)}" node -e '
  const fs = require("fs"), path = require("path"), file = process.env.FILE;
  let config = {};
  try { config = JSON.parse(fs.readFileSync(file, "utf8")); } catch (e) { if (e.code !== "ENOENT") { console.error(`${file} is not valid JSON: ${e.message}`); process.exit(1); } }
  const want = {
    runsc: { path: process.env.RUNSC, runtimeArgs: ["--network=none", "--fsgofer-host-uds"] },
    "runsc-egress": { path: process.env.RUNSC, runtimeArgs: ["--network=host", "--fsgofer-host-uds"] },
  };
  const same = Object.keys(want).every((k) => JSON.stringify(config.runtimes?.[k]) === JSON.stringify(want[k]));
  if (same) { console.log("no"); process.exit(0); }
  config.runtimes = { ...config.runtimes, ...want };
  fs.mkdirSync(path.dirname(file), { recursive: true });
  fs.writeFileSync(file + ".tmp", JSON.stringify(config, null, 2) + "\n");
  fs.renameSync(file + ".tmp", file);
  console.log("yes");
'
