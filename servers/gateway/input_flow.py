"""The registry server's side of the 2026-07-28 input-required flow (see :mod:`host.upstream.input_required`).

* :func:`exchange_for` opens the exchange of one ``tools/call`` / ``prompts/get`` /
  ``resources/read`` of a 2026-07-28 client (``None`` for handshake-era clients: their upstream
  input requests go through :mod:`host.upstream.relay` as classic requests);
* :func:`request_state_boundary` is the SDK middleware that seals toolhost's ``requestState``
  (AES-256-GCM; bound to method, tool name / URI, arguments, toolhost user, server name, TTL
  :data:`STATE_TTL_SECONDS`) and rejects any other with ``-32602 Invalid or expired requestState``.

Keys: ``$TOOLHOST_REQUEST_STATE_KEYS`` (comma-separated secrets of at least 32 bytes; the first
seals, all unseal - rotation) so that every replica behind a load balancer accepts the state any
of them minted; unset, a key is generated per process (one ``toolhost serve`` process: a retry
after a restart is refused and the client starts the call again).
"""

from __future__ import annotations

import os
from collections.abc import Callable
from typing import Any

from mcp.server import ServerRequestContext
from mcp.server.request_state import RequestStateBoundary, RequestStateSecurity
from mcp.server.session import ServerSession
from mcp.types import (
    ClientCapabilities,
    ElicitationCapability,
    InputRequiredResult,
    InputResponseRequestParams,
    RootsCapability,
    SamplingCapability,
)

from host.upstream.input_required import ELICIT, ROOTS, SAMPLE, InputExchange, decode_parked, decode_state
from registry import Principal
from servers.gateway.request_view import RequestView

__all__ = ["KEYS_ENV", "STATE_TTL_SECONDS", "exchange_for", "pending_result", "request_state_boundary"]

KEYS_ENV = "TOOLHOST_REQUEST_STATE_KEYS"
STATE_TTL_SECONDS = 600.0
"""How long a client may take to answer an input request before toolhost's state expires (seconds)."""

_KINDS = (
    (ELICIT, ClientCapabilities(elicitation=ElicitationCapability())),
    (SAMPLE, ClientCapabilities(sampling=SamplingCapability())),
    (ROOTS, ClientCapabilities(roots=RootsCapability())),
)


def _declares(session: ServerSession, caps: ClientCapabilities) -> bool:
    try:
        return bool(session.check_client_capability(caps))
    except Exception:  # noqa: BLE001 - a session that cannot tell is not asked
        return False


def exchange_for(request: RequestView, params: InputResponseRequestParams) -> InputExchange | None:
    """The input exchange of a 2026-07-28 request (``params``: its ``*RequestParams``), else ``None``.

    Raises:
        MCPError: ``-32602`` for a ``requestState`` that is not toolhost's.
    """
    if not request.modern or request.session is None:
        return None
    state = params.request_state
    upstream, local = decode_state(state)
    declared = frozenset(method for method, caps in _KINDS if _declares(request.session, caps))
    return InputExchange(declared=declared, input_responses=params.input_responses,
                         upstream_state=upstream, local=local, parked=decode_parked(state))


def pending_result(exchange: InputExchange | None) -> InputRequiredResult | None:
    """The ``InputRequiredResult`` to answer with when the upstream needs the client's input.

    Raises:
        MCPError: the round needed input the client did not declare (``-32021``).
    """
    if exchange is None:
        return None
    if exchange.refused is not None:
        raise exchange.refused
    return exchange.pending


def _keys() -> list[str] | None:
    raw = os.environ.get(KEYS_ENV, "")
    keys = [k.strip() for k in raw.split(",") if k.strip()]
    return keys or None


def request_state_boundary(name: str, principal_for: Callable[[RequestView], Principal]) -> RequestStateBoundary:
    """The ``requestState`` sealing middleware (module docstring); append it to ``server.middleware``.

    Raises:
        ValueError: a key in ``$TOOLHOST_REQUEST_STATE_KEYS`` is shorter than 32 bytes (the SDK's message).
    """
    def bind(ctx: ServerRequestContext[Any, Any]) -> str | None:
        return principal_for(RequestView.of(ctx)).user

    # unset: one key generated now, held by this process (what RequestStateSecurity.ephemeral does)
    keys: list[str | bytes] = list(_keys() or [os.urandom(32)])
    security = RequestStateSecurity(keys=keys, ttl=STATE_TTL_SECONDS, bind_principal=bind)
    return RequestStateBoundary(security, default_audience=name)
