"""The 2026-07-28 input-required flow (SEP-2322, "MRTR") between a downstream request and an upstream.

On the 2026-07-28 protocol a server that needs elicitation, sampling or roots during
``tools/call``, ``prompts/get`` or ``resources/read`` does not send a request back: it answers
with an ``InputRequiredResult`` (``resultType: "input_required"``, ``inputRequests`` keyed by
server-chosen names, an opaque ``requestState``), and the client retries the same request
carrying ``inputResponses`` (same keys) and the echoed ``requestState``.

How toolhost relays it, by the protocols of the two sides:

* **downstream 2026-07-28, upstream 2026-07-28** (this module): the downstream request handler
  opens an :class:`InputExchange` (:func:`input_exchange`, a context variable) with what the
  client sent (``inputResponses``, toolhost's own decoded ``requestState``). The upstream call
  runs **one round** (``allow_input_required=True``) with those responses and the upstream's
  state. An ``InputRequiredResult`` from the upstream is not driven by toolhost: it is kept in
  :attr:`InputExchange.pending`, and the handler answers the client with it - the same
  ``inputRequests`` (keys and params unchanged) and a ``requestState`` of toolhost's own that
  carries the upstream's state. The gateway keeps no memory between rounds (any replica can
  serve the retry); toolhost's state is sealed by the SDK's ``RequestStateBoundary`` (AES-GCM,
  bound to the method, tool name, arguments, the toolhost user and a TTL), so a client cannot
  read, alter or replay another user's state (``-32602 Invalid or expired requestState``).
* What reaches the client says which server asks, as on the handshake wire
  (:mod:`host.upstream.relay`): an embedded elicitation's ``message`` starts with
  ``[MCP server 'NAME' asks]``, a sampling request's ``systemPrompt`` with
  ``[Requested by MCP server 'NAME' through toolhost]`` (``_meta["toolhost/server"]`` too, which the
  SDK's 2026-07-28 result surface drops from embedded requests; a handshake-era client keeps it).
  A server whose config sets ``toolhost.sampling: false`` never gets a sampling request to the
  client: the request fails with :class:`SamplingDisabled` (the input-response union has no error
  arm to send the upstream instead); likewise a sampling request the session-taint rule refuses
  (:func:`host.upstream.relay.sample_refusal`, ``data.rule`` ``taint``).
* Kinds the client did not declare (per-request ``clientCapabilities``; toolhost itself declares
  every kind upstream) are answered by toolhost at once, as on the handshake wire
  (:mod:`host.upstream.relay`): an elicitation is **declined** (kept in toolhost's state and
  merged into the next round); sampling / roots fail the request with ``-32021``
  MissingRequiredClientCapabilityError, ``data.requiredCapabilities`` naming the capability.
* **downstream older than 2026-07-28, upstream 2026-07-28**: no exchange is open; the SDK
  client drives the rounds itself and each embedded request goes through the relay callbacks as
  a classic server→client request on the calling request's stream.
* **upstream older than 2026-07-28**: the upstream sends classic requests mid-call; they reach a
  handshake-era downstream through the relay. For a 2026-07-28 downstream toolhost holds the
  upstream call open across the client's retries and hands it the questions as
  ``inputRequests`` (:mod:`host.upstream.parked_input`).

Source: MCP 2026-07-28 draft, basic/utilities/mrtr (SEP-2322).
"""

from __future__ import annotations

import json
from collections.abc import Awaitable, Callable, Iterator
from contextlib import contextmanager
from contextvars import ContextVar
from dataclasses import dataclass, field
from typing import Any, TypeVar

from mcp import MCPError
from mcp.types import (
    INVALID_PARAMS,
    INVALID_REQUEST,
    MISSING_REQUIRED_CLIENT_CAPABILITY,
    CreateMessageRequest,
    ElicitRequest,
    ElicitResult,
    InputRequiredResult,
)

from host.upstream.relay import (
    InputRefused,
    SamplingDisabled,
    attributed_elicitation,
    attributed_sampling,
    current_downstream,
    sample_refusal,
)

