"""The official MCP conformance suite (server scenarios) against our fixture, directly and through toolhost.

Runs ``tests/peers/run_conformance.py --check`` for the suite versions CI pins and fails on any
scenario that fails without a reason in ``tests/peers/conformance-baseline.json``. About 2 minutes.
At 2026-07-28 toolhost speaks 2026-07-28 to the fixture too (input-required results end to end).
"""

from __future__ import annotations

import sys
from pathlib import Path

import pytest

sys.path.insert(0, str(Path(__file__).resolve().parents[1] / "peers"))
import run_conformance


@pytest.mark.parametrize(
    ("suite", "spec_version", "scenarios", "expected_scenarios"),
    [("0.1", None, "active", 30), ("0.2", "2025-11-25", "all", 33), ("0.2", "2026-07-28", "all", 40)],
)
def test_conformance_server_scenarios_match_the_anchor(suite, spec_version, scenarios, expected_scenarios):
    def key(t):
        return run_conformance.baseline_key(suite, spec_version, t, scenarios)

    baseline = run_conformance.json.loads(run_conformance.BASELINE.read_text())
    anchor = run_conformance.run_target("anchor", suite, spec_version, scenarios)
    gateway = run_conformance.run_target("toolhost", suite, spec_version, scenarios)
    where = f"server scenarios, suite {suite}, spec {spec_version or 'default'}, {scenarios}"
    run_conformance.record_counts(f"{where}, fixture directly", anchor)
    run_conformance.record_counts(f"{where}, through toolhost", gateway)
    assert len(anchor) == expected_scenarios and set(gateway) == set(anchor)
    assert run_conformance.regressions(anchor, baseline[key("anchor")]) == []
    assert run_conformance.regressions(gateway, baseline[key("toolhost")]) == []
    # the gateway passes everything the anchor passes (and at 2026-07-28 also http-header-validation,
    # which the bare SDK fails: see the baseline)
    passed = {n for n, r in gateway.items() if r.ok}
    assert passed >= {n for n, r in anchor.items() if r.ok}
    assert len(passed) == expected_scenarios
