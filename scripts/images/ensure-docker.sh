#!/usr/bin/env bash
# Makes sure a Docker Engine answers: installs Debian's docker.io when the CLI is missing and starts
# dockerd in the background when no daemon runs (no bridge network: functions run --network none).
# Also makes sure mmdebstrap is present for scripts/images/build-offline.sh. Idempotent.
set -euo pipefail

need_apt=()
command -v docker >/dev/null 2>&1 || need_apt+=(docker.io)
command -v mmdebstrap >/dev/null 2>&1 || need_apt+=(mmdebstrap)
if [ ${#need_apt[@]} -gt 0 ]; then
  echo "installing ${need_apt[*]}"
  export DEBIAN_FRONTEND=noninteractive
  apt-get update -qq
  apt-get install -y -qq --no-install-recommends "${need_apt[@]}" >/dev/null
fi

if docker version --format '{{.Server.Version}}' >/dev/null 2>&1; then
  exit 0
fi
echo "starting dockerd"
mkdir -p /var/log
nohup dockerd --iptables=false --bridge=none >/var/log/gcfaas-dockerd.log 2>&1 &
for _ in $(seq 1 60); do
  if docker version --format '{{.Server.Version}}' >/dev/null 2>&1; then
    echo "dockerd is up"
    exit 0
  fi
  sleep 1
done
echo "dockerd did not start; see /var/log/gcfaas-dockerd.log" >&2
exit 1
