#!/usr/bin/env bash
# Set up everything the tests need and run them. Works on a fresh machine with only Python 3.11:
#   bash scripts/test.sh            (extra arguments go to pytest, e.g. -k search)
# Each scripts/setup.d/*.sh (in name order) installs one kind of test peer (npm packages, system
# packages); they are sourced after the venv exists, with PY, VENV and ROOT set.
set -euo pipefail
cd "$(dirname "$0")/.."
ROOT="$PWD"

PY="${PYTHON:-}"
if [ -z "$PY" ]; then
  if command -v python3.11 >/dev/null 2>&1; then PY=python3.11; else PY=python3; fi
fi
"$PY" -c 'import sys; assert sys.version_info[:2] == (3, 11), f"toolhost needs Python 3.11, found {sys.version.split()[0]}"'

[ -x .venv/bin/python ] || "$PY" -m venv .venv
VENV="$ROOT/.venv"
.venv/bin/python -m pip install --quiet --disable-pip-version-check -e '.[test]'

# Lint first: a finding fails the run before any test starts (settings in pyproject's [tool.ruff]).
if ! .venv/bin/ruff check --quiet .; then
  echo "scripts/test.sh: lint failed: ruff found the problems listed above." >&2
  echo "  Fix them (\`.venv/bin/ruff check --fix .\` handles the safe ones), then run this script again." >&2
  exit 1
fi

for step in scripts/setup.d/*.sh; do
  [ -f "$step" ] || continue
  # shellcheck source=/dev/null
  source "$step"
done

# The conformance tests append the pass counts they checked here; printed after the run.
TOOLHOST_CONFORMANCE_REPORT="$(mktemp -t toolhost-conformance.XXXXXX)"
export TOOLHOST_CONFORMANCE_REPORT
trap 'rm -f "$TOOLHOST_CONFORMANCE_REPORT"' EXIT
status=0
.venv/bin/python -m pytest "$@" || status=$?
if [ -s "$TOOLHOST_CONFORMANCE_REPORT" ]; then
  echo "MCP conformance checked by this run (tests/servers/test_conformance*.py):"
  sed 's/^/  /' "$TOOLHOST_CONFORMANCE_REPORT"
fi
exit "$status"
