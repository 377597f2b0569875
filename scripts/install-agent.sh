#!/usr/bin/env bash
# Installs the gcfaas agent on this host as a systemd service. Run as root on Debian 12 or
# Ubuntu 22.04+, from a release folder (scripts/release-agent.sh) or a repository checkout (the
# release is built first). Idempotent: a re-run upgrades the agent and keeps settings not given.
#
#   install-agent.sh --url URL --token-file FILE|- [--node-id ID] [--slots N] [--langs py,js,…]
#                    [--state-dir DIR] [--images-tar FILE | --no-images]
#                    [--release-sha256 HEX] [--insecure] [--egress [--egress-allow CIDR,…] | --no-egress]
#   install-agent.sh --uninstall [--remove-images]
#
# The token comes from a file, from standard input (--token-file -) or from GCFAAS_AGENT_TOKEN,
# never from the command line, which every user of the host can read. An http:// URL is refused
# unless it is loopback or --insecure is given. The release is checked against its SHA256SUMS
# (and that file against --release-sha256), an images tarball against FILE.sha256, before anything
# is installed. Installs what is missing: Docker Engine (Debian's docker.io), gVisor (runsc,
# registered as a Docker runtime). Node.js comes with the release (node/bin/node, the pinned LTS of
# scripts/node-runtime.env): the host needs none. Places the agent in /opt/gcfaas-agent, builds
# the runtime images (or loads --images-tar), writes /etc/gcfaas/agent-token and agent.env (mode
# 600) and the unit gcfaas-agent.service, and starts it when systemd runs. See docs/agents.md.
set -euo pipefail

PREFIX=/opt/gcfaas-agent
ENV_FILE=/etc/gcfaas/agent.env
TOKEN_FILE=/etc/gcfaas/agent-token
UNIT_FILE=/etc/systemd/system/gcfaas-agent.service
DAEMON_JSON=/etc/docker/daemon.json
DEFAULT_STATE_DIR=/var/lib/gcfaas-agent
# Longest drain: a build may run 10 minutes, then uploads its artifact; tasks end within 2.
STOP_TIMEOUT_SECONDS=900
ALL_LANGS=(py js go rb rs cs)

say() { echo "install-agent: $*"; }
die() { echo "install-agent: $*" >&2; exit 1; }
usage() { sed -n '2,21p' "$0" | sed 's/^# \{0,1\}//'; }

url="" token_file="" node_id="" slots="" langs="" state_dir="" images_tar="" release="" release_sha256="" egress="" egress_allow=""
build_images=1 uninstall=0 remove_images=0 insecure=0
while [ $# -gt 0 ]; do
  case "$1" in
    --url) url="${2:?--url needs a value}"; shift ;;
    --token|--token=*) die "--token is not accepted: a command line shows in ps to every user of this host. Pass --token-file FILE (mode 600), --token-file - (standard input) or GCFAAS_AGENT_TOKEN in the environment" ;;
    --token-file) token_file="${2:?--token-file needs a file, or - for standard input}"; shift ;;
    --release-sha256) release_sha256="${2:?--release-sha256 needs the SHA-256 of SHA256SUMS}"; shift ;;
    --insecure) insecure=1 ;;
    --node-id) node_id="${2:?--node-id needs a value}"; shift ;;
    --slots) slots="${2:?--slots needs a value}"; shift ;;
    --langs) langs="${2:?--langs needs a value}"; shift ;;
    --state-dir) state_dir="${2:?--state-dir needs a value}"; shift ;;
    --images-tar) images_tar="${2:?--images-tar needs a file}"; shift ;;
    --release) release="${2:?--release needs a folder}"; shift ;;
    --no-images) build_images=0 ;;
    --nodesource) say "--nodesource is no longer needed: the release carries its own Node.js; ignored" ;;
    --egress) egress=1 ;;
    --no-egress) egress=0 ;;
    --egress-allow) egress_allow="${2:?--egress-allow needs CIDR ranges, e.g. 10.0.5.0/24}"; shift ;;
    --uninstall) uninstall=1 ;;
    --remove-images) remove_images=1 ;;
    -h|--help) usage; exit 0 ;;
    *) usage >&2; die "unknown argument: $1" ;;
  esac
  shift
