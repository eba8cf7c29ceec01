"""Answering during start-up: requests that read the registry wait, briefly, for the servers' first connects.

A gateway that serves at once (:mod:`servers.compose`) answers ``ping`` and the health routes
immediately, while its upstream servers still start. ``initialize`` (whose capabilities say whether
prompts, resources and completions exist: they come from the upstreams) and a client's first
``tools/list``, ``tools/call``, prompt, resource or completion request would otherwise see a registry
that is still filling, so :class:`SettleMiddleware` holds those until every server's first connect attempt ended
(:meth:`host.runtime.HostRuntime.settled`), at most until ``timeout_seconds`` after the middleware
was made (one deadline for all requests, not a wait each); after that they answer with what is
connected, and servers that connect later announce their tools with ``list_changed``. Once the
first round ended, the check is one attribute read per request.
"""

from __future__ import annotations

import time
from typing import TYPE_CHECKING, Any

from mcp.server.context import CallNext, HandlerResult, ServerMiddleware, ServerRequestContext

if TYPE_CHECKING:
    from host.runtime import HostRuntime

__all__ = ["IMMEDIATE_METHODS", "SettleMiddleware"]

IMMEDIATE_METHODS = frozenset({"ping", "logging/setLevel"})
"""Requests answered at once during start-up (they do not read the registry or the upstreams' capabilities)."""


class SettleMiddleware(ServerMiddleware[Any]):
    """The SDK context-tier middleware of the module docstring (append it to ``server.middleware``)."""

    def __init__(self, runtime: HostRuntime, timeout_seconds: float) -> None:
        self.runtime = runtime
        self.deadline = time.monotonic() + timeout_seconds
        self._settled = False

    async def __call__(self, ctx: ServerRequestContext[Any, Any], call_next: CallNext) -> HandlerResult:
        if not self._settled and ctx.request_id is not None and ctx.method not in IMMEDIATE_METHODS:
            left = self.deadline - time.monotonic()
            self._settled = left <= 0 or await self.runtime.settled(left)
        return await call_next(ctx)
