"""Randomized fault injection (kills, hangs, garbage, restarts under concurrent calls): every call
gets exactly one honest result and none outlives its timeout. ``TOOLHOST_FAULT_RUNS`` sets the
number of runs (default 30; e.g. 300 for a long soak); the figures print with ``-s``."""

from __future__ import annotations

import os

import anyio
import pytest

from tests.upstream.faults import run_faults, table

pytestmark = pytest.mark.anyio

RUNS = int(os.environ.get("TOOLHOST_FAULT_RUNS", "30"))


@pytest.mark.timeout(90 + RUNS * 10)
async def test_every_call_gets_one_honest_result_and_nothing_hangs(tmp_path):
    runs = RUNS
    with anyio.fail_after(60 + runs * 10):
        stats = await run_faults(runs, tmp_path, seed=int(os.environ.get("TOOLHOST_FAULT_SEED", "0")))
    print("\n" + table(stats))
    print("\n".join(stats.dishonest[:20]))
    assert stats.runs == runs and stats.calls == runs * 3 * 6
    assert (stats.lost, stats.duplicated, stats.hangs) == (0, 0, 0)
    assert stats.dishonest == []
    assert stats.results == stats.calls
    assert stats.statuses["ok"] > 0 and stats.statuses["upstream_unavailable, not sent"] > 0
    assert stats.statuses["upstream_unavailable, sent (outcome unknown)"] > 0
