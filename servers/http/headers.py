"""Header values without surrounding whitespace, as RFC 9110 §5.5 requires of field parsing.

uvicorn's ``httptools`` parser hands trailing spaces/tabs of a header value through, and the SDK
compares the 2026-07-28 routing headers (``Mcp-Method``, ``Mcp-Name``, ``Mcp-Param-*``) with the
request body byte for byte, so ``Mcp-Name:  echo  `` was refused with ``-32020`` HeaderMismatch
although it names ``echo``. :func:`strip_header_whitespace` wraps the ASGI app and trims leading
and trailing SP/HTAB from every header value before anything reads it.
"""

from __future__ import annotations

from starlette.types import ASGIApp, Receive, Scope, Send

__all__ = ["strip_header_whitespace"]

_OWS = b" \t"


def strip_header_whitespace(app: ASGIApp) -> ASGIApp:
    """``app`` with leading/trailing optional whitespace removed from HTTP header values."""

    async def wrapped(scope: Scope, receive: Receive, send: Send) -> None:
        if scope["type"] == "http":
            headers = scope.get("headers") or []
            if any(v[:1] in (b" ", b"\t") or v[-1:] in (b" ", b"\t") for _k, v in headers):
                scope = dict(scope, headers=[(k, v.strip(_OWS)) for k, v in headers])
        await app(scope, receive, send)

    return wrapped
