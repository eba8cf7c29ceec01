"""Rate limits per user and per tool, shared through the database.

Token buckets: a refused call is ``rate_limited`` with the exact ``retry_after_seconds``
(``(1 - tokens) / rate``), other users and other tools are unaffected, and two stores on the same
database (two server processes) share the counters.
"""

from __future__ import annotations

import sys

import anyio
import pytest

from host.access import AccessControl
from host.calls import ResultStatus
from host.config import parse_config
from host.limits import RateLimitConfig, RateLimiter, RateRule
from host.runtime import HostRuntime
from host.store import Store
from registry.policy import Principal

LIMITS = RateLimitConfig(
    per_user=RateRule(calls=5, per_seconds=10),
    per_tool=RateRule(calls=3, per_seconds=30),
    tools={"orders__cancel_order": RateRule(calls=1, per_seconds=60), "server:notes": RateRule(calls=2, per_seconds=8)},
    users={"bot": RateRule(calls=2, per_seconds=100)},
)


def test_per_tool_bucket_with_exact_retry_after(access: AccessControl):
    lim = RateLimiter(access.store, LIMITS)
    assert lim.take("alice", "orders__get_order", "orders", now=1000.0).allowed
    assert lim.take("alice", "orders__get_order", "orders", now=1000.0).allowed
    assert lim.take("alice", "orders__get_order", "orders", now=1000.0).allowed
    refused = lim.take("alice", "orders__get_order", "orders", now=1001.0)
    # per tool: 3 calls / 30 s = 0.1 token/s; 1 s after emptying it holds 0.1 → 9 s to one token
    assert (refused.allowed, refused.retry_after_seconds, refused.limit) == (
        False, 9.0, "per tool orders__get_order: 3 calls per 30 s"
    )
    assert lim.take("alice", "orders__get_order", "orders", now=1010.0).allowed
    assert lim.take("bob", "orders__get_order", "orders", now=1001.0).allowed  # other users unaffected
    once = lim.take("alice", "orders__cancel_order", "orders", now=1010.0)
    again = lim.take("alice", "orders__cancel_order", "orders", now=1025.5)
    assert once.allowed and (again.allowed, again.retry_after_seconds) == (False, 44.5)
    assert again.limit == "per tool orders__cancel_order: 1 calls per 60 s"
    notes = [lim.take("alice", f"notes__t{i}", "notes", now=1030.0).allowed for i in range(3)]
    assert notes == [True, True, False]  # server:notes: 2 calls per 8 s, for every tool of the server


def test_per_user_bucket_and_user_override(access: AccessControl):
    lim = RateLimiter(access.store, LIMITS)
    tools = [f"s__t{i}" for i in range(6)]
    got = [lim.take("carol", t, "s", now=500.0) for t in tools]
    assert [d.allowed for d in got] == [True] * 5 + [False]
    # per user: 5 calls / 10 s = 0.5 token/s, empty → 2 s
    assert (got[5].retry_after_seconds, got[5].limit) == (2.0, "per user: 5 calls per 10 s")
    bot = [lim.take("bot", t, "s", now=500.0) for t in tools[:3]]
    assert [d.allowed for d in bot] == [True, True, False] and bot[2].retry_after_seconds == 50.0


def test_counters_are_shared_by_two_stores_on_one_database(tmp_path):
    a = Store.open(data_dir=tmp_path / "data")
    b = Store.open(data_dir=tmp_path / "data")
    try:
        one, two = RateLimiter(a, LIMITS), RateLimiter(b, LIMITS)
        assert one.take("alice", "orders__cancel_order", "orders", now=100.0).allowed
        refused = two.take("alice", "orders__cancel_order", "orders", now=130.0)
        assert (refused.allowed, refused.retry_after_seconds) == (False, 30.0)
    finally:
        a.close()
        b.close()


@pytest.mark.anyio
async def test_runtime_answers_rate_limited_and_audits_it(tmp_path, access: AccessControl):
    access.users.add("alice")
    access.users.add("bob")
    for u in ("alice", "bob"):
        access.grants.add(u, "orders__get_order")
    cfg = parse_config(
        {"mcpServers": {"orders": {"command": sys.executable, "args": ["-m", "servers.examples.orders"]}}},
        data_dir=tmp_path,
    )
    limiter = RateLimiter(access.store, RateLimitConfig(per_tool=RateRule(calls=2, per_seconds=60)), clock=lambda: 50.0)
    alice, bob = Principal("alice"), Principal("bob")
    args = {"order_id": "A1001"}
    with anyio.fail_after(60):
        async with HostRuntime(cfg, data_dir=tmp_path, policy=access, auditor=access, limiter=limiter) as rt:
            first = [await rt.call("orders__get_order", args, alice) for _ in range(3)]
            other = await rt.call("orders__get_order", args, bob)
            hidden = await rt.call("orders__cancel_order", {"order_id": "A1"}, alice)
    assert [r.status for r in first] == [ResultStatus.OK, ResultStatus.OK, ResultStatus.RATE_LIMITED]
    err = first[2].error
    assert (err.code, err.where, err.retry_after_seconds) == ("rate_limited", "limit", 30.0)
    assert (
        err.message
        == "rate limit reached (per tool orders__get_order: 2 calls per 60 s); retry orders__get_order in 30 s"
    )
    assert other.status is ResultStatus.OK
    assert hidden.status is ResultStatus.UNKNOWN_TOOL  # no grant: never a rate-limit answer that reveals it
    rows = access.audit_log.query(action="call", user="alice")
    assert [r.status for r in rows] == ["unknown_tool", "rate_limited", "ok", "ok"]
    assert rows[1].detail == err.message
