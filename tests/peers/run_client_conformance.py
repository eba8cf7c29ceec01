"""Run the official MCP conformance suite's *client* scenarios against toolhost's upstream layer.

The client under test is ``tests/peers/conformance_client.py`` (a ``ServerManager`` with one
streamable-HTTP server, as ``toolhost serve`` uses it). The ``auth/*`` scenarios run against the
suite's own authorization servers with ``toolhost.oauth`` (:mod:`host.upstream.oauth`);
``--without-auth`` leaves them out.

Usage::

    .venv/bin/python tests/peers/run_client_conformance.py                       # suite 0.1.16
    .venv/bin/python tests/peers/run_client_conformance.py --suite 0.2 --spec-version 2026-07-28 --check

``--check`` exits 1 when a scenario fails that ``tests/peers/conformance-baseline.json`` does not
list (keys ``client/<suite>/<spec version or default>``), each listed one with its reason.
"""

from __future__ import annotations

import argparse
import json
import os
import re
import subprocess
import sys
import tempfile
from concurrent.futures import ThreadPoolExecutor
from pathlib import Path

from run_conformance import BASELINE, PEERS, SUITES, ScenarioResult, _bin, regressions

CLIENT = Path(__file__).with_name("conformance_client.py")
_LINE = re.compile(r"^\s*-\s+(\S+)\s+\[([^\]]*)\]")
_RESULT = re.compile(r"Passed: (\d+)/\d+, (\d+) failed")


def _node(args: list[str], timeout: float) -> subprocess.CompletedProcess[str]:
    env = dict(os.environ, PATH=f"{Path(sys.executable).parent}{os.pathsep}{os.environ.get('PATH', '')}")
    return subprocess.run([_bin("node"), *args], cwd=PEERS, env=env, capture_output=True, text=True, timeout=timeout)


def client_scenarios(suite: str, spec_version: str | None, *, with_auth: bool = True) -> list[str]:
    """The suite's client scenario names (for ``spec_version`` when given), ``auth/*`` left out unless asked."""
    args = [str(SUITES[suite]), "list", "--client"]
    if spec_version:
        args += ["--spec-version", spec_version]
    out = _node(args, 60).stdout
    names = [m.group(1) for line in out.splitlines() if (m := _LINE.match(line))]
    if not names:  # 0.1.16 lists bare names
        names = [line.strip()[2:].split()[0] for line in out.splitlines() if line.strip().startswith("- ")]
    return [n for n in names if with_auth or not n.startswith("auth/")]


PARALLEL = 3
"""Scenarios run at once (each is a suite process with its own servers on free ports)."""


def run_client(suite: str, spec_version: str | None, *, with_auth: bool = True) -> dict[str, ScenarioResult]:
    """Run every client scenario once against ``conformance_client.py`` (:data:`PARALLEL` at a time).

    Returns the results by scenario."""
    command = f"{sys.executable} {CLIENT}"
    with tempfile.TemporaryDirectory(prefix="conformance-client-") as tmp:
        def one(name: str) -> ScenarioResult:
            args = [str(SUITES[suite]), "client", "--command", command, "--scenario", name, "-o", tmp]
            if spec_version:
                args += ["--spec-version", spec_version]
            out = _node(args, 300)
            m = _RESULT.search(out.stdout + out.stderr)
            # no summary (the suite itself failed): one failed check, so it never passes by accident
            return ScenarioResult(name, int(m.group(1)), int(m.group(2))) if m else ScenarioResult(name, 0, 1)

        names = client_scenarios(suite, spec_version, with_auth=with_auth)
        with ThreadPoolExecutor(max_workers=PARALLEL) as pool:
            return dict(zip(names, pool.map(one, names), strict=True))


def baseline_key(suite: str, spec_version: str | None) -> str:
    return f"client/{suite}/{spec_version or 'default'}"


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description="MCP conformance client scenarios against toolhost's upstream layer")
    parser.add_argument("--suite", choices=sorted(SUITES), default="0.1")
    parser.add_argument("--spec-version", default=None, help="e.g. 2026-07-28 (default: the suite's own default)")
    parser.add_argument("--without-auth", action="store_true", help="leave the auth/* scenarios out")
    parser.add_argument("--check", action="store_true", help="exit 1 on failures not in the baseline")
    ns = parser.parse_args(argv)
    results = run_client(ns.suite, ns.spec_version, with_auth=not ns.without_auth)
    print(f"client scenarios, suite {ns.suite}, spec {ns.spec_version or 'default'}")
    for name in sorted(results):
        r = results[name]
        print(f"{name:45} {'pass' if r.ok else 'FAIL':>6}  ({r.passed} checks passed, {r.failed} failed)")
    ok = sum(1 for r in results.values() if r.ok)
    print(f"toolhost client: {ok}/{len(results)} scenarios passed")
    allowed = json.loads(BASELINE.read_text()).get(baseline_key(ns.suite, ns.spec_version), {})
    bad = regressions(results, allowed)
    if bad:
        print(f"REGRESSION against the baseline: {', '.join(bad)}")
    return 1 if (ns.check and bad) else 0


if __name__ == "__main__":
    raise SystemExit(main())