__all__ = [
    "ELICIT",
    "MAX_LOCAL_ROUNDS",
    "ROOTS",
    "SAMPLE",
    "InputExchange",
    "InputNotDeclared",
    "InputRefused",
    "SamplingDisabled",
    "attributed",
    "current_exchange",
    "decode_parked",
    "decode_state",
    "encode_state",
    "input_exchange",
    "run_round",
]

ELICIT = "elicitation/create"
SAMPLE = "sampling/createMessage"
ROOTS = "roots/list"
MAX_LOCAL_ROUNDS = 10
"""Most rounds toolhost answers itself (undeclared elicitations) before giving up (same cap as the SDK driver)."""

R = TypeVar("R")
_CAPABILITY = {SAMPLE: "sampling", ROOTS: "roots"}


class InputNotDeclared(InputRefused):
    """The upstream needs input the calling client did not declare: ``-32021``
    MissingRequiredClientCapabilityError, ``data.requiredCapabilities`` naming it (e.g.
    ``{"sampling": {}}``; HTTP 400), answered as that JSON-RPC error to the client's request."""

    def __init__(self, message: str, capability: str) -> None:
        super().__init__(MISSING_REQUIRED_CLIENT_CAPABILITY, message, {"requiredCapabilities": {capability: {}}})


@dataclass
class InputExchange:
    """One downstream 2026-07-28 request's side of the input-required flow.

    Attributes:
        declared: the input methods the client can answer (``elicitation/create``,
            ``sampling/createMessage``, ``roots/list``), from its declared capabilities.
        input_responses: what the client answered (keyed like the requests it was sent), or ``None``.
        upstream_state: the upstream's ``requestState`` carried in toolhost's state, or ``None``.
        local: answers toolhost gave itself in an earlier round (declined elicitations), merged
            into the responses sent upstream.
        pending: set by :func:`run_round` when the upstream needs input: the result to answer
            the client with (toolhost's ``requestState`` still plaintext; the boundary seals it).
        refused: set when a ``tools/call`` round needs input the client did not declare: the
            error the handler answers with (the call pipeline only carries results).
    """

    declared: frozenset[str]
    input_responses: dict[str, Any] | None = None
    upstream_state: str | None = None
    local: dict[str, Any] = field(default_factory=dict)
    pending: InputRequiredResult | None = None
    refused: MCPError | None = None
    parked: str | None = None
    """The parked upstream call this retry resumes (:mod:`host.upstream.parked_input`), or ``None``."""

    def responses(self) -> dict[str, Any] | None:
        merged = {**(self.input_responses or {}), **self.local}
        return merged or None


_EXCHANGE: ContextVar[InputExchange | None] = ContextVar("toolhost_input_exchange", default=None)


@contextmanager
def input_exchange(exchange: InputExchange | None) -> Iterator[InputExchange | None]:
    """Within this block, upstream 2026-07-28 requests run one input round for ``exchange``."""
    token = _EXCHANGE.set(exchange)
    try:
        yield exchange
    finally:
        _EXCHANGE.reset(token)


def current_exchange() -> InputExchange | None:
    """The open exchange of the running downstream request, or ``None``."""
    return _EXCHANGE.get()


def decode_state(state: str | None) -> tuple[str | None, dict[str, Any]]:
    """Toolhost's (already unsealed) ``requestState`` → (upstream state, local answers).

    Raises:
        MCPError: ``-32602`` when the plaintext is not toolhost's shape (cannot happen for a
            state the boundary verified, but a server without the boundary must not crash).
    """
    if state is None:
        return None, {}
    try:
        data = json.loads(state)
        upstream, local = data.get("u"), data.get("l") or {}
        if (upstream is not None and not isinstance(upstream, str)) or not isinstance(local, dict):
            raise ValueError("shape")
    except (ValueError, AttributeError):
        raise MCPError(INVALID_PARAMS, "Invalid or expired requestState", {"reason": "invalid_request_state"}) from None
    return upstream, local


