# shellcheck shell=bash
# Sourced by scripts/test.

# The Python tools of the test suite, in a virtual environment of their own under the git-ignored
# data directory: nothing is installed system-wide.
# - schemathesis (the contract fuzzer) and the rest of test/fuzz/requirements.txt;
# - the quota service's Python SDK, installed as its README says (`pip install ./sdk/python`, not
#   editable: the tests import what that line installs), with its test tools and the tools that
#   build its wheel and sdist (build, hatchling), pinned in sdk/python/requirements-test.txt.
# Quick when nothing changed: the venv keeps a copy of the requirements it was made from (made
# again only when they differ) and a hash of the SDK's files (reinstalled only when it differs).
PYTHON_REQUIREMENTS=(test/fuzz/requirements.txt sdk/python/requirements-test.txt)
PYTHON_SDK=sdk/python

ensure_python_tools() {
  local venv=${STACK_DATA_DIR:-.data}/venv
  local installed=$venv/requirements.installed
  if ! [[ -x $venv/bin/schemathesis ]] || ! cmp -s <(cat "${PYTHON_REQUIREMENTS[@]}") "$installed"; then
    make_python_venv "$venv" || return 1
  fi
  ensure_python_sdk "$venv"
}

make_python_venv() {
  local venv=$1
  if ! command -v python3 >/dev/null; then
    echo "python3 is needed (>= 3.10) for the contract fuzzer and the SDK: apt-get install python3 python3-venv" >&2
    return 1
  fi
  # Debian splits venv (and the pip it bootstraps) out of python3.
  if ! python3 -c 'import ensurepip, venv' 2>/dev/null; then
    echo "installing python3-venv..."
    apt-get update -qq && apt-get install -y -qq python3-venv >/dev/null
  fi
  echo "installing the Python test tools into $venv (pinned in ${PYTHON_REQUIREMENTS[*]})..."
  rm -rf "$venv"
  python3 -m venv "$venv"
  local requirement args=()
  for requirement in "${PYTHON_REQUIREMENTS[@]}"; do args+=(-r "$requirement"); done
  # One resolution for both files: a package both pin must have the same pin in each.
  "$venv/bin/pip" install --quiet --disable-pip-version-check --no-input "${args[@]}"
  cat "${PYTHON_REQUIREMENTS[@]}" >"$venv/requirements.installed"
}

# The hash of what `pip install ./sdk/python` installs (its metadata, README, licence and package).
python_sdk_hash() {
  (
    cd "$PYTHON_SDK" &&
      find pyproject.toml README.md LICENSE src -type f ! -path '*/__pycache__/*' -print0 |
      LC_ALL=C sort -z | xargs -0 sha256sum | sha256sum | cut -d' ' -f1
  )
}

ensure_python_sdk() {
  local venv=$1
  local stamp=$venv/sdk.installed
  local hash
  hash=$(python_sdk_hash)
  if [[ -f $stamp && $(cat "$stamp") == "$hash" ]]; then
    return 0
  fi
  echo "installing the quota SDK into $venv (pip install ./$PYTHON_SDK)..."
  "$venv/bin/pip" uninstall --quiet --yes quota-client >/dev/null 2>&1 || true
  "$venv/bin/pip" install --quiet --disable-pip-version-check --no-input "./$PYTHON_SDK"
  echo "$hash" >"$stamp"
}
