# shellcheck shell=bash
# Sourced by scripts/start and scripts/test.

# Installs the npm dependencies exactly as locked, when node_modules is missing or older than
# package-lock.json. Node.js and npm themselves come with the machine (Node >= 20.19).
ensure_node_deps() {
  if ! command -v node >/dev/null || ! command -v npm >/dev/null; then
    echo "node and npm are needed (Node.js >= 20.19): install them, e.g. apt-get install nodejs npm" >&2
    return 1
  fi
  local marker=node_modules/.package-lock.json
  if [[ ! -f $marker || package-lock.json -nt $marker ]]; then
    echo "installing npm dependencies (locked versions)..."
    # Not `npm ci`: the registry reachable here lacks other platforms' optional binaries
    # (@swc/core-darwin-*, ...), so npm writes a lock without them and `npm ci` then refuses
    # it as out of sync. `npm install` installs exactly the locked versions all the same.
    npm install --no-audit --no-fund --loglevel=error
  fi
}
