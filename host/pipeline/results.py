"""Builders of error results and the truthful classification of execution failures.

Status meanings (``host.calls.ResultStatus``):

* ``timeout``: no answer within the budget; the upstream request was cancelled.
* ``rate_limited``: the upstream said "slow down" (JSON-RPC error marked as such, see
  :func:`rate_limit_info`); ``retry_after_seconds`` is copied when the upstream gave one.
  The pipeline never retries it itself.
* ``upstream_unavailable``: the server is not connected; raised at once by the executor, the
  call was **not sent** (``details.sent = false``: safe to retry once the server is back) — or
  the call **was sent** and the connection was then cut (upstream death, transport close,
  ``serve`` shutdown): ``details.sent = true``, ``details.outcome = "unknown"``; the text says
  it may have run and suggests a retry only for read-only or idempotent tools.
* ``upstream_error``: the server answered ``tools/call`` with a JSON-RPC error (code + message
  kept in ``details``), or the executor failed in an unexpected way (``details.exception``).
* ``tool_error``: the tool itself answered ``isError: true``; its content passes through.
"""

from __future__ import annotations

import email.utils
import math
import re
import time
from typing import Any

from mcp.shared.exceptions import MCPError
from mcp.types import REQUEST_TIMEOUT

from host.calls import ErrorInfo, ResultStatus, TextBlock, ToolCall, ToolResult
from host.errors import CallOutcomeUnknown, CallTimeout, UpstreamError, UpstreamUnavailable

__all__ = ["error_result", "classify_exception", "rate_limit_info"]

RETRY_AFTER_KEYS = (
    "retry_after_seconds",
    "retryAfterSeconds",
    "retry_after",
    "retryAfter",
    "Retry-After",
    "retry-after",
)
"""Keys of a JSON-RPC error's ``data`` (or its ``headers`` member) read as a Retry-After value."""

RATE_LIMIT_CODES = frozenset({429, -32029})
"""JSON-RPC error codes some servers use for rate limits (no MCP standard code exists)."""

_RATE_TEXT = re.compile(r"rate[ _-]?limit|too many requests|\b429\b", re.I)
_RATE_MARKERS = frozenset({"rate_limited", "rate_limit", "rate_limit_exceeded", "too_many_requests", "ratelimited"})


def error_result(
    call: ToolCall,
    status: ResultStatus,
    message: str,
    *,
    where: str,
    details: dict[str, Any] | None = None,
    retry_after_seconds: float | None = None,
    approval_id: str | None = None,
) -> ToolResult:
    """An error result whose model text is ``"<status>: <message>"``."""
    return ToolResult(
        call_id=call.call_id,
        name=call.name,
        status=status,
        content=[TextBlock(text=f"{status.value}: {message}")],
        error=ErrorInfo(
            code=status.value,
            message=message,
            where=where,
            details=details or {},
            retry_after_seconds=retry_after_seconds,
            approval_id=approval_id,
        ),
    )


def _seconds(value: Any) -> float | None:
    if isinstance(value, bool):
        return None
    if isinstance(value, int | float):
        return float(value) if math.isfinite(value) and value >= 0 else None
    if isinstance(value, str):
        text = value.strip()
        try:
            number = float(text)
        except ValueError:
            try:  # HTTP-date form of Retry-After (RFC 9110 §10.2.3)
                when = email.utils.parsedate_to_datetime(text)
            except (TypeError, ValueError):
                return None
            return max(0.0, when.timestamp() - time.time())
        return number if math.isfinite(number) and number >= 0 else None
    return None


