"""The MCP SDK internals the gateway's HTTP front end relies on, where the SDK offers no public hook.

Checked against **mcp 2.3.0** (:data:`SDK_VERSION_CHECKED`). Everything else the HTTP front end
uses is the SDK's public API: the session manager's and the transport's constructors, the auth
middleware and routes, ``StreamableHTTPASGIApp``. What the SDK does not offer, and how each gap
is bridged (one list, :data:`SEAMS`):

* **Choosing the session transport.** ``StreamableHTTPSessionManager._admit_session`` builds a
  plain ``StreamableHTTPServerTransport`` and takes no factory, so
  :class:`servers.http.sessions.FairSessionManager` overrides it (the per-user limit, then a
  :class:`servers.http.transport.GatewayTransport` with the session's own event store) and
  registers the session in the manager's ``_server_instances`` / ``_session_owners`` tables, which
  it also reads for the per-user counts.
* **Routing before the SDK's session handling.** ``_handle_request`` (the lean 2026-07-28 entry)
  and ``_handle_stateful_request`` (the per-user 429 before a session opens) are overridden; the
  SDK's ``__init__`` binds ``self._handle_request`` into its body-size middleware (``asgi_app``),
  so constructing the subclass is enough. The lean entry needs the manager's ``_task_group`` and
  ``_lifespan_state``.
* **The transport's state.** ``GatewayTransport`` reads ``_requests_in_flight`` (idle sessions),
  ``_request_streams`` (ids in flight) and ``_event_store``; ``ResumableTransport`` overrides
  ``_mint_priming_event`` (no priming event on a resumed stream).
* **The 2026-07-28 single-exchange helpers** of ``mcp.server._streamable_http_modern``, reused by
  :mod:`servers.http.lean_entry` so its answers stay the SDK's.

:func:`check_sdk_seams` runs once per session manager (no per-request work) and refuses to build
one when a member is gone, so an SDK that renamed e.g. ``_admit_session`` fails at start-up instead
of silently skipping the per-user limit and the request-id checks. ``tests/servers/test_sdk_seams.py``
also compares every callable's parameters with the ones recorded here: when it fails after an SDK
upgrade, re-read the named member in the new SDK, adapt the code that uses it, then update
:data:`SEAMS` and :data:`SDK_VERSION_CHECKED`.
"""

from __future__ import annotations

import inspect
from dataclasses import dataclass
from importlib.metadata import version
from types import ModuleType
from typing import Any, Literal

from mcp.server import _streamable_http_modern as modern_entry
from mcp.server.streamable_http import StreamableHTTPServerTransport
from mcp.server.streamable_http_manager import StreamableHTTPSessionManager
from mcp.server.transport_security import RequestBodyLimitMiddleware

__all__ = ["SDK_VERSION_CHECKED", "SEAMS", "SdkSeamError", "Seam", "check_sdk_seams", "seam_problems"]

SDK_VERSION_CHECKED = "2.3.0"
"""The ``mcp`` version whose source the members in :data:`SEAMS` were checked against."""

Where = Literal["manager", "transport", "modern_entry"]


@dataclass(frozen=True)
class Seam:
    """One SDK member the gateway relies on.

    Attributes:
        where: ``manager`` (``StreamableHTTPSessionManager``), ``transport``
            (``StreamableHTTPServerTransport``) or ``modern_entry`` (the module
            ``mcp.server._streamable_http_modern``).
        name: the member's name.
        parameters: a callable's parameter names in order (``self`` included for methods);
            ``None`` for a value (an instance attribute or a module constant).
        use: what toolhost does with it, and where.
    """

    where: Where
    name: str
    parameters: tuple[str, ...] | None
    use: str


_ASGI = ("self", "scope", "receive", "send")
_MODERN = "servers.http.lean_entry"

