"""A fake InnerCaller (the one edge code-mode tests mock) and helpers to run scripts in a real pool."""

from __future__ import annotations

import uuid
from typing import Any

import anyio

from host.calls import ErrorInfo, ResultStatus, TextBlock, ToolResult
from host.code_mode import PoolConfig, SandboxPool, ScriptLimits, ScriptOutcome
from registry.code_mode import build_manifest, python_names

TOOLS = (
    "orders__list",
    "orders__get",
    "orders__cancel",
    "orders__slow",
    "orders__text",
    "orders__limited",
    "fs__read-file",
)
NAMES = python_names(TOOLS)


class FakeCaller:
    """Answers inner calls from a small orders world; records every call it gets."""

    def __init__(self) -> None:
        self.calls: list[tuple[int, str, dict[str, Any]]] = []
        self.in_flight = 0
        self.max_in_flight = 0
        self.release = anyio.Event()

    async def call(self, name: str, arguments: dict[str, Any], *, step: int) -> ToolResult:
        self.calls.append((step, name, arguments))
        self.in_flight += 1
        self.max_in_flight = max(self.max_in_flight, self.in_flight)
        try:
            return await self._answer(name, arguments)
        finally:
            self.in_flight -= 1

    async def _answer(self, name: str, arguments: dict[str, Any]) -> ToolResult:
        if name == "orders__list":
            await anyio.sleep(0.01)  # let gathered calls overlap
            orders = [{"id": i, "status": "open" if i % 2 else "done", "age_days": i * 3} for i in range(1, 7)]
            return ToolResult(call_id="c", name=name, structured={"orders": orders})
        if name == "orders__get":
            return ToolResult(call_id="c", name=name, structured={"id": arguments["id"], "total": arguments["id"] * 10})
        if name == "orders__text":
            return ToolResult(call_id="c", name=name, content=[TextBlock(text="plain text answer")])
        if name == "orders__cancel":
            return _error(
                name, ResultStatus.APPROVAL_REQUIRED, "cancelling needs approval", "authorize", approval_id="ap-7"
            )
        if name == "orders__limited":
            return _error(name, ResultStatus.RATE_LIMITED, "slow down", "execute", retry_after=2.5)
        if name == "orders__slow":
            await anyio.sleep_forever()
        if name == "fs__read-file":
            raise OSError("the upstream connection broke")
        return _error(name, ResultStatus.UNKNOWN_TOOL, "no such tool", "lookup")


class Reached(FakeCaller):
    """A FakeCaller whose ``reached`` event is set at its first call."""

    def __init__(self) -> None:
        super().__init__()
        self.reached = anyio.Event()

    async def call(self, name: str, arguments: dict[str, Any], *, step: int) -> ToolResult:
        self.reached.set()
        return await super().call(name, arguments, step=step)


def _error(name: str, status: ResultStatus, message: str, where: str, **extra: Any) -> ToolResult:
    return ToolResult(
        call_id="c",
        name=name,
        status=status,
        content=[TextBlock(text=message)],
        error=ErrorInfo(
            code=status.value,
            message=message,
            where=where,
            retry_after_seconds=extra.get("retry_after"),
            approval_id=extra.get("approval_id"),
        ),
    )


def open_pool(**limits: Any) -> SandboxPool:
    """A real pool of one or two workers with test-sized limits (overridable)."""
    base = {"wall_clock_seconds": 5.0, "cpu_seconds": 2.0, "max_inner_calls": 50}
    return SandboxPool(
        PoolConfig(min_workers=1, max_workers=2, checkout_timeout_seconds=10.0), ScriptLimits(**{**base, **limits})
    )


async def run(
    pool: SandboxPool,
    script: str,
    caller: FakeCaller | None = None,
    *,
    seconds: float = 20.0,
    owner: str | None = None,
) -> ScriptOutcome:
    """Build the manifest and run ``script`` for ``owner`` (default: a caller of its own), bounded by ``seconds``."""
    with anyio.fail_after(seconds):
        return await pool.run(
            script, build_manifest(script, NAMES), caller or FakeCaller(), owner=owner or f"key:{uuid.uuid4().hex}"
        )
