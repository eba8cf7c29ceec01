"""Who is told how long each call, search and upstream request of a :class:`host.runtime.HostRuntime` took.

:class:`CallObserver` is the seam (e.g. :class:`servers.observability.metrics.Metrics` counts and
times them for Prometheus); register one with :meth:`host.runtime.HostRuntime.observe`. The runtime
measures, observers only record:

* :meth:`CallObserver.upstream_finished` after each ``tools/call`` sent upstream (measured around
  the pipeline's executor by :class:`TimedExecutor`);
* :meth:`CallObserver.call_finished` after each :meth:`host.runtime.HostRuntime.call`, with the
  whole call's seconds and the part spent waiting on upstream servers (:class:`CallTimer`);
* :meth:`CallObserver.search_finished` after each :meth:`host.runtime.HostRuntime.search`.

Times are ``time.perf_counter`` seconds. An observer must not raise (a metrics library does not);
it runs on the event loop, so it must not block either.
"""

from __future__ import annotations

import contextvars
import time
from collections.abc import Sequence
from types import TracebackType
from typing import Any, Protocol

from mcp.types import CallToolResult

from host.calls import ToolResult
from host.upstream.executor import ProgressCallback, ToolExecutor
from registry import ToolRecord

__all__ = ["CallObserver", "CallTimer", "TimedExecutor"]


class CallObserver(Protocol):
    """Told of every finished call, search and upstream request (module docstring)."""

    def upstream_finished(self, server: str, seconds: float) -> None:
        """One ``tools/call`` on ``server`` ended (answered, failed or cancelled) after ``seconds``."""
        ...

    def call_finished(self, name: str, tool: ToolRecord | None, result: ToolResult, seconds: float,
                      upstream_seconds: float) -> None:
        """The call of ``name`` (``tool``: its record, ``None`` for an unknown name) ended with
        ``result`` after ``seconds``, of which ``upstream_seconds`` waiting on upstream servers."""
        ...

    def search_finished(self, seconds: float, hits: int) -> None:
        """A search ended after ``seconds`` with ``hits`` results."""
        ...


_upstream_spent: contextvars.ContextVar[list[float] | None] = contextvars.ContextVar(
    "toolhost_upstream_spent", default=None)
"""Upstream seconds of the call running in this context (tasks spawned by the call share the list)."""


class TimedExecutor:
    """A :class:`host.upstream.executor.ToolExecutor` around ``inner`` that measures each upstream
    request, adds it to the running call's :class:`CallTimer` and tells ``observers``."""

    def __init__(self, inner: ToolExecutor, observers: Sequence[CallObserver]) -> None:
        self.inner = inner
        self.observers = observers

    async def call_tool(self, server: str, tool: str, arguments: dict[str, Any], *, timeout_seconds: float,
                        progress_callback: ProgressCallback | None = None) -> CallToolResult:
        started = time.perf_counter()
        try:
            return await self.inner.call_tool(server, tool, arguments, timeout_seconds=timeout_seconds,
                                              progress_callback=progress_callback)
        finally:
            elapsed = time.perf_counter() - started
            for observer in self.observers:
                observer.upstream_finished(server, elapsed)
            spent = _upstream_spent.get()
            if spent is not None:
                spent.append(elapsed)


class CallTimer:
    """Times one call (``with CallTimer() as timer:``): :attr:`seconds` in all, :attr:`upstream_seconds`
    spent in :class:`TimedExecutor` requests made in the block (nested calls time their own)."""

    def __init__(self) -> None:
        self.seconds = 0.0
        self.upstream_seconds = 0.0
        self._spent: list[float] = []
        self._token: contextvars.Token[list[float] | None] | None = None
        self._started = 0.0

    def __enter__(self) -> CallTimer:
        self._token = _upstream_spent.set(self._spent)
        self._started = time.perf_counter()
        return self

    def __exit__(self, exc_type: type[BaseException] | None, exc: BaseException | None,
                 tb: TracebackType | None) -> None:
        self.seconds = time.perf_counter() - self._started
        self.upstream_seconds = sum(self._spent)
        if self._token is not None:
            _upstream_spent.reset(self._token)