done

[ "$(id -u)" -eq 0 ] || die "run as root"
export DEBIAN_FRONTEND=noninteractive
# PID 1 being systemd is what makes systemctl work; a chroot or a container without it skips the
# service steps (the files are still written).
systemd_runs() { [ -d /run/systemd/system ]; }
docker_answers() { docker version --format '{{.Server.Version}}' >/dev/null 2>&1; }
lang_dir() { case "$1" in py) echo python ;; js) echo node ;; go) echo go ;; rb) echo ruby ;; rs) echo rust ;; cs) echo csharp ;; *) return 1 ;; esac; }
# The host of an http(s) URL, without brackets, port or user.
url_host() {
  local rest="${1#*://}"
  rest="${rest%%/*}"
  rest="${rest##*@}"
  if [[ "$rest" == "["* ]]; then rest="${rest%%"]"*}"; echo "${rest#"["}"; else echo "${rest%%:*}"; fi
}
is_loopback() { [[ "$1" == localhost || "$1" == ::1 || "$1" =~ ^127\.[0-9]{1,3}\.[0-9]{1,3}\.[0-9]{1,3}$ ]]; }
# A value of the existing environment file, so that a re-run keeps what it is not given.
env_value() { [ -f "$ENV_FILE" ] && sed -n "s/^$1=//p" "$ENV_FILE" | tail -n 1 || true; }

if [ "$uninstall" -eq 1 ]; then
  state="$(env_value GCFAAS_STATE_DIR)"
  state="${state:-$DEFAULT_STATE_DIR}"
  if systemd_runs; then
    # stop drains: running builds and tasks finish first (up to TimeoutStopSec).
    systemctl disable --now gcfaas-agent.service 2>/dev/null || true
  elif pgrep -f "$PREFIX/gcfaas-agent.mjs" >/dev/null 2>&1; then
    say "an agent from $PREFIX still runs outside systemd; stop it (SIGTERM drains it)"
  fi
  # Without systemd running, disable could not remove the link that enabling made.
  rm -f "$UNIT_FILE" /etc/systemd/system/multi-user.target.wants/gcfaas-agent.service
  systemd_runs && systemctl daemon-reload
  # A killed build leaves its loop-mounted space behind; unmount before deleting the folder.
  awk -v s="$state/" 'index($2, s) == 1 { print $2 }' /proc/self/mounts 2>/dev/null | sort -r | xargs -r -n 1 umount -l || true
  rm -rf "$PREFIX" "$ENV_FILE" "$TOKEN_FILE"
  # The state folder may itself be a mount point: then its contents go and the folder stays.
  rm -rf "$state" 2>/dev/null || find "$state" -mindepth 1 -delete
  rmdir /etc/gcfaas 2>/dev/null || true
  if [ "$remove_images" -eq 1 ]; then
    for l in "${ALL_LANGS[@]}"; do
      docker image rm "gcfaas/$(lang_dir "$l"):offline" "gcfaas/$(lang_dir "$l")-base:offline" >/dev/null 2>&1 || true
    done
    say "removed the runtime images"
  fi
  [ "$remove_images" -eq 1 ] || say "the runtime images stay (--remove-images removes them)"
  # The kernel settings stay in force until a reboot: other software may rely on forwarding too.
  rm -f /etc/modules-load.d/gcfaas-egress.conf /etc/sysctl.d/60-gcfaas-egress.conf
  say "uninstalled; Docker, runsc, Node.js and the runsc entries of $DAEMON_JSON stay"
  exit 0
fi

# --- settings: flags, else the existing environment file, else defaults --------------------
url_given="$url"
url="${url:-$(env_value GCFAAS_URL)}"
# A re-run that keeps the URL keeps its acceptance of plain http too.
[ -z "$url_given" ] && [ "$(env_value GCFAAS_INSECURE)" = 1 ] && insecure=1
# The token: --token-file (a file or standard input), else the environment, else what an earlier
# run stored (the token file, or the env file of an install from before there was one).
token=""
if [ "$token_file" = - ]; then
  IFS= read -r token || true
