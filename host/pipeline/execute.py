"""Execute prepared calls: per-call timeout and error boundary, batch scheduling, cancellation.

Scheduling (in the model's call order, so effects happen in the order the model intended):

* a ``concurrency_safe`` call (read-only by default) waits only for earlier state-changing
  calls and for earlier calls with the same ``resource_key``;
* a state-changing call waits for every earlier call, and every later call waits for it.

Timeout: ``min(tool.timeout_seconds, time left before ctx.deadline)``; the executor gets that
budget, and the pipeline also bounds the await with a short grace, cancelling the task (the
SDK then sends ``notifications/cancelled``). Either way the result is ``timeout``.

Cancellation (``ctx.cancel``): running calls end ``cancelled``, calls not started yet
``not_executed``. A call whose start would fall after ``ctx.deadline`` is ``not_executed``.
Results are returned in call order; ``ctx.on_result`` sees them in completion order.
"""

from __future__ import annotations

import enum
from collections.abc import Awaitable, Callable, Sequence
from contextlib import AbstractContextManager, nullcontext
from typing import Any

import anyio
from mcp.types import CallToolResult

from host.calls import ErrorInfo, ResultStatus, TextBlock, ToolResult
from host.pipeline.context import CallContext
from host.pipeline.errors import PipelineFatal
from host.pipeline.format import SpillStore, format_result
from host.pipeline.prepare import Prepared
from host.pipeline.results import classify_exception, error_result
from host.pipeline.send_gate import SendGate
from host.tracing import span
from host.upstream.executor import ToolExecutor

__all__ = ["TIMEOUT_GRACE_SECONDS", "execute_batch", "execute_one"]

TIMEOUT_GRACE_SECONDS = 0.25
"""Extra time the pipeline's own guard waits after the executor's budget (seconds)."""

Around = Callable[[Prepared], AbstractContextManager[Any]]
"""``with around(prep): <the upstream request of prep>``."""


class _State(enum.Enum):
    WAITING = 0
    RUNNING = 1
    DONE = 2


async def execute_one(
    prep: Prepared,
    executor: ToolExecutor,
    ctx: CallContext,
    *,
    spill: SpillStore | None,
    on_running: Callable[[], None] | None = None,
    gate: SendGate | None = None,
    around: Around | None = None,
) -> ToolResult:
    """Execute one prepared call with its own error boundary; never raises but :class:`PipelineFatal`.

    ``gate`` is asked right before the call is sent; a result it answers is the call's result
    (nothing is sent). ``around(prep)`` wraps the upstream request (e.g. the sampling gate of the
    call's taint session)."""
    call, rec = prep.call, prep.record
    remaining = ctx.remaining_seconds()
    timeout = rec.timeout_seconds if remaining is None else min(rec.timeout_seconds, remaining)
    if timeout <= 0:
        return error_result(call, ResultStatus.NOT_EXECUTED, "the conversation's time budget ran out before "
                            "this call could start", where="execute", details={"reason": "deadline"})
    if gate is not None:
        refused = await gate.before_send(prep)
        if refused is not None:
            return refused
    if on_running is not None:
        on_running()
    raw = None
    try:
        # The pipeline's own guard (a bare cancel scope: ~2x cheaper than fail_after on asyncio).
        with anyio.CancelScope(deadline=anyio.current_time() + timeout + TIMEOUT_GRACE_SECONDS) as guard:
            with span("toolhost.upstream", **{"toolhost.server": rec.server,
                                              "toolhost.upstream_tool": rec.original_name, "rpc.system": "mcp"}):
                with around(prep) if around is not None else nullcontext():
                    raw = await executor.call_tool(
                        rec.server, rec.original_name, prep.arguments,
                        timeout_seconds=timeout, progress_callback=ctx.progress_callback,
                    )
    except PipelineFatal:
        raise
    except Exception as exc:  # noqa: BLE001 - each call has its own error boundary
        return classify_exception(call, rec.server, exc, timeout, retry_safe=rec.read_only or rec.idempotent)
    if guard.cancelled_caught:
        return classify_exception(call, rec.server, TimeoutError(), timeout)
    if not isinstance(raw, CallToolResult):
        raise PipelineFatal("execute", f"executor returned {type(raw).__name__} for {rec.qualified_name}, "
                            "not mcp.types.CallToolResult")
    out = format_result(
        raw, max_output_chars=rec.max_output_chars, spill=spill,
        conversation_id=ctx.conversation_id, call_id=call.call_id,
        empty_text="(no output)" if not raw.is_error else "(the tool reported an error without a message)",
    )
    details: dict[str, Any] = {}
    if out.truncated:
        details = {"original_chars": out.original_chars, "spill_path": out.spill_path}
    if raw.is_error:
        text = "\n".join(b.text for b in out.content if isinstance(b, TextBlock))
        return ToolResult(
            call_id=call.call_id, name=call.name, status=ResultStatus.TOOL_ERROR, content=out.content,
            structured=out.structured,
            error=ErrorInfo(code=ResultStatus.TOOL_ERROR.value, message=text[:500], where="execute",
                            details={"server": rec.server, **details}),
        )
    return ToolResult(call_id=call.call_id, name=call.name, status=ResultStatus.OK, content=out.content,
                      structured=out.structured)


