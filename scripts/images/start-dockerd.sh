#!/usr/bin/env bash
# Starts the Docker Engine (dockerd) the way a system service would, unless one answers already:
#
# - detached: its own session (setsid), so a Ctrl-C in the terminal that ran the start command does
#   not reach it. It serves every container on the machine, other programs' included; stopping it is
#   a decision for its service manager, not a side effect of stopping gcfaas.
# - after the previous engine: a dockerd named by the pid file that does not answer is starting or
#   stopping; this waits until it answers (then there is nothing to do) or exits. Starting beside a
#   dying engine fails ("pid file found", "timeout waiting for containerd to start").
# - over a stale pid file: dockerd refuses to start while its pid file names any live process, and
#   after a crash that pid may belong to another program by now. Such a file (a pid that is gone, a
#   zombie or not a dockerd) is removed; one naming a live dockerd never is. Likewise the pid file
#   of the containerd that dockerd runs for itself.
# - with a retry: an engine that exits before it answers (a containerd of the old one still going
#   away) is started again, twice at most.
#
# Where the engine lives can be changed, so that a second engine runs beside the machine's own (the
# tests do so; the defaults are dockerd's):
#   DOCKER_HOST=unix:///path.sock   its API socket (the docker client reads the same variable)
#   GCFAAS_DOCKERD_PIDFILE          default /var/run/docker.pid
#   GCFAAS_DOCKERD_DATA_ROOT        default dockerd's (/var/lib/docker)
#   GCFAAS_DOCKERD_EXEC_ROOT        default dockerd's (/var/run/docker)
#   GCFAAS_DOCKERD_LOG              default /var/log/gcfaas-dockerd.log
#   GCFAAS_DOCKERD_WAIT             seconds to wait for an engine to answer or exit, default 90
set -euo pipefail

PIDFILE="${GCFAAS_DOCKERD_PIDFILE:-/var/run/docker.pid}"
LOG="${GCFAAS_DOCKERD_LOG:-/var/log/gcfaas-dockerd.log}"
WAIT="${GCFAAS_DOCKERD_WAIT:-90}"

say() { echo "start-dockerd: $*"; }
# A stopped or wedged engine accepts connections and never answers: every probe is bounded.
daemon_answers() { timeout 10 docker version --format '{{.Server.Version}}' >/dev/null 2>&1; }
# Alive and not a zombie: where nothing reaps orphans (some containers' init), a dead engine stays
# a zombie, and dockerd takes a zombie's pid in its pid file for a running engine.
alive() { [ -n "$1" ] && [ -r "/proc/$1/stat" ] && ! sed 's/.*) //' "/proc/$1/stat" 2>/dev/null | grep -q '^Z'; }
is_dockerd() { alive "$1" && [ "$(cat "/proc/$1/comm" 2>/dev/null)" = dockerd ]; }
pid_in_file() { head -n 1 "$PIDFILE" 2>/dev/null | tr -cd 0-9 || true; }

# Live engines of this pid file, found by their command lines rather than the file: an engine that
# is stopping may have removed the file already (and removes it again, a new engine's, on exit).
engines() {
  local want d pf i argv
  want="$(realpath -m "$PIDFILE")"
  for d in /proc/[0-9]*; do
    is_dockerd "${d#/proc/}" || continue
    pf=/var/run/docker.pid
    mapfile -d '' argv <"$d/cmdline" 2>/dev/null || continue
    for i in "${!argv[@]}"; do
      case "${argv[$i]}" in
        --pidfile|-p) pf="${argv[$((i + 1))]:-}" ;;
        --pidfile=*|-p=*) pf="${argv[$i]#*=}" ;;
      esac
    done
    [ "$(realpath -m "$pf")" = "$want" ] && echo "${d#/proc/}"
  done
  return 0
}

# Waits until the engine `pid` answers (0) or exits (1); fails after WAIT seconds.
wait_for() {
  local pid="$1"
  for _ in $(seq 1 "$WAIT"); do
    daemon_answers && return 0
    alive "$pid" || return 1
    sleep 1
  done
  echo "start-dockerd: dockerd $pid neither answers nor exits after ${WAIT} s; see $LOG" >&2
  exit 1
}

daemon_answers && exit 0
command -v dockerd >/dev/null 2>&1 || { echo "start-dockerd: dockerd is not installed and no Docker daemon answers" >&2; exit 1; }

for pid in $(engines); do
  say "dockerd $pid does not answer: waiting for it to come up or to exit"
  wait_for "$pid" && exit 0
  say "dockerd $pid has exited"
done
pid="$(pid_in_file)"
if [ -e "$PIDFILE" ] && ! is_dockerd "$pid"; then
  say "removing the stale pid file $PIDFILE (pid ${pid:-none} is not a running dockerd)"
  rm -f "$PIDFILE"
fi
# The same for the containerd that dockerd runs for itself: it dies with a killed engine, and where
# nothing reaps it, the new engine takes the zombie for a running containerd and times out
# waiting for its socket. A live one is left alone (the new engine uses it).
cpidfile="${GCFAAS_DOCKERD_EXEC_ROOT:-/var/run/docker}/containerd/containerd.pid"
cpid="$(head -n 1 "$cpidfile" 2>/dev/null | tr -cd 0-9 || true)"
if [ -e "$cpidfile" ] && ! { alive "$cpid" && [ "$(cat "/proc/$cpid/comm" 2>/dev/null)" = containerd ]; }; then
  say "removing the stale pid file $cpidfile (pid ${cpid:-none} is not a running containerd)"
  rm -f "$cpidfile"
fi

args=(--iptables=false --bridge=none --pidfile "$PIDFILE")
case "${DOCKER_HOST:-}" in
  "") ;;
  unix://*) args+=(-H "$DOCKER_HOST") ;;
  *) echo "start-dockerd: DOCKER_HOST=$DOCKER_HOST answers nothing, and only a unix:// socket can be started here" >&2; exit 1 ;;
esac
[ -z "${GCFAAS_DOCKERD_DATA_ROOT:-}" ] || args+=(--data-root "$GCFAAS_DOCKERD_DATA_ROOT")
[ -z "${GCFAAS_DOCKERD_EXEC_ROOT:-}" ] || args+=(--exec-root "$GCFAAS_DOCKERD_EXEC_ROOT")
mkdir -p "$(dirname "$LOG")"

for attempt in 1 2 3; do
  say "starting dockerd"
  # A background job of this (non-interactive) shell is no process group leader, so setsid makes it
  # lead a new session without forking again: $! is the engine itself.
  setsid dockerd "${args[@]}" </dev/null >>"$LOG" 2>&1 &
  pid=$!
  disown "$pid" 2>/dev/null || true
  if wait_for "$pid"; then
    say "dockerd is up (pid $pid)"
    exit 0
  fi
  say "dockerd exited before answering (attempt $attempt); its log's last lines:"
  tail -n 5 "$LOG" >&2 || true
  sleep 2
done
echo "start-dockerd: dockerd did not start; see $LOG" >&2
exit 1
