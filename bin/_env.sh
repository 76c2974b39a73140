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
if [ ! -f "$STAMP" ]; then
  "$VENV/bin/pip" install -q --upgrade pip >/dev/null 2>&1 || true
  # The server brings the client (./clientsdk) as a path dependency (setup.py); for development the
  # client is then installed editable over it, so that edits to either are live.
  if [ "${1:-base}" = "test" ]; then
    "$VENV/bin/pip" install -q -e ".[test]"
  else
    "$VENV/bin/pip" install -q -e .
  fi
  "$VENV/bin/pip" install -q --no-deps -e ./clientsdk
  touch "$STAMP"
fi
export PATH="$VENV/bin:$PATH"
# bin/test, bin/bench and bin/fuzz: the settings refuse the public development SECRET_KEY, so the tests,
# benchmarks and the servers they start share a random one of their own (bin/serve keeps its own).
if [ "${1:-base}" = "test" ]; then
  export SECRET_KEY="${SECRET_KEY:-test-$(python -c 'import secrets; print(secrets.token_urlsafe(50))')}"
fi