def _first(group: BaseExceptionGroup, kind: type[BaseException]) -> BaseException | None:
    for exc in group.exceptions:
        if isinstance(exc, kind):
            return exc
        if isinstance(exc, BaseExceptionGroup):
            found = _first(exc, kind)
            if found is not None:
                return found
    return None


def _dependencies(preps: Sequence[Prepared]) -> list[list[int]]:
    deps: list[list[int]] = []
    for i, p in enumerate(preps):
        mine: list[int] = []
        for j in range(i):
            q = preps[j]
            if not p.record.concurrency_safe or not q.record.concurrency_safe:
                mine.append(j)
            elif p.record.resource_key is not None and p.record.resource_key == q.record.resource_key:
                mine.append(j)
        deps.append(mine)
    return deps


async def execute_batch(
    preps: Sequence[Prepared],
    executor: ToolExecutor,
    ctx: CallContext,
    *,
    spill: SpillStore | None,
    completed: Callable[[ToolResult], Awaitable[None]],
    gate: SendGate | None = None,
    around: Around | None = None,
) -> list[ToolResult]:
    """Execute ``preps`` under the module's scheduling rules; one result per prepared call, in order.

    ``completed`` is awaited (shielded) once per result in completion order.
    """
    n = len(preps)
    if n == 0:
        return []
    if n == 1 and ctx.cancel is None:  # fast path: no scheduling, no task group
        res = await execute_one(preps[0], executor, ctx, spill=spill, gate=gate, around=around)
        await completed(res)
        return [res]
    results: list[ToolResult | None] = [None] * n
    state = [_State.WAITING] * n
    done = [anyio.Event() for _ in range(n)]
    deps = _dependencies(preps)

    async def run(i: int) -> None:
        try:
            for j in deps[i]:
                await done[j].wait()
            if ctx.cancel is not None and ctx.cancel.cancelled:
                return

            def running() -> None:
                state[i] = _State.RUNNING

            res = await execute_one(preps[i], executor, ctx, spill=spill, on_running=running, gate=gate,
                                    around=around)
            results[i] = res
            state[i] = _State.DONE
            with anyio.CancelScope(shield=True):
                await completed(res)
        finally:
            done[i].set()

    try:
        async with anyio.create_task_group() as tg:
            if ctx.cancel is None:
                for i in range(n):
                    tg.start_soon(run, i)
            else:
                async def watch() -> None:
                    await ctx.cancel.wait()  # type: ignore[union-attr]
                    tg.cancel_scope.cancel()

                tg.start_soon(watch)
                async with anyio.create_task_group() as calls_tg:
                    for i in range(n):
                        calls_tg.start_soon(run, i)
                tg.cancel_scope.cancel()  # all calls done: stop the watcher
    except BaseExceptionGroup as group:
        fatal = _first(group, PipelineFatal)
        if fatal is not None:
            raise fatal from None
        raise

    reason = ctx.cancel.reason if ctx.cancel is not None else "cancelled"
    out: list[ToolResult] = []
    for i, p in enumerate(preps):
        res = results[i]
        if res is None:
            if state[i] is _State.RUNNING:
                res = error_result(p.call, ResultStatus.CANCELLED, f"the call was cancelled while running "
                                   f"({reason}); its effect is unknown", where="execute",
                                   details={"reason": reason})
            else:
                res = error_result(p.call, ResultStatus.NOT_EXECUTED, f"the call was not started ({reason})",
                                   where="execute", details={"reason": reason})
            with anyio.CancelScope(shield=True):
                await completed(res)
        out.append(res)
    return out