elif [ -n "$token_file" ]; then
  [ -f "$token_file" ] && [ -r "$token_file" ] || die "--token-file: cannot read $token_file"
  IFS= read -r token <"$token_file" || true
fi
token="${token:-${GCFAAS_AGENT_TOKEN:-}}"
[ -n "$token" ] || { [ -f "$TOKEN_FILE" ] && IFS= read -r token <"$TOKEN_FILE"; } || true
token="${token:-$(env_value GCFAAS_AGENT_TOKEN)}"
token="${token%$'\r'}"
node_id="${node_id:-$(env_value GCFAAS_NODE_ID)}"
node_id="${node_id:-$(hostname | tr -c 'A-Za-z0-9._\n-' '-' | cut -c1-64)}"
slots="${slots:-$(env_value GCFAAS_SLOTS)}"
langs="${langs:-$(env_value GCFAAS_LANGS)}"
state_dir="${state_dir:-$(env_value GCFAAS_STATE_DIR)}"
state_dir="${state_dir:-$DEFAULT_STATE_DIR}"
egress="${egress:-$(env_value GCFAAS_EGRESS)}"
egress_allow="${egress_allow:-$(env_value GCFAAS_EGRESS_ALLOW)}"
[ -z "$egress_allow" ] || [[ "$egress_allow" =~ ^[0-9./]+(,[0-9./]+)*$ ]] || die "--egress-allow must be IPv4 ranges separated by commas, e.g. 10.0.5.0/24,192.168.7.0/24"
[ -z "$egress_allow" ] || [ "$egress" = 1 ] || die "--egress-allow needs --egress"
# No quotes, spaces, $ or ; in values: the env file is read by systemd and by a shell (set -a; . file).
url_re='^https?://[A-Za-z0-9._~:/%@-]+$'
[[ "$url" =~ $url_re ]] || die "--url must be the control plane's http(s) URL"
# http:// sends the agent token in clear: only to this host itself, or when the operator says so.
if [ -n "$url_given" ] && [[ "$url" == http://* ]] && ! is_loopback "$(url_host "$url")"; then
  [ "$insecure" -eq 1 ] || die "--url $url is plain http to another host: the agent token would cross the network in clear. Use https://, a loopback address (127.0.0.0/8, ::1, localhost), or pass --insecure to accept it"
  say "warning: --insecure: the agent token travels in clear to $(url_host "$url")"
fi
[[ "$token" =~ ^gca_[0-9a-f]{64}$ ]] || die "the token (--token-file, or GCFAAS_AGENT_TOKEN) must be an agent token (gca_…) minted with POST /v1/admin/agent-tokens"
[[ "$node_id" =~ ^[A-Za-z0-9._-]{1,64}$ ]] || die "--node-id must be 1-64 of A-Z a-z 0-9 . _ -"
[ -z "$slots" ] || { [[ "$slots" =~ ^[1-9][0-9]{0,3}$ ]] && [ "$slots" -le 1024 ]; } || die "--slots must be a number from 1 to 1024"
[[ "$state_dir" =~ ^/[A-Za-z0-9._/-]+$ ]] || die "--state-dir must be an absolute path"
case "$state_dir/" in
  /home/* | /root/* | /run/user/* | /tmp/* | /var/tmp/*) die "--state-dir cannot be under /home, /root, /run/user, /tmp or /var/tmp: the unit's ProtectHome and PrivateTmp hide them from the agent" ;;
esac
image_langs=("${ALL_LANGS[@]}")
if [ -n "$langs" ]; then
  IFS=, read -r -a image_langs <<<"$langs"
  for l in "${image_langs[@]}"; do lang_dir "$l" >/dev/null || die "--langs: unknown language $l (one of ${ALL_LANGS[*]})"; done
fi
[ -z "$images_tar" ] || [ -f "$images_tar" ] || die "--images-tar: no file $images_tar"
if [ -f /etc/os-release ]; then
  . /etc/os-release
  case " ${ID:-} ${ID_LIKE:-} " in *" debian "*|*" ubuntu "*) ;; *) say "warning: made for Debian 12 and Ubuntu 22.04+, this is ${PRETTY_NAME:-unknown}" ;; esac
fi

# --- the release: next to this script, or built from the checkout it sits in ----------------
here="$(cd "$(dirname "${BASH_SOURCE[0]}")" && pwd)"
release="${release:-$here}"
if [ ! -f "$release/gcfaas-agent.mjs" ] && [ -f "$here/release-agent.sh" ]; then
  release="$(mktemp -d)"
  trap 'rm -rf "$release"' EXIT
  say "building the agent release from the checkout"
  bash "$here/release-agent.sh" "$release" >/dev/null
fi
[ -f "$release/gcfaas-agent.mjs" ] || die "no gcfaas-agent.mjs in $release (run scripts/release-agent.sh, or pass --release DIR)"
[ -f "$release/node/bin/node" ] || die "no node/bin/node in $release: a release of an older release-agent.sh, made before the agent carried its own Node.js; build it again with scripts/release-agent.sh"
[ -z "$images_tar" ] && [ -f "$release/images.tar" ] && images_tar="$release/images.tar"

# --- digests: the release and the images are checked before anything is installed -----------
# SHA256SUMS (written by release-agent.sh) lists every file of the release; a file it does not
# list is refused too, since the installer copies whole folders. It catches a damaged or partial
# copy; against a tampered one, --release-sha256 pins SHA256SUMS itself to the digest that
# release-agent.sh printed where the release was built.
sums="$release/SHA256SUMS"
[ -f "$sums" ] || die "no SHA256SUMS in $release: build the release with scripts/release-agent.sh, which writes it"
if [ -n "$release_sha256" ]; then
  actual="$(sha256sum "$sums" | cut -d ' ' -f 1)"
  [ "$actual" = "${release_sha256,,}" ] || die "$sums has SHA-256 $actual, not the $release_sha256 given with --release-sha256: the release was altered or damaged; nothing was installed"
fi
listed="$(sed -n 's/^[0-9a-f]\{64\}  //p' "$sums" | LC_ALL=C sort)"
present="$(cd "$release" && find . -type f ! -name SHA256SUMS ! -name '*.sha256' -printf '%P\n' | LC_ALL=C sort)"
unlisted="$(LC_ALL=C comm -13 <(echo "$listed") <(echo "$present"))"
[ -z "$unlisted" ] || die "files in $release that its SHA256SUMS does not list: ${unlisted//$'\n'/, }; nothing was installed"
say "checking the release against $sums"
mismatch="$(cd "$release" && sha256sum --strict -c SHA256SUMS 2>&1 | grep -v ': OK$' || true)"
[ -z "$mismatch" ] || die "the release in $release does not match its SHA256SUMS (a damaged or altered copy); nothing was installed:
$mismatch"
if [ -n "$images_tar" ] && [ "$(realpath "$images_tar")" != "$(realpath "$release/images.tar" 2>/dev/null || true)" ]; then
  # A tarball from elsewhere travels with its own digest, as release-agent.sh writes it beside images.tar.
  [ -f "$images_tar.sha256" ] || die "--images-tar $images_tar has no $images_tar.sha256 beside it (sha256sum's output, as release-agent.sh writes it): it cannot be checked, so it is not loaded"
  say "checking $images_tar against $images_tar.sha256"
  want="$(cut -d ' ' -f 1 "$images_tar.sha256" | head -n 1)"
  actual="$(sha256sum "$images_tar" | cut -d ' ' -f 1)"
  [ "$actual" = "$want" ] || die "$images_tar has SHA-256 $actual, not $want from $images_tar.sha256: a damaged or altered tarball; nothing was installed"
fi

# --- packages ------------------------------------------------------------------------------
need=()
command -v dockerd >/dev/null 2>&1 || docker_answers || need+=(docker.io)
command -v docker >/dev/null 2>&1 || need+=(docker.io)
command -v runsc >/dev/null 2>&1 || need+=(runsc)
# Each build gets a loop-mounted ext4 space of its own.
command -v mkfs.ext4 >/dev/null 2>&1 || need+=(e2fsprogs)
# ...attached with losetup and mounted in the engine's namespace too with nsenter (see the unit).
command -v losetup >/dev/null 2>&1 || need+=(mount)
command -v nsenter >/dev/null 2>&1 || need+=(util-linux)
[ "$build_images" -eq 1 ] && [ -z "$images_tar" ] && ! command -v mmdebstrap >/dev/null 2>&1 && need+=(mmdebstrap)
if [ ${#need[@]} -gt 0 ]; then
  say "updating the package lists"
  apt-get update -qq
fi
if [[ " ${need[*]} " == *" runsc "* ]] && ! apt-cache show runsc >/dev/null 2>&1; then
  say "warning: no runsc package in this host's apt sources; functions run under runc"
  need=("${need[@]/runsc/}")
fi
mapfile -t need < <(printf '%s\n' "${need[@]}" | grep . | sort -u)
if [ ${#need[@]} -gt 0 ]; then
  say "installing ${need[*]}"
  apt-get install -y -qq --no-install-recommends "${need[@]}" >/dev/null
fi
# The release's own Node until the agent is placed, then the placed copy (the unit runs that one).
node_bin="$release/node/bin/node"
chmod 755 "$node_bin"

# --- gVisor as a Docker runtime ------------------------------------------------------------
if command -v runsc >/dev/null 2>&1; then
  changed="$(PATH="$(dirname "$node_bin"):$PATH" bash "$release/scripts/images/register-runsc.sh" "$DAEMON_JSON" "$(command -v runsc)")" \
    || die "could not register runsc in $DAEMON_JSON"
  if [ "$changed" = yes ]; then
    say "registered runsc as a Docker runtime in $DAEMON_JSON"
    # SIGHUP makes dockerd re-read its runtimes without stopping containers.
    if systemd_runs && systemctl is-active --quiet docker.service; then systemctl reload docker.service
    elif [ -f /var/run/docker.pid ]; then kill -HUP "$(cat /var/run/docker.pid)" || true
    else say "dockerd loads the runsc runtime at its next start"
    fi
  fi
fi

if ! docker_answers && systemd_runs; then systemctl enable --now docker.service >/dev/null 2>&1 || true; fi
docker_answers || die "no Docker Engine answers on this host (start dockerd, then re-run)"

# --- the agent -----------------------------------------------------------------------------
# A fresh copy next to the old one, then two renames: a running agent keeps the file it loaded.
rm -rf "$PREFIX.new" "$PREFIX.old"
install -d -m 755 "$PREFIX.new" "$PREFIX.new/agent" "$PREFIX.new/scripts"
cp "$release/gcfaas-agent.mjs" "$PREFIX.new/"
cp -r "$release/node" "$PREFIX.new/node"
chmod 755 "$PREFIX.new/node/bin/node"
[ -f "$release/VERSION" ] && cp "$release/VERSION" "$PREFIX.new/"
cp -r "$release/agent/runtimes" "$PREFIX.new/agent/runtimes"
cp -r "$release/scripts/images" "$PREFIX.new/scripts/images"
[ -d "$PREFIX" ] && mv "$PREFIX" "$PREFIX.old"
mv "$PREFIX.new" "$PREFIX"
rm -rf "$PREFIX.old"
node_bin="$PREFIX/node/bin/node"
say "placed the agent $(cat "$PREFIX/VERSION" 2>/dev/null || echo) in $PREFIX, with Node.js $("$node_bin" --version)"

# --- runtime images ------------------------------------------------------------------------
if [ -n "$images_tar" ]; then
  say "loading runtime images from $images_tar"
  docker load -q -i "$images_tar"
elif [ "$build_images" -eq 1 ]; then
  dirs=()
  for l in "${image_langs[@]}"; do dirs+=("$(lang_dir "$l")"); done
  say "building runtime images (${dirs[*]}); present, current ones are kept"
  bash "$PREFIX/scripts/images/build-offline.sh" "${dirs[@]}"
fi

# --- settings file -------------------------------------------------------------------------
install -d -m 755 /etc/gcfaas
install -d -m 700 "$state_dir"
# The token in a file of its own that root alone reads: not on the agent's command line, not in
# its unit, and not in the environment that every process the agent starts would inherit.
(
  umask 077
  printf '%s\n' "$token" >"$TOKEN_FILE.tmp"
)
chmod 600 "$TOKEN_FILE.tmp"
mv "$TOKEN_FILE.tmp" "$TOKEN_FILE"
say "wrote $TOKEN_FILE"
managed='^(GCFAAS_URL|GCFAAS_AGENT_TOKEN|GCFAAS_AGENT_TOKEN_FILE|GCFAAS_NODE_ID|GCFAAS_SLOTS|GCFAAS_LANGS|GCFAAS_STATE_DIR|GCFAAS_IMAGE_TAG|GCFAAS_EGRESS|GCFAAS_EGRESS_ALLOW|GCFAAS_INSECURE)='
(
  umask 077
  {
    echo "# gcfaas agent settings (install-agent.sh); every variable is in docs/agents.md"
    echo "GCFAAS_URL=$url"
    echo "GCFAAS_AGENT_TOKEN_FILE=$TOKEN_FILE"
    echo "GCFAAS_NODE_ID=$node_id"
    [ -n "$slots" ] && echo "GCFAAS_SLOTS=$slots"
    [ -n "$langs" ] && echo "GCFAAS_LANGS=$langs"
    echo "GCFAAS_STATE_DIR=$state_dir"
    [ "$egress" = 1 ] && echo "GCFAAS_EGRESS=1"
    # The agent refuses plain http to another host by itself too, unless told the same.
    [ "$insecure" -eq 1 ] && [[ "$url" == http://* ]] && echo "GCFAAS_INSECURE=1"
    [ "$egress" = 1 ] && [ -n "$egress_allow" ] && echo "GCFAAS_EGRESS_ALLOW=$egress_allow"
    # Images built under another tag than "offline" are the ones this agent must use.
    [ -n "${GCFAAS_IMAGE_TAG:-}" ] && echo "GCFAAS_IMAGE_TAG=$GCFAAS_IMAGE_TAG"
    # Settings the operator added by hand survive a re-run.
    [ -f "$ENV_FILE" ] && grep -Ev "$managed|^# gcfaas agent settings" "$ENV_FILE" || true
  } >"$ENV_FILE.tmp"
)
chmod 600 "$ENV_FILE.tmp"
mv "$ENV_FILE.tmp" "$ENV_FILE"
say "wrote $ENV_FILE"

# --- network egress: kernel settings the sandboxed agent may not change itself ---------------
# ProtectKernelTunables and ProtectKernelModules keep the agent from writing /proc/sys and loading
# modules, so what its egress policy needs is set here, and kept across reboots.
if [ "$egress" = 1 ]; then
  install -d -m 755 /etc/modules-load.d /etc/sysctl.d
  echo br_netfilter >/etc/modules-load.d/gcfaas-egress.conf
  printf '%s\n' "# gcfaas agent --egress: forwarding for the egress bridge, and bridged frames through iptables" \
    "# (the policy that keeps one function from another's container)" \
    net.ipv4.ip_forward=1 net.bridge.bridge-nf-call-iptables=1 net.bridge.bridge-nf-call-ip6tables=1 >/etc/sysctl.d/60-gcfaas-egress.conf
  modprobe br_netfilter 2>/dev/null || true
  sysctl -q -p /etc/sysctl.d/60-gcfaas-egress.conf >/dev/null || die "could not apply /etc/sysctl.d/60-gcfaas-egress.conf (is br_netfilter available?)"
  say "egress on: functions that ask for it reach public addresses${egress_allow:+ and $egress_allow}"
else
  rm -f /etc/modules-load.d/gcfaas-egress.conf /etc/sysctl.d/60-gcfaas-egress.conf
fi

# --- the service ---------------------------------------------------------------------------
install -d -m 755 "$(dirname "$UNIT_FILE")"
cat >"$UNIT_FILE" <<EOF
[Unit]
Description=gcfaas agent: runs builds and tasks of the control plane in Docker
After=network-online.target docker.service
Wants=network-online.target docker.service

[Service]
Type=simple
EnvironmentFile=$ENV_FILE
WorkingDirectory=$PREFIX
ExecStart=$node_bin $PREFIX/gcfaas-agent.mjs
# SIGTERM drains (running work finishes, nothing new is taken); only the agent gets it, so the
# children it waits for are not cut short.
KillSignal=SIGTERM
KillMode=mixed
TimeoutStopSec=$STOP_TIMEOUT_SECONDS
Restart=always
RestartSec=5
# The installer builds the runtime images, not the agent at its start: unpacking a root file system
# writes setuid files, which RestrictSUIDSGID below refuses. A line in the env file overrides this.
Environment=GCFAAS_NO_BUILD_IMAGES=1
# Hardening. The agent runs as root (it drives Docker and loop-mounts each build's space), so what
# it may do is narrowed here. The file system settings give the service a mount namespace of its
# own, where a build space mounted only there would be invisible to the Docker Engine (dockerd would
# bind the empty folder beneath into the build container): GCFAAS_ENGINE_MOUNT_NS has the agent
# mount each space in PID 1's namespace as well (nsenter), which needs setns (RestrictNamespaces=mnt)
# and CAP_SYS_PTRACE to open /proc/1/ns/mnt; the ptrace system call itself stays filtered (@debug).
# Not set: PrivateDevices (it hides the loop devices builds need; DeviceAllow narrows /dev instead).
# docs/security.md has the details.
Environment=GCFAAS_ENGINE_MOUNT_NS=/proc/1/ns/mnt
ProtectSystem=strict
ReadWritePaths=$state_dir$([ "$egress" = 1 ] && printf '\n%s' "# iptables' lock, for --egress (the legacy backend takes it; nf_tables ignores it)." "ReadWritePaths=-/run/xtables.lock")
ProtectHome=yes
PrivateTmp=yes
ProtectKernelTunables=yes
ProtectKernelModules=yes
ProtectKernelLogs=yes
ProtectControlGroups=yes
ProtectClock=yes
ProtectHostname=yes
DeviceAllow=block-loop rw
DeviceAllow=/dev/loop-control rw
NoNewPrivileges=yes
RestrictSUIDSGID=yes
LockPersonality=yes
RestrictRealtime=yes
RestrictNamespaces=mnt
SystemCallArchitectures=native
SystemCallFilter=~@clock @cpu-emulation @debug @module @obsolete @raw-io @reboot @swap
RestrictAddressFamilies=AF_UNIX AF_INET AF_INET6 AF_NETLINK
# Capabilities the agent never uses (it keeps CAP_SYS_ADMIN for its loop mounts).
CapabilityBoundingSet=~CAP_SYS_MODULE CAP_SYS_RAWIO CAP_SYS_BOOT CAP_SYS_TIME CAP_SYSLOG CAP_WAKE_ALARM CAP_AUDIT_CONTROL CAP_AUDIT_READ CAP_AUDIT_WRITE CAP_MAC_ADMIN CAP_MAC_OVERRIDE CAP_BPF CAP_PERFMON CAP_LINUX_IMMUTABLE CAP_SYS_PACCT CAP_SYS_TTY_CONFIG CAP_BLOCK_SUSPEND CAP_LEASE

[Install]
WantedBy=multi-user.target
EOF
chmod 644 "$UNIT_FILE"
say "wrote $UNIT_FILE"

if systemd_runs; then
  systemctl daemon-reload
  systemctl enable gcfaas-agent.service >/dev/null 2>&1
  # restart: a re-run starts the new version and settings; the old process drains first.
  systemctl restart gcfaas-agent.service
  say "gcfaas-agent is running; follow its log with: journalctl -u gcfaas-agent -f"
else
  say "systemd does not run here (a chroot or container?): the service was not started."
  say "start it by hand with: set -a; . $ENV_FILE; set +a; $node_bin $PREFIX/gcfaas-agent.mjs"
  say "under systemd, follow its log with: journalctl -u gcfaas-agent -f"
fi