SEAMS: tuple[Seam, ...] = (
    Seam("manager", "_admit_session", ("self", "requestor"),
         "overridden by FairSessionManager: per-user limit, GatewayTransport with its own event store"),
    Seam("manager", "_handle_request", _ASGI, "overridden by FairSessionManager: the lean 2026-07-28 entry"),
    Seam("manager", "_handle_stateful_request", _ASGI,
         "overridden by FairSessionManager: HTTP 429 before a user's session over the limit opens"),
    Seam("manager", "_server_instances", None, "read and written by FairSessionManager: session id -> transport"),
    Seam("manager", "_session_owners", None,
         "read and written by FairSessionManager: session id -> AuthorizationContext"),
    Seam("manager", "_task_group", None, "read by FairSessionManager: the manager runs (lean entry)"),
    Seam("manager", "_lifespan_state", None, "read by FairSessionManager: handed to the lean entry"),
    Seam("transport", "_mint_priming_event", ("self", "stream_id", "protocol_version"),
         "overridden by servers.http.event_store.ResumableTransport: no priming event on a resumed stream"),
    Seam("transport", "_event_store", None, "read by GatewayTransport and ResumableTransport"),
    Seam("transport", "_requests_in_flight", None, "read by GatewayTransport.idle: HTTP requests open"),
    Seam("transport", "_request_streams", None, "read by GatewayTransport: request ids with an open stream"),
    Seam("modern_entry", "handle_modern_request",
         ("app", "security_settings", "json_response", "lifespan_state", "scope", "receive", "send"),
         f"called by {_MODERN}: json_response mode, subscriptions/listen, unparsable bodies"),
    Seam("modern_entry", "_write", ("msg", "scope", "receive", "send"), f"called by {_MODERN}: a JSON answer"),
    Seam("modern_entry", "_write_rejection", ("rejection", "request_id", "scope", "receive", "send"),
         f"called by {_MODERN}: a classified rejection"),
    Seam("modern_entry", "_is_notification_shaped", ("decoded",), f"called by {_MODERN}"),
    Seam("modern_entry", "_acknowledge_notification", ("decoded", "request", "scope", "receive", "send"),
         f"called by {_MODERN}: 202 for a notification"),
    Seam("modern_entry", "_mcp_param_rejection", ("app", "request", "req", "verdict", "lifespan_state"),
         f"called by {_MODERN}: Mcp-Param-* header checks"),
    Seam("modern_entry", "_SingleExchangeDispatchContext",
         ("transport", "request_id", "message_metadata", "progress_token", "sink", "cancel_requested"),
         f"constructed by {_MODERN}: one request's dispatch context"),
    Seam("modern_entry", "_to_jsonrpc_response", ("request_id", "coro"), f"called by {_MODERN}"),
    Seam("modern_entry", "_sse_event", ("msg",), f"called by {_MODERN}: one SSE frame"),
    Seam("modern_entry", "_SSE_HEADERS", None, f"read by {_MODERN}: the SSE response headers"),
    Seam("modern_entry", "_SSE_PING_INTERVAL", None, f"read by {_MODERN}: keepalive (seconds)"),
    Seam("modern_entry", "_INVALID_BODY", None, f"read by {_MODERN}: the answer to a malformed body"),
)
"""Every SDK internal the HTTP front end relies on (module docstring)."""


class SdkSeamError(RuntimeError):
    """The installed ``mcp`` lacks (or changed) internals listed in :data:`SEAMS`.

    Attributes:
        problems: one line per member: where, name, what changed, and what toolhost uses it for.
    """

    def __init__(self, problems: list[str]) -> None:
        self.problems = problems
        super().__init__(
            f"the installed mcp {version('mcp')} differs from mcp {SDK_VERSION_CHECKED}, which toolhost's HTTP "
            "front end was checked against (servers/http/sdk_seams.py): " + "; ".join(problems)
            + f". Install mcp=={SDK_VERSION_CHECKED} or adapt the code named there to the new SDK."
        )


def _parameters(member: Any) -> tuple[str, ...]:
    return tuple(inspect.signature(member).parameters)


def _owners(manager: StreamableHTTPSessionManager | None) -> dict[Where, tuple[Any, Any]]:
    """``where`` -> (class or module for callables, instance or module for values)."""
    transport = StreamableHTTPServerTransport(None)  # cheap: no streams until connect()
    entry: ModuleType = modern_entry
    return {
        "manager": (StreamableHTTPSessionManager, manager),
        "transport": (StreamableHTTPServerTransport, transport),
        "modern_entry": (entry, entry),
    }


def seam_problems(manager: StreamableHTTPSessionManager | None = None, *, signatures: bool = True) -> list[str]:
    """What differs between the installed SDK and :data:`SEAMS` (empty: nothing).

    Args:
        manager: a constructed session manager, whose instance attributes are checked (``None``:
            the manager's attributes are not checked) and whose ``asgi_app`` must run its own
            ``_handle_request`` (so a subclass's override is the one that runs).
        signatures: also compare each callable's parameter names with the recorded ones.
    """
    owners = _owners(manager)
    problems = []
    for seam in SEAMS:
        cls, instance = owners[seam.where]
        holder = cls if seam.parameters is not None else instance
        if holder is None:
            continue
        if not hasattr(holder, seam.name):
            problems.append(f"{seam.where}.{seam.name} is gone ({seam.use})")
            continue
        if signatures and seam.parameters is not None:
            found = _parameters(getattr(holder, seam.name))
            if found != seam.parameters:
                problems.append(f"{seam.where}.{seam.name} takes {found}, not {seam.parameters} ({seam.use})")
    body_limit = manager.asgi_app if manager is not None else None
    if manager is not None and not (
        isinstance(body_limit, RequestBodyLimitMiddleware) and body_limit.app == manager._handle_request
    ):
        problems.append("manager.asgi_app no longer runs the manager's own _handle_request (the lean 2026-07-28 "
                        "entry and the per-user limit would be skipped)")
    return problems


def check_sdk_seams(manager: StreamableHTTPSessionManager) -> None:
    """Refuse to run ``manager`` when a member of :data:`SEAMS` is gone (names only: once per manager).

    Raises:
        SdkSeamError: naming each missing member and what toolhost uses it for.
    """
    problems = seam_problems(manager, signatures=False)
    if problems:
        raise SdkSeamError(problems)
