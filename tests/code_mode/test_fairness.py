"""One caller cannot fill the sandbox pool: a per-caller share, a bounded queue, a bounded wait,
and a wall clock that starts when the script has its worker. Real workers throughout."""

from __future__ import annotations

import anyio
import pytest

from host.code_mode import PoolConfig, SandboxPool, ScriptLimits, outcome_result
from host.code_mode.admission import Admission, Refused, owner_key
from registry.policy import Principal
from tests.code_mode.fakes import FakeCaller, Reached, run

pytestmark = pytest.mark.anyio

LOOP = "while True:\n    pass"


async def _until(condition) -> None:
    """Yield to the event loop until ``condition()`` holds (a checkpoint, no timed sleep; callers bound it)."""
    while not condition():
        await anyio.sleep(0)


def test_the_share_and_queue_default_to_half_and_twice_the_pool():
    assert (PoolConfig(max_workers=2).max_scripts_per_caller, PoolConfig(max_workers=2).max_queued_scripts) == (1, 4)
    assert PoolConfig(max_workers=1).max_scripts_per_caller == 1
    assert PoolConfig(max_workers=4).max_scripts_per_caller == 2
    assert PoolConfig(max_workers=4, max_scripts_per_caller=3, max_queued_scripts=9).max_queued_scripts == 9
    with pytest.raises(ValueError, match="must be >= 0"):
        PoolConfig(max_scripts_per_caller=-1)


def test_a_caller_is_its_api_key_else_its_session_else_its_user():
    assert owner_key(Principal("alice", key_id="k1")) == owner_key(Principal("alice", key_id="k1"), "s1") == "key:k1"
    assert owner_key(Principal("alice")) == "user:alice"
    assert owner_key(Principal("local"), "conn-1") == "session:local:conn-1"
    assert owner_key(Principal("local"), "conn-1") != owner_key(Principal("local"), "conn-2")
    assert PoolConfig(max_workers=2).max_anonymous_scripts == 2 + 4
    assert PoolConfig(max_workers=2, max_anonymous_scripts=3).max_anonymous_scripts == 3


async def test_anonymous_sessions_have_a_share_each_and_a_cap_together():
    admission = Admission(slots=2, per_caller=1, max_queued=4, wait_seconds=10.0, wall_clock_seconds=30.0,
                          max_anonymous=3)
    release = anyio.Event()
    refused: list[Refused] = []
    with anyio.fail_after(5):
        async with anyio.create_task_group() as tg:

            async def script(owner: str) -> None:
                try:
                    async with admission.slot(owner):
                        await release.wait()
                except Refused as e:
                    refused.append(e)

            for session in ("a", "b", "c"):
                tg.start_soon(script, f"session:local:{session}")
            await _until(lambda: (admission.running, admission.queued) == (2, 1))
            await script("session:local:a")  # a second script of session a: over its share
            await script("session:local:d")  # a fourth session: over the anonymous cap
            tg.start_soon(script, "key:k1")  # a key holder still queues
            await _until(lambda: admission.queued == 2)
            release.set()
    assert [e.status for e in refused] == ["rate_limited", "rate_limited"]
    assert "max_scripts_per_caller = 1" in refused[0].message
    assert refused[1].message == (
        "anonymous sessions already have 3 script(s) running or waiting; together they may run at most 3"
        " (toolhost.code_mode.pool.max_anonymous_scripts = 3); retry after the time given, or use an API key"
        " for a share of your own"
    )
    assert (admission.running, admission.queued) == (0, 0)


