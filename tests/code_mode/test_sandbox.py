"""Scripts in real pydantic-monty workers calling a fake InnerCaller: values, errors, concurrency, crashes."""

from __future__ import annotations

import os
import re
import signal

import anyio
import pytest

from host.code_mode import InnerCaller, PoolConfig, SandboxPool, ScriptLimits
from registry.code_mode import build_manifest
from tests.code_mode.fakes import NAMES, FakeCaller, Reached, open_pool, run

pytestmark = pytest.mark.anyio


async def test_a_script_filters_and_joins_tool_results_and_returns_one_value():
    caller = FakeCaller()
    assert isinstance(caller, InnerCaller)
    script = (
        "import asyncio\n"
        "listing = await orders__list(status='open')\n"
        "old = [o['id'] for o in listing['orders'] if o['status'] == 'open' and o['age_days'] > 7]\n"
        "details = await asyncio.gather(*[orders__get(id=i) for i in old])\n"
        "note = await orders__text()\n"
        "{'old_open': old, 'total': sum(d['total'] for d in details), 'note': note}\n"
    )
    async with open_pool() as pool:
        outcome = await run(pool, script, caller)
    assert outcome.status == "ok", outcome.message
    assert outcome.value == {"old_open": [3, 5], "total": 80, "note": "plain text answer"}
    assert [(s, n) for s, n, _ in caller.calls] == [
        (0, "orders__list"),
        (1, "orders__get"),
        (2, "orders__get"),
        (3, "orders__text"),
    ]
    assert caller.calls[0][2] == {"status": "open"}
    assert [(c.step, c.name, c.status) for c in outcome.calls] == [
        (0, "orders__list", "ok"),
        (1, "orders__get", "ok"),
        (2, "orders__get", "ok"),
        (3, "orders__text", "ok"),
    ]
    assert outcome.script_sha256 == build_manifest(script, NAMES).script_sha256


async def test_gathered_calls_reach_the_host_concurrently():
    caller = FakeCaller()
    script = "import asyncio\nrs = await asyncio.gather(*[orders__list() for _ in range(5)])\nlen(rs)"
    async with open_pool() as pool:
        outcome = await run(pool, script, caller)
    assert (outcome.status, outcome.value) == ("ok", 5)
    assert caller.max_in_flight == 5
    assert sorted(s for s, _, _ in caller.calls) == [0, 1, 2, 3, 4]


async def test_error_results_raise_catchable_exceptions_with_status_where_and_retry_after():
    script = (
        "out = {}\n"
        "try:\n"
        "    await orders__cancel(id=3)\n"
        "except PermissionError as e:\n"
        "    out['cancel'] = tool_error(e)\n"
        "try:\n"
        "    await orders__limited()\n"
        "except RuntimeError as e:\n"
        "    out['limited'] = tool_error(e)\n"
        "try:\n"
        "    await fs__read_file(path='/x')\n"
        "except RuntimeError as e:\n"
        "    out['broken'] = tool_error(e)\n"
        "out['plain'] = tool_error(ValueError('not a tool error'))\n"
        "out\n"
    )
    async with open_pool() as pool:
        outcome = await run(pool, script)
    assert outcome.status == "ok", outcome.message
    assert outcome.value == {
        "cancel": {
            "status": "approval_required",
            "where": "authorize",
            "message": "cancelling needs approval",
            "retry_after": None,
            "approval_id": "ap-7",
        },
        "limited": {
            "status": "rate_limited",
            "where": "execute",
            "message": "slow down",
            "retry_after": 2.5,
            "approval_id": None,
        },
        "broken": {
            "status": "upstream_error",
            "where": "code_mode.inner_call",
            "message": "OSError: the upstream connection broke",
            "retry_after": None,
            "approval_id": None,
        },
        "plain": None,
    }
    assert [c.status for c in outcome.calls] == ["approval_required", "rate_limited", "upstream_error"]


async def test_an_uncaught_tool_error_ends_the_script_with_its_traceback():
    async with open_pool() as pool:
        outcome = await run(pool, "x = 1\nawait orders__cancel(id=1)")
    assert outcome.status == "script_error"
    assert outcome.where == "code_mode.sandbox"
    assert "line 2" in outcome.message
    assert outcome.message.rstrip().endswith(
        "PermissionError: approval_required at authorize: cancelling needs approval [approval_id=ap-7]"
    )


