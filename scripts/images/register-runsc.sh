#!/usr/bin/env bash
# Registers gVisor's runsc as a Docker runtime in daemon.json (default /etc/docker/daemon.json),
# keeping whatever else the file holds. Prints "yes" when it changed the file, "no" when the entry
# was already right; dockerd reads it at start or on SIGHUP.
#   --network=none       runsc refuses to start in the root network namespace otherwise, and
#                        functions run without a network anyway;
#   --fsgofer-host-uds   lets the shim connect out to its channel socket, the one host socket
#                        bind-mounted into a function container (agent/runner/shim-channel.ts).
#
#   scripts/images/register-runsc.sh [daemon.json] [runsc path]
set -euo pipefail
FILE="${1:-/etc/docker/daemon.json}" RUNSC="${2:-$(command -v runsc)}" node -e '
  const fs = require("fs"), path = require("path"), file = process.env.FILE;
  let config = {};
  try { config = JSON.parse(fs.readFileSync(file, "utf8")); } catch (e) { if (e.code !== "ENOENT") { console.error(`${file} is not valid JSON: ${e.message}`); process.exit(1); } }
  const want = { path: process.env.RUNSC, runtimeArgs: ["--network=none", "--fsgofer-host-uds"] };
  if (JSON.stringify(config.runtimes?.runsc) === JSON.stringify(want)) { console.log("no"); process.exit(0); }
  config.runtimes = { ...config.runtimes, runsc: want };
  fs.mkdirSync(path.dirname(file), { recursive: true });
  fs.writeFileSync(file + ".tmp", JSON.stringify(config, null, 2) + "\n");
  fs.renameSync(file + ".tmp", file);
  console.log("yes");
'
