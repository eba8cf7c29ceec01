"""What every execution is handed: :class:`CallContext` (no hidden global state).

A :class:`CallContext` describes one request (a batch of calls, or a single call): who calls,
in which conversation, until when, and how to cancel it. :meth:`CallContext.for_call` derives
the per-call view with the call id set.

Times are ``anyio.current_time()`` values (monotonic seconds), so deadlines survive wall-clock
changes; build one with :meth:`CallContext.with_budget`.
"""

from __future__ import annotations

import dataclasses
from collections.abc import Awaitable, Callable
from dataclasses import dataclass, field

import anyio

from host.calls import ToolResult
from host.upstream.executor import ProgressCallback
from registry.policy import ANONYMOUS, Principal

__all__ = ["BatchCancel", "CallContext", "ResultCallback"]

ResultCallback = Callable[[ToolResult], Awaitable[None]]
"""``async cb(result)``: called once per call, in completion order (for UIs)."""


class BatchCancel:
    """A cancel switch for a running batch: running calls end CANCELLED, waiting ones NOT_EXECUTED.

    Call :meth:`cancel` from any task of the same event loop (e.g. a UI's stop button).
    """

    def __init__(self) -> None:
        self._event = anyio.Event()
        self.reason: str = ""

    def cancel(self, reason: str = "cancelled by the caller") -> None:
        """Request cancellation (idempotent; the first reason is kept)."""
        if not self._event.is_set():
            self.reason = reason
            self._event.set()

    @property
    def cancelled(self) -> bool:
        return self._event.is_set()

    async def wait(self) -> None:
        """Return once :meth:`cancel` was called."""
        await self._event.wait()


@dataclass(frozen=True)
class CallContext:
    """Context of one pipeline request.

    Attributes:
        principal: the caller (:class:`registry.policy.Principal`); used for authorization.
        conversation_id: conversation/session id: names the event-log file and the spill folder.
        deadline: absolute ``anyio.current_time()`` after which no call may run (``None``: none).
        cancel: a :class:`BatchCancel` switch (``None``: the batch cannot be cancelled this way).
        progress_callback: forwarded to the executor (MCP progress notifications).
        on_result: called with each result in completion order.
        call_id: set in the per-call view (:meth:`for_call`), else ``None``.
        adapter: name of the provider adapter that produced the calls (for the event log).
        session_id: the session whose results session taint tracks (an HTTP session, a stdio
            connection; ``None``: the ``conversation_id``), see :mod:`host.pipeline.taint`.
    """

    principal: Principal = ANONYMOUS
    conversation_id: str = "default"
    deadline: float | None = None
    cancel: BatchCancel | None = None
    progress_callback: ProgressCallback | None = None
    on_result: ResultCallback | None = None
    call_id: str | None = None
    adapter: str | None = None
    extra: dict[str, str] = field(default_factory=dict)
    session_id: str | None = None

    @property
    def taint_session(self) -> str:
        """The session id session taint uses: :attr:`session_id`, else :attr:`conversation_id`."""
        return self.session_id if self.session_id is not None else self.conversation_id

    @classmethod
    def with_budget(cls, time_budget_seconds: float | None, **kwargs: object) -> CallContext:
        """A context whose deadline is ``time_budget_seconds`` from now (``None``: no deadline)."""
        deadline = None if time_budget_seconds is None else anyio.current_time() + time_budget_seconds
        return cls(deadline=deadline, **kwargs)  # type: ignore[arg-type]

    def remaining_seconds(self) -> float | None:
        """Seconds left before :attr:`deadline` (may be ≤ 0), or ``None`` without a deadline."""
        return None if self.deadline is None else self.deadline - anyio.current_time()

    def for_call(self, call_id: str) -> CallContext:
        """The per-call view of this context."""
        return dataclasses.replace(self, call_id=call_id)