def encode_state(upstream_state: str | None, local: dict[str, Any], *, parked: str | None = None) -> str:
    """Toolhost's plaintext ``requestState`` (sealed by the server boundary before it leaves);
    ``parked`` names a parked upstream call (:mod:`host.upstream.parked_input`)."""
    data: dict[str, Any] = {"u": upstream_state, "l": local}
    if parked is not None:
        data["p"] = parked
    return json.dumps(data, separators=(",", ":"))


def decode_parked(state: str | None) -> str | None:
    """The parked call named in toolhost's (unsealed) ``requestState``, or ``None``."""
    if state is None:
        return None
    try:
        parked = json.loads(state).get("p")
    except (ValueError, AttributeError):
        return None
    return parked if isinstance(parked, str) else None


def attributed(request: Any, server: str) -> Any:
    """An embedded input request as the client sees it: elicitation and sampling say which server asks
    (:func:`host.upstream.relay.attributed_elicitation` / :func:`~host.upstream.relay.attributed_sampling`);
    ``roots/list`` unchanged."""
    if isinstance(request, ElicitRequest):
        return request.model_copy(update={"params": attributed_elicitation(request.params, server)})
    if isinstance(request, CreateMessageRequest):
        return request.model_copy(update={"params": attributed_sampling(request.params, server)})
    return request


async def run_round(
    exchange: InputExchange,
    send: Callable[[dict[str, Any] | None, str | None], Awaitable[R | InputRequiredResult]],
    *,
    server: str,
    allow_sampling: bool = True,
) -> R | None:
    """Send one upstream request for ``exchange``; returns its final result, or ``None`` when the
    upstream needs input from the client (then :attr:`InputExchange.pending` is set).

    Args:
        send: issues the upstream request with (input responses, upstream request state) and
            ``allow_input_required=True``.
        server: the upstream's config name (error messages; the attribution the client sees).
        allow_sampling: ``False`` (``toolhost.sampling: false``): a sampling request fails the round.

    Raises:
        SamplingDisabled: the upstream asked for sampling and ``allow_sampling`` is false.
        InputNotDeclared: the upstream needs sampling or roots the client did not declare.
        MCPError: ``-32600`` when the upstream kept asking only for what toolhost answers itself;
            any upstream JSON-RPC error, unchanged.
    """
    result = await send(exchange.responses(), exchange.upstream_state)
    for _ in range(MAX_LOCAL_ROUNDS):
        if not isinstance(result, InputRequiredResult):
            return result
        requests = dict(result.input_requests or {})
        if not allow_sampling and any(r.method == SAMPLE for r in requests.values()):
            raise SamplingDisabled(server)
        missing = {k: r for k, r in requests.items() if r.method not in exchange.declared}
        for req in missing.values():
            if req.method != ELICIT:
                raise InputNotDeclared(f"toolhost: {server!r} needs {req.method} input, but the client "
                                       f"that made this request did not declare the {_CAPABILITY[req.method]} "
                                       "capability", _CAPABILITY[req.method])
        local = {key: ElicitResult(action="decline").model_dump(mode="json", by_alias=True, exclude_none=True)
                 for key in missing}
        forward = {k: attributed(r, server) for k, r in requests.items() if k not in missing}
        if any(r.method == SAMPLE for r in forward.values()):
            refused = await sample_refusal(current_downstream(), server)
            if refused is not None:
                raise InputRefused(INVALID_REQUEST, refused, {"server": server, "rule": "taint"})
        if forward or not local:
            exchange.pending = InputRequiredResult(
                input_requests=forward or None, request_state=encode_state(result.request_state, local))
            return None
        # Only requests toolhost answers itself: answer and go on without the client.
        exchange.local, exchange.input_responses = local, None
        result = await send(exchange.responses(), result.request_state)
    raise MCPError(INVALID_REQUEST, f"toolhost: {server!r} kept asking for input the client cannot give "
                   f"({MAX_LOCAL_ROUNDS} rounds)")
