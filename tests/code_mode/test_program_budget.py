"""Calls a provider's program made keep the agent loop's deadline and cancel switch, as direct calls
do: over the real orders server, through :class:`host.agent.programmatic.ProgrammaticCalls`."""

from __future__ import annotations

import json
import sys
from collections.abc import Sequence
from pathlib import Path

import anyio
import pytest

from host.agent.governed import governed_runtime
from host.agent.programmatic import ProgrammaticCalls, ReadOnlyPrograms
from host.calls import ToolCall, ToolResult
from host.config import load_config
from host.pipeline.context import BatchCancel, CallContext
from tests.providers.test_examples import _config

pytestmark = pytest.mark.anyio


@pytest.fixture
def anyio_backend() -> str:
    return "asyncio"


class _NoDirectCalls:
    """The loop's direct pipeline; every call in these tests is a program's."""

    event_log = None

    async def run_batch(self, calls: Sequence[ToolCall], ctx: CallContext) -> list[ToolResult]:
        raise AssertionError(f"no direct calls expected, got {[c.name for c in calls]}")


def _with_flaky(tmp_path: Path) -> Path:
    """The orders server and the flaky example (its read-only ``slow`` tool sleeps)."""
    path = _config(tmp_path)
    config = json.loads(path.read_text())
    config["mcpServers"]["flaky"] = {"command": sys.executable, "args": ["-m", "servers.examples.flaky"]}
    path.write_text(json.dumps(config))
    return path


GET = ("orders__get_order", {"order_id": "A1001"})
SLOW = ("flaky__slow", {"seconds": 30})


async def _program_calls(
    tmp_path: Path, first: tuple[str, dict] = GET, *, budget: float | None = None, cancel: BatchCancel | None = None
) -> list[ToolResult]:
    """``first``, then a read of A1001, made by a program, with ``budget`` seconds left (from the moment
    they are sent) and ``cancel``."""
    calls = [ToolCall(call_id=f"c{i}", name=name, arguments=args) for i, (name, args) in enumerate((first, GET), 1)]
    data = tmp_path / "data"
    with anyio.fail_after(60):
        async with governed_runtime(load_config(_with_flaky(tmp_path), data_dir=data), data) as gov:
            bridge = ProgrammaticCalls(_NoDirectCalls(), gov.runtime, {"c1": "prog_1", "c2": "prog_1"},
                                       ReadOnlyPrograms(), api="anthropic_messages")
            ctx = CallContext.with_budget(budget, principal=gov.principal, cancel=cancel)
            return await bridge.run_batch(calls, ctx)


async def test_program_calls_run_within_the_budget(tmp_path):
    results = await _program_calls(tmp_path, budget=60, cancel=BatchCancel())
    assert [(r.status.value, r.structured["order_id"]) for r in results] == [("ok", "A1001")] * 2


async def test_a_pulled_cancel_switch_stops_program_calls_before_they_start(tmp_path):
    cancel = BatchCancel()
    cancel.cancel("the user pressed stop")
    results = await _program_calls(tmp_path, cancel=cancel)
    assert [(r.status.value, r.error.where, r.error.message, r.error.details) for r in results] == [
        ("not_executed", "execute", "the call was not started (the user pressed stop)",
         {"reason": "the user pressed stop"})] * 2


async def test_a_spent_deadline_stops_program_calls_before_and_while_they_run(tmp_path):
    results = await _program_calls(tmp_path, budget=-1)
    assert [(r.status.value, r.error.message) for r in results] == [
        ("not_executed", "the conversation's time budget ran out before this call could start")] * 2
    results = await _program_calls(tmp_path, SLOW, budget=1.0)  # the slow tool would take 30 s
    assert (results[0].status.value, results[0].error.message, results[0].error.details) == (
        "timeout", "the conversation's time budget ran out while the call ran; its effect is unknown",
        {"reason": "deadline"})
    assert results[1].status.value == "not_executed"
