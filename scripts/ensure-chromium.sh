#!/usr/bin/env bash
# Makes sure Debian's Chromium is installed for the browser tests (driven headless by playwright-core
# through its executablePath; playwright's own browser downloads cannot work without the internet).
set -euo pipefail
if command -v chromium >/dev/null 2>&1; then exit 0; fi
echo "installing chromium"
export DEBIAN_FRONTEND=noninteractive
apt-get update -qq
apt-get install -y -qq --no-install-recommends chromium fonts-dejavu-core >/dev/null
