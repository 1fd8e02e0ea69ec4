# shellcheck shell=bash
# Sourced by scripts/test.

# The Python tools of the test suite (schemathesis, the contract fuzzer), pinned in
# test/fuzz/requirements.txt, in a virtual environment of their own under the git-ignored
# data directory: nothing is installed system-wide. Quick when nothing changed: the venv keeps
# a copy of the requirements it was made from, and is made again only when they differ.
ensure_python_tools() {
  local requirements=test/fuzz/requirements.txt
  local venv=${STACK_DATA_DIR:-.data}/venv
  local installed=$venv/requirements.installed
  if [[ -x $venv/bin/schemathesis ]] && cmp -s "$requirements" "$installed"; then
    return 0
  fi
  if ! command -v python3 >/dev/null; then
    echo "python3 is needed (>= 3.10) for the contract fuzzer: apt-get install python3 python3-venv" >&2
    return 1
  fi
  # Debian splits venv (and the pip it bootstraps) out of python3.
  if ! python3 -c 'import ensurepip, venv' 2>/dev/null; then
    echo "installing python3-venv..."
    apt-get update -qq && apt-get install -y -qq python3-venv >/dev/null
  fi
  echo "installing the Python test tools into $venv (pinned in $requirements)..."
  rm -rf "$venv"
  python3 -m venv "$venv"
  "$venv/bin/pip" install --quiet --disable-pip-version-check --no-input -r "$requirements"
  cp "$requirements" "$installed"
}
