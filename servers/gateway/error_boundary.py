"""No Python exception text and no JSON-RPC code ``0`` on the wire.

The SDK's JSON-RPC dispatcher answers a handler's unexpected exception (not an ``MCPError``, not a
pydantic ``ValidationError``) with ``{"code": 0, "message": str(exception)}`` on 2025-era
sessions (``mcp.shared.jsonrpc_dispatcher``, pinned for compatibility), which leaks whatever the
exception says (a database host, a path, a driver message) and is no JSON-RPC error code.
:class:`InternalErrorBoundary` is the gateway's outermost server middleware
(``Server.middleware``, :class:`mcp.server.context.ServerMiddleware`): it logs such an exception
with its traceback and answers ``-32603`` (JSON-RPC 2.0 §5.1 *Internal error*) with a generic
message instead, in both protocol eras. ``MCPError`` and ``ValidationError`` pass through
unchanged (they already carry a proper code and no exception text). A permission-store outage
behind the exception answers the store-outage error instead (:mod:`servers.gateway.store_outage`:
"permission store unavailable (REASON); retry in N s", ``data.retry_after_seconds``), logged once
per 30 s without a traceback.
"""

from __future__ import annotations

import logging
from typing import Any

from mcp.server import ServerRequestContext
from mcp.server.context import CallNext, HandlerResult
from mcp.shared.exceptions import MCPError
from mcp.types import INTERNAL_ERROR
from pydantic import ValidationError

from servers.gateway.store_outage import find_store_error, note_outage, outage_error

__all__ = ["INTERNAL_ERROR_MESSAGE", "InternalErrorBoundary"]

_logger = logging.getLogger("toolhost.gateway")

INTERNAL_ERROR_MESSAGE = "Internal error: toolhost could not answer this request (the serve log has the details)"


class InternalErrorBoundary:
    """Server middleware mapping unexpected handler exceptions to ``-32603`` (module docstring)."""

    async def __call__(self, ctx: ServerRequestContext[Any, Any], call_next: CallNext) -> HandlerResult:
        try:
            return await call_next(ctx)
        except (MCPError, ValidationError):
            raise
        except Exception as exc:
            if (store := find_store_error(exc)) is not None:
                note_outage(store)
                error = outage_error(store)
                raise MCPError(error["code"], error["message"], error["data"]) from None
            _logger.exception("toolhost: the %s handler failed", ctx.method)
            raise MCPError(code=INTERNAL_ERROR, message=INTERNAL_ERROR_MESSAGE) from None