def rate_limit_info(code: int | None, message: str, data: Any) -> tuple[bool, float | None]:
    """``(is_rate_limited, retry_after_seconds)`` for a JSON-RPC error.

    Rate-limited when ``data`` carries a Retry-After key (:data:`RETRY_AFTER_KEYS`, also under
    ``data.headers``), an HTTP status 429 (``status``/``httpStatus``/``http_status``), an error
    marker such as ``"rate_limited"`` (``error``/``type``/``reason``/``code``), when ``code`` is in
    :data:`RATE_LIMIT_CODES`, or when the message says "rate limit" / "too many requests".
    """
    retry: float | None = None
    marked = code in RATE_LIMIT_CODES
    if isinstance(data, dict):
        sources = [data]
        if isinstance(data.get("headers"), dict):
            sources.append(data["headers"])
        for src in sources:
            for key in RETRY_AFTER_KEYS:
                if key in src and retry is None:
                    retry = _seconds(src[key])
                    marked = marked or retry is not None
        for key in ("status", "httpStatus", "http_status", "statusCode"):
            if data.get(key) == 429:
                marked = True
        for key in ("error", "type", "reason", "code"):
            val = data.get(key)
            if isinstance(val, str) and val.lower() in _RATE_MARKERS:
                marked = True
    if not marked and _RATE_TEXT.search(message or ""):
        marked = True
    return marked, (retry if marked else None)


def _upstream(call: ToolCall, server: str, code: int, message: str, data: Any) -> ToolResult:
    limited, retry = rate_limit_info(code, message, data)
    details: dict[str, Any] = {"server": server, "mcp_code": code, "mcp_message": message}
    if data is not None:
        details["mcp_data"] = data
    if limited:
        hint = f"retry after {retry:g} s" if retry is not None else "wait before retrying"
        return error_result(call, ResultStatus.RATE_LIMITED, f"the server {server!r} is rate limiting calls "
                            f"({message}); {hint}", where="execute", details=details, retry_after_seconds=retry)
    return error_result(call, ResultStatus.UPSTREAM_ERROR, f"the server {server!r} answered with MCP error "
                        f"{code}: {message}", where="execute", details=details)


def classify_exception(
    call: ToolCall, server: str, exc: BaseException, timeout_seconds: float, *, retry_safe: bool = False
) -> ToolResult:
    """The result for an exception raised by the executor (see module docstring).

    ``retry_safe``: the tool is read-only or idempotent, so a call whose outcome is unknown
    may be repeated; otherwise the text advises checking its effect first.
    """
    if isinstance(exc, CallTimeout | TimeoutError):
        budget = exc.timeout_seconds if isinstance(exc, CallTimeout) else timeout_seconds
        return error_result(call, ResultStatus.TIMEOUT, f"no answer within {budget:g} s; the request was "
                            "cancelled. Try a smaller request or try again later", where="execute",
                            details={"server": server, "timeout_seconds": budget})
    if isinstance(exc, UpstreamUnavailable):
        return error_result(call, ResultStatus.UPSTREAM_UNAVAILABLE, f"the server {exc.server!r} is not "
                            f"connected ({exc.reason}); the call was not sent, so it is safe to retry "
                            "once the server is back", where="execute",
                            details={"server": exc.server, "reason": exc.reason, "sent": False})
    if isinstance(exc, CallOutcomeUnknown):
        advice = ("the tool is read-only or idempotent, so retrying is safe" if retry_safe else
                  "do not retry blindly: check whether it took effect first")
        return error_result(call, ResultStatus.UPSTREAM_UNAVAILABLE, f"the call was sent to {exc.server!r}, then "
                            f"the connection was lost ({exc.reason}); the outcome is unknown (it may have run); "
                            f"{advice}", where="execute",
                            details={"server": exc.server, "reason": exc.reason, "sent": True,
                                     "outcome": "unknown", "retry_safe": retry_safe})
    if isinstance(exc, UpstreamError):
        return _upstream(call, exc.server, exc.code, exc.error_message, exc.data)
    if isinstance(exc, MCPError):
        if exc.code == REQUEST_TIMEOUT:
            return classify_exception(call, server, CallTimeout(server, call.name, timeout_seconds), timeout_seconds)
        return _upstream(call, server, exc.code, exc.message, exc.data)
    return error_result(call, ResultStatus.UPSTREAM_ERROR, f"calling the server {server!r} failed inside "
                        f"toolhost: {type(exc).__name__}: {exc}", where="execute",
                        details={"server": server, "exception": type(exc).__name__})
