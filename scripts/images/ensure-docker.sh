#!/usr/bin/env bash
# Makes sure a Docker Engine answers: installs Debian's docker.io when the engine (dockerd) is
# missing and starts dockerd detached, as a service would, when no daemon runs (start-dockerd.sh,
# which also names the variables that move the engine elsewhere). A `docker` on the PATH is not an
# engine: machines ship the client alone, so the check is for dockerd and for a daemon that answers. Also makes sure mmdebstrap is present for
# scripts/images/build-offline.sh, and gVisor's runsc registered as a Docker runtime. Idempotent.
set -euo pipefail

daemon_answers() { timeout 10 docker version --format '{{.Server.Version}}' >/dev/null 2>&1; }

need_apt=()
if ! daemon_answers && ! command -v dockerd >/dev/null 2>&1; then
  need_apt+=(docker.io)
fi
command -v docker >/dev/null 2>&1 || need_apt+=(docker.io)
command -v mmdebstrap >/dev/null 2>&1 || need_apt+=(mmdebstrap)
# gVisor: agents run unprivileged functions and builds under runsc where Docker has it.
command -v runsc >/dev/null 2>&1 || need_apt+=(runsc)
if [ ${#need_apt[@]} -gt 0 ]; then
  mapfile -t need_apt < <(printf '%s\n' "${need_apt[@]}" | sort -u)
  echo "installing ${need_apt[*]}"
  export DEBIAN_FRONTEND=noninteractive
  apt-get update -qq
  apt-get install -y -qq --no-install-recommends "${need_apt[@]}" >/dev/null
fi

here="$(dirname "${BASH_SOURCE[0]}")"
if command -v runsc >/dev/null 2>&1 && [ "$(bash "$here/register-runsc.sh")" = yes ]; then
  echo "registered runsc as a Docker runtime"
  # A running dockerd re-reads its runtimes on SIGHUP; one started below reads the file. Only the
  # engine of our pid file: another dockerd on this machine is not ours to signal.
  pid="$(head -n 1 "${GCFAAS_DOCKERD_PIDFILE:-/var/run/docker.pid}" 2>/dev/null | tr -cd 0-9 || true)"
  if daemon_answers && [ -n "$pid" ] && [ "$(cat "/proc/$pid/comm" 2>/dev/null)" = dockerd ]; then kill -HUP "$pid"; sleep 1; fi
fi
exec bash "$here/start-dockerd.sh"
