"""Inner calls of one script follow the pipeline's batch rule: reads overlap, state changes run alone."""

from __future__ import annotations

from typing import Any

import anyio
import pytest

from host.calls import ToolResult
from host.code_mode import PipelineInnerCaller, ScriptRun
from registry import Principal, Risk, ToolRecord
from registry.code_mode import build_manifest, python_names
from tests.code_mode.fakes import open_pool

pytestmark = pytest.mark.anyio


def _tool(name: str, *, safe: bool, resource_key: str | None = None) -> ToolRecord:
    return ToolRecord(qualified_name=name, server="orders", original_name=name, input_schema={}, risk=Risk.READ
                      if safe else Risk.DESTRUCTIVE, open_world=False, timeout_seconds=5, max_output_chars=100,
                      concurrency_safe=safe, idempotent=True, resource_key=resource_key, definition_hash="0" * 64)


class _Registry:
    def __init__(self, tools: list[ToolRecord]) -> None:
        self.by_name = {t.qualified_name: t for t in tools}

    def snapshot(self) -> dict[str, ToolRecord]:
        return self.by_name


class _Runtime:
    """The runtime edge: records how many calls of each kind overlap (the pipeline is tested elsewhere)."""

    def __init__(self, tools: list[ToolRecord]) -> None:
        self.registry = _Registry(tools)
        self.in_flight: list[str] = []
        self.overlaps: list[tuple[str, ...]] = []
        self.audited: list[Any] = []
        self.sessions: set[str | None] = set()

    async def call(self, name: str, arguments: dict[str, Any], principal: Principal, *, call_id: str,
                   script_step: Any, session_id: str | None) -> ToolResult:
        self.sessions.add(session_id)
        self.in_flight.append(name)
        self.overlaps.append(tuple(sorted(self.in_flight)))
        self.audited.append((call_id, script_step.step))
        try:
            await anyio.sleep(0.05)
            return ToolResult(call_id=call_id, name=name, structured={"name": name})
        finally:
            self.in_flight.remove(name)


TOOLS = [_tool("read_a", safe=True), _tool("read_b", safe=True), _tool("write_c", safe=False),
         _tool("keyed_d", safe=True, resource_key="db"), _tool("keyed_e", safe=True, resource_key="db")]


async def _run(script: str, rt: _Runtime) -> Any:
    manifest = build_manifest(script, python_names([t.qualified_name for t in TOOLS]))
    run = ScriptRun.new(manifest.script_sha256, "call_parent")
    async with open_pool() as pool:
        with anyio.fail_after(30):
            caller = PipelineInnerCaller(rt, Principal(user="u"), run, taint_session="s1")  # type: ignore[arg-type]
            outcome = await pool.run(script, manifest, caller)
    assert outcome.ok, outcome.message
    return outcome


async def test_gathered_reads_overlap_and_a_state_changing_call_runs_alone():
    rt = _Runtime(TOOLS)
    script = ("import asyncio\n"
              "await asyncio.gather(read_a(), read_b(), write_c(), read_a(), write_c())\n"
              "'done'")
    outcome = await _run(script, rt)
    assert outcome.value == "done"
    assert all(o == ("write_c",) for o in rt.overlaps if "write_c" in o)
    assert max(len(o) for o in rt.overlaps) >= 2  # reads did overlap
    assert sorted(step for _id, step in rt.audited) == [0, 1, 2, 3, 4]
    assert sorted(cid for cid, _s in rt.audited) == [f"call_parent.{i}" for i in range(5)]
    assert rt.sessions == {"s1"}  # every inner call in the caller's taint session


async def test_calls_sharing_a_resource_key_never_overlap():
    rt = _Runtime(TOOLS)
    outcome = await _run("import asyncio\nawait asyncio.gather(keyed_d(), keyed_e(), keyed_d(), read_a())\n1", rt)
    assert outcome.value == 1
    assert not any({"keyed_d", "keyed_e"} <= set(o) or o.count("keyed_d") > 1 for o in rt.overlaps)
