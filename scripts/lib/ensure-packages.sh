# Sourced by start.sh and test.sh: `ensure_packages <file of a complete install> [npm ci flags]`
# runs `npm ci` when node_modules is missing or was installed from another package-lock.json.
# Compared by content (a hash kept in node_modules after each install), not by mtime: a fresh
# checkout's lock file is newer than any install, and `npm ci` there would wipe a good one. A
# node_modules that is a link (a git worktree sharing another tree's packages) is never reinstalled
# through: `npm ci` would empty the tree it points to.
ensure_packages() {
  local marker="$1"
  shift
  local want stamp=node_modules/.gcfaas-package-lock.sha256
  want=$(sha256sum package-lock.json | cut -d' ' -f1)
  if [ -e "$marker" ] && [ -f "$stamp" ] && [ "$(cat "$stamp")" = "$want" ]; then return 0; fi
  if [ -L node_modules ]; then
    echo "node_modules is a link to $(readlink node_modules), not installed from this package-lock.json;" >&2
    echo "npm ci through it would empty that tree: install there (or remove the link) and run again." >&2
    return 1
  fi
  npm ci --no-audit --no-fund "$@"
  echo "$want" > "$stamp"
}
