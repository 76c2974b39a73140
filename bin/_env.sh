# Shared by bin/serve, bin/test and bin/bench: a virtualenv with the project installed.
set -euo pipefail
ROOT="$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)"
cd "$ROOT"
PY="${PYTHON:-python3}"
VENV="$ROOT/.venv"
if [ ! -x "$VENV/bin/python" ]; then
  "$PY" -m venv "$VENV"
fi
# Reinstall only when a pyproject.toml changed since the last install.
STAMP="$VENV/.installed-$(cat pyproject.toml setup.py clientsdk/pyproject.toml | sha1sum | cut -c1-12)-${1:-base}"
# The server brings the client (./clientsdk) as a path dependency (setup.py); for development the
# client is then installed editable over it, so that edits to either are live. Installs byte-compile:
# where PYTHONDONTWRITEBYTECODE is set, every later command would compile its imports again.
pip_install() {
  "$VENV/bin/pip" install -q --upgrade pip >/dev/null 2>&1 || true
  "$VENV/bin/pip" install -q -e "$1"
  "$VENV/bin/pip" install -q --no-deps -e ./clientsdk
}
# bin/test's own virtualenv installs with uv, which resolves and installs the same versions as pip in
# 23 s against pip's 54-80 s on 2 cores (docs/testing.md); uv reads no pip configuration (a mirror in
# pip.conf), so a failed uv install falls back to pip. bin/serve, the user's path, installs with pip.
uv_install() {
  "$VENV/bin/pip" install -q uv >/dev/null 2>&1 &&
    VIRTUAL_ENV="$VENV" "$VENV/bin/uv" pip install -q --compile-bytecode -e "$1" &&
    VIRTUAL_ENV="$VENV" "$VENV/bin/uv" pip install -q --compile-bytecode --no-deps -e ./clientsdk
}
if [ ! -f "$STAMP" ]; then
  if [ "${1:-base}" = "test" ]; then
    uv_install ".[test]" || { echo "uv could not install the test environment; installing with pip" >&2; pip_install ".[test]"; }
  else
    pip_install .
  fi
  touch "$STAMP"
fi
export PATH="$VENV/bin:$PATH"
# bin/test, bin/bench and bin/fuzz: the settings refuse the public development SECRET_KEY, so the tests,
# benchmarks and the servers they start share a random one of their own (bin/serve keeps its own).
if [ "${1:-base}" = "test" ]; then
  export SECRET_KEY="${SECRET_KEY:-test-$(python -c 'import secrets; print(secrets.token_urlsafe(50))')}"
fi