async def test_a_hostile_caller_s_loops_do_not_delay_another_caller():
    pool = SandboxPool(
        PoolConfig(min_workers=2, max_workers=2, checkout_timeout_seconds=10.0),
        ScriptLimits(cpu_seconds=30.0, wall_clock_seconds=30.0),
    )
    hostile: list = []
    refused = anyio.Event()
    async with pool:
        with anyio.fail_after(30):
            async with anyio.create_task_group() as tg:

                async def attack() -> None:
                    hostile.append(await run(pool, LOOP, owner="key:hostile", seconds=60))
                    if len(hostile) == 3:
                        refused.set()

                for _ in range(4):
                    tg.start_soon(attack)
                await refused.wait()  # three of the four are refused at once; one loops on a worker
                assert pool.admission.running == 1
                with anyio.fail_after(5.0):  # far below the loops' 30 s limits: the other worker is free
                    other = await run(pool, "1 + 1", owner="key:other")
                tg.cancel_scope.cancel()  # the hostile client goes away: its loop's worker is killed
        after = await run(pool, "2 + 2", owner="key:hostile")
    assert (other.status, other.value) == ("ok", 2)
    assert other.seconds < 5.0
    assert [o.status for o in hostile[:3]] == ["rate_limited"] * 3
    assert [(o.status, o.limit) for o in hostile[3:]] == [("limit_exceeded", "cancelled")]  # the loop, stopped
    first = hostile[0]
    assert first.where == "code_mode.pool"
    assert first.message == (
        "this caller already has 1 script(s) running or waiting; one caller may run at most 1 at once"
        " (toolhost.code_mode.pool.max_scripts_per_caller = 1) so that others get a sandbox worker too; wait for a"
        " script to finish, or ask an operator to raise the share"
    )
    assert 28.0 <= first.retry_after <= 30.0  # when the running loop's wall clock ends at the latest
    result = outcome_result("call-1", "execute", first)
    assert (result.status.value, result.error.retry_after_seconds) == ("rate_limited", first.retry_after)
    assert (after.status, after.value) == ("ok", 4)


async def test_a_full_queue_refuses_and_a_queued_script_s_wall_clock_starts_at_its_worker():
    pool = SandboxPool(
        PoolConfig(min_workers=1, max_workers=1, max_queued_scripts=1, checkout_timeout_seconds=10.0),
        ScriptLimits(wall_clock_seconds=1.5),
    )
    holder, results = Reached(), {}
    async with pool:
        with anyio.fail_after(30):
            async with anyio.create_task_group() as tg:

                async def go(key: str, script: str, caller: FakeCaller | None = None) -> None:
                    results[key] = await run(pool, script, caller, owner=f"key:{key}")

                tg.start_soon(go, "a", "await orders__get(id=1)\nimport time\ntime.sleep(1.2)\n'a'", holder)
                await holder.reached.wait()
                tg.start_soon(go, "b", "import time\ntime.sleep(1.0)\n'b'")
                await _until(lambda: pool.admission.queued == 1)
                await go("c", "'c'")
    assert (results["a"].status, results["a"].value) == ("ok", "a")
    # b waited about 1.2 s for the worker, then slept 1 s: 2.2 s in all, past its 1.5 s wall clock,
    # which counts from when b got the worker
    assert (results["b"].status, results["b"].value) == ("ok", "b")
    assert results["b"].seconds > 1.5
    assert (results["c"].status, results["c"].where) == ("rate_limited", "code_mode.pool")
    assert results["c"].message == (
        "the sandbox pool (size 1) is busy and 1 script(s) already wait for a worker"
        " (toolhost.code_mode.pool.max_queued_scripts = 1); retry after the time given"
    )
    assert 1.0 <= results["c"].retry_after <= 2.0


async def test_queued_scripts_get_workers_first_come_and_a_cancelled_wait_leaks_no_slot():
    admission = Admission(slots=1, per_caller=2, max_queued=4, wait_seconds=10.0, wall_clock_seconds=30.0)
    order: list[str] = []
    release = anyio.Event()
    with anyio.fail_after(5):
        async with anyio.create_task_group() as tg:

            async def script(owner: str, hold: anyio.Event | None = None) -> None:
                async with admission.slot(owner):
                    order.append(owner)
                    if hold is not None:
                        await hold.wait()

            tg.start_soon(script, "a", release)
            await _until(lambda: admission.running == 1)
            tg.start_soon(script, "b")
            tg.start_soon(script, "c")
            await _until(lambda: admission.queued == 2)
            async with anyio.create_task_group() as waiting:  # a client that goes away while queued
                waiting.start_soon(script, "d")
                await _until(lambda: admission.queued == 3)
                waiting.cancel_scope.cancel()
            assert (admission.queued, admission.held("d")) == (2, 0)
            release.set()
    assert order == ["a", "b", "c"]
    assert (admission.running, admission.queued) == (0, 0)