async def test_call_tool_with_a_literal_name_and_positional_arguments_refused():
    caller = FakeCaller()
    script = (
        "a = await call_tool('orders__get', {'id': 2})\n"
        "try:\n"
        "    await orders__get(2)\n"
        "except TypeError as e:\n"
        "    b = str(e)\n"
        "[a, b]\n"
    )
    async with open_pool() as pool:
        outcome = await run(pool, script, caller)
    assert outcome.value == [
        {"id": 2, "total": 20},
        (
            "invalid_arguments at code_mode.inner_call: orders__get() takes"
            " keyword arguments only, e.g. orders__get(key=value)"
        ),
    ]
    assert caller.calls == [(0, "orders__get", {"id": 2})]


async def test_print_output_is_kept_next_to_the_value():
    async with open_pool() as pool:
        outcome = await run(pool, "print('hello', 3)\n'done'")
    assert (outcome.status, outcome.value, outcome.printed) == ("ok", "done", "hello 3\n")


async def test_a_script_changed_after_its_manifest_was_made_is_rejected_and_never_runs():
    caller = FakeCaller()
    approved = "await orders__list()"
    manifest = build_manifest(approved, NAMES)
    async with open_pool() as pool:
        with anyio.fail_after(20):
            outcome = await pool.run(approved + "\nawait orders__cancel(id=1)", manifest, caller)
    assert outcome.status == "rejected"
    assert outcome.where == "code_mode.manifest"
    assert "differs from the one its manifest" in outcome.message
    assert caller.calls == []


async def test_a_worker_killed_mid_script_is_replaced_and_a_concurrent_script_finishes():
    victim = Reached()
    results = {}
    async with open_pool(wall_clock_seconds=15) as pool:

        async def go(key, script, caller):
            results[key] = await run(pool, script, caller)

        with anyio.fail_after(30):
            async with anyio.create_task_group() as tg:
                tg.start_soon(go, "victim", "await orders__slow()", victim)
                await victim.reached.wait()
                (victim_pid,) = pool.worker_pids_in_use()
                tg.start_soon(go, "other", "import asyncio\nawait asyncio.sleep(0.3)\n'fine'", FakeCaller())
                os.kill(victim_pid, signal.SIGKILL)
        after = await run(pool, "await orders__get(id=1)")
    assert results["victim"].status == "crashed"
    assert results["victim"].where == "code_mode.sandbox"
    assert results["victim"].worker_pid == victim_pid
    assert "replaced" in results["victim"].message
    assert results["victim"].seconds < 10.0  # noticed at once (pidfd), not at the 15 s wall clock
    assert [(c.step, c.name, c.status) for c in results["victim"].calls] == [(0, "orders__slow", "cancelled")]
    assert (results["other"].status, results["other"].value) == ("ok", "fine"), results["other"].message
    assert (after.status, after.value) == ("ok", {"id": 1, "total": 10})
    assert after.worker_pid != victim_pid


async def test_a_call_the_script_never_awaits_never_runs():
    caller = FakeCaller()
    async with open_pool() as pool:
        outcome = await run(pool, "pending = orders__get(id=9)\n'left'", caller)
    assert (outcome.status, outcome.value) == ("ok", "left")
    assert caller.calls == []
    assert [(c.step, c.name, c.status) for c in outcome.calls] == [(0, "orders__get", "not_executed")]


async def test_a_script_waiting_for_a_free_worker_past_the_checkout_timeout_is_told_to_retry():
    holder = Reached()
    pool = SandboxPool(
        PoolConfig(min_workers=1, max_workers=1, checkout_timeout_seconds=0.5), ScriptLimits(wall_clock_seconds=10.0)
    )
    results = {}
    async with pool:
        with anyio.fail_after(30):
            async with anyio.create_task_group() as tg:

                async def hold():
                    results["holder"] = await run(pool, "await orders__slow()", holder)

                tg.start_soon(hold)
                await holder.reached.wait()
                results["waiter"] = await run(pool, "1 + 1")
                tg.cancel_scope.cancel()  # the holder's caller goes away: its run stops at once
        after = await run(pool, "2 + 2")
    assert results["waiter"].status == "busy"
    assert results["waiter"].where == "code_mode.pool"
    assert re.fullmatch(
        r"waited 0\.\d s for a sandbox worker; the pool \(size 1\) is busy; retry after (9|10) s"
        r" \(toolhost\.code_mode\.pool\.checkout_timeout_seconds = 0\.5\)",
        results["waiter"].message,
    ), results["waiter"].message
    assert results["waiter"].retry_after in (9.0, 10.0)  # the holder's wall clock ends then at the latest
    assert (after.status, after.value) == ("ok", 4)
    assert "holder" not in results  # cancelled, not finished
    assert holder.in_flight == 0
