#!/usr/bin/env bash
# Makes sure a Docker Engine answers: installs Debian's docker.io when the engine (dockerd) is missing
# and starts dockerd in the background when no daemon runs (no bridge network: functions run
# --network none). A `docker` on the PATH is not an engine: machines ship the client alone, so the
# check is for dockerd and for a daemon that answers. Also makes sure mmdebstrap is present for
# scripts/images/build-offline.sh, and gVisor's runsc registered as a Docker runtime. Idempotent.
set -euo pipefail

daemon_answers() { docker version --format '{{.Server.Version}}' >/dev/null 2>&1; }

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

if command -v runsc >/dev/null 2>&1 && [ "$(bash "$(dirname "${BASH_SOURCE[0]}")/register-runsc.sh")" = yes ]; then
  echo "registered runsc as a Docker runtime"
  # A running dockerd re-reads its runtimes on SIGHUP; one started below reads the file.
  if daemon_answers && pid="$(pidof dockerd)"; then kill -HUP $pid; sleep 1; fi
fi
if daemon_answers; then
  exit 0
fi
if ! command -v dockerd >/dev/null 2>&1; then
  echo "dockerd is not installed and no Docker daemon answers" >&2
  exit 1
fi
echo "starting dockerd"
mkdir -p /var/log
nohup dockerd --iptables=false --bridge=none >/var/log/gcfaas-dockerd.log 2>&1 &
for _ in $(seq 1 60); do
  if daemon_answers; then
    echo "dockerd is up"
    exit 0
  fi
  sleep 1
done
echo "dockerd did not start; see /var/log/gcfaas-dockerd.log" >&2
tail -n 20 /var/log/gcfaas-dockerd.log >&2 || true
exit 1
