"""The official MCP conformance suite's client scenarios against toolhost's upstream layer.

Runs ``tests/peers/run_client_conformance.py`` for the suite CI pins (0.2.0-alpha.11, both spec
versions; 0.1.16's scenarios are a subset of the 2025-11-25 ones) and fails on any scenario that
fails without a reason in ``tests/peers/conformance-baseline.json``. ``auth/*`` runs against the
suite's own authorization servers (toolhost's upstream OAuth, :mod:`host.upstream.oauth`). About 3 min.
"""

from __future__ import annotations

import json
import sys
from pathlib import Path

import pytest

sys.path.insert(0, str(Path(__file__).resolve().parents[1] / "peers"))
import run_client_conformance
from run_conformance import BASELINE, record_counts, regressions

AUTH = ["basic-cimd", "metadata-default", "metadata-var1", "metadata-var2", "metadata-var3", "pre-registration",
        "scope-from-scopes-supported", "scope-from-www-authenticate", "scope-omitted-when-undefined",
        "scope-retry-limit", "scope-step-up", "token-endpoint-auth-basic", "token-endpoint-auth-none",
        "token-endpoint-auth-post"]
AUTH_2026 = ["authorization-server-migration", "iss-normalized", "iss-not-advertised", "iss-supported",
             "iss-supported-missing", "iss-unexpected", "iss-wrong-issuer", "metadata-issuer-mismatch",
             "offline-access-not-supported", "offline-access-scope", "resource-mismatch"]


@pytest.mark.timeout(400)  # about 33 scenarios, each a Node suite process and a Python client process
@pytest.mark.parametrize(
    ("spec_version", "expected"),
    [
        ("2025-11-25", [f"auth/{a}" for a in AUTH] + [
            "elicitation-sep1034-client-defaults", "initialize", "json-schema-2020-12-preservation", "sse-retry",
            "tools_call"]),
        ("2026-07-28", sorted(f"auth/{a}" for a in AUTH + AUTH_2026) + [
            "http-custom-headers", "http-invalid-tool-headers", "http-standard-headers",
            "json-schema-2020-12-preservation", "json-schema-ref-no-deref", "request-metadata",
            "sep-2322-client-request-state", "tools_call"]),
    ],
)
def test_client_scenarios_pass_as_the_baseline_says(spec_version, expected):
    results = run_client_conformance.run_client("0.2", spec_version)
    record_counts(f"client scenarios, suite 0.2, spec {spec_version}, toolhost's upstream layer", results)
    assert sorted(results) == expected
    allowed = json.loads(BASELINE.read_text())[run_client_conformance.baseline_key("0.2", spec_version)]
    assert regressions(results, allowed) == []
    assert all(r.passed > 0 for r in results.values())  # every scenario really ran its checks
