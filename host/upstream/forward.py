"""Forwarding of prompt, resource and completion requests to one upstream connection.

Each helper runs the request on the connection's live SDK client inside
:meth:`host.upstream.relay.Relay.active` (so upstream logs/elicitations during it reach the
calling client), bounded by ``timeout_seconds``. Upstream JSON-RPC errors propagate unchanged
as :class:`mcp.MCPError` (code, message, data), so the gateway answers exactly what the
upstream answered; a dead connection raises :class:`host.errors.UpstreamUnavailable`.
"""

from __future__ import annotations

from collections.abc import Awaitable, Callable, Iterator
from contextlib import contextmanager
from typing import Any, TypeVar

import anyio
import httpx2
from mcp import MCPError
from mcp.types import (
    CompleteResult,
    EmptyResult,
    GetPromptResult,
    PromptReference,
    ReadResourceResult,
    ResourceTemplateReference,
)

from host.errors import UpstreamUnavailable
from host.upstream.connection import ServerConnection
from host.upstream.input_required import SamplingDisabled, current_exchange, run_round
from host.upstream.relay import log_level_meta

__all__ = ["complete", "get_prompt", "read_resource", "subscribe", "unsubscribe"]

T = TypeVar("T")


async def _run(
    conn: ServerConnection, timeout_seconds: float, op: Callable[[Any], Awaitable[T]], what: str = "a request"
) -> T:
    """``op(client)`` on the live client; a ``protocol: auto`` server that refuses its own mid-call
    request on 2026-07-28 is reconnected with the handshake and ``op`` runs once more (as for
    ``tools/call``, :meth:`ServerConnection.switch_to_handshake`; a 2026-07-28 client gets the
    refusal, with a note to ask again, since its rounds were set up for the old session)."""
    deadline = anyio.current_time() + timeout_seconds
    client = conn.connected_client()
    try:
        with conn.relay.active(), anyio.fail_after(timeout_seconds):
            try:
                return await op(client)
            except MCPError as err:
                if not conn.refused_back_channel(err.code, err.message, client):
                    raise
                await conn.switch_to_handshake(what, err.message, deadline)
                if current_exchange() is not None:
                    raise MCPError(err.code, f"{err.message} (toolhost reconnected the server with the 2025-11-25 "
                                   "handshake, which lets it ask you mid-call: ask again)", err.data) from None
                return await op(conn.connected_client())
    except TimeoutError:
        raise UpstreamUnavailable(conn.name, f"no answer within {timeout_seconds:g} s") from None
    except (anyio.ClosedResourceError, anyio.BrokenResourceError, anyio.EndOfStream, httpx2.TransportError) as err:
        raise UpstreamUnavailable(conn.name, f"connection lost: {type(err).__name__}") from None


@contextmanager
def _sampling_refusal(server: str) -> Iterator[None]:
    """The :class:`SamplingDisabled` refusal the SDK re-raises (driving a 2026-07-28 upstream's input
    rounds for an older client) answered as that refusal: ``-32600``, "sampling is disabled for
    server NAME", ``data`` naming the server and setting - as a ``tools/call`` states it."""
    try:
        yield
    except MCPError as err:
        if SamplingDisabled.raised_for(err, server):
            raise SamplingDisabled(server) from None
        raise


async def get_prompt(
    conn: ServerConnection, name: str, arguments: dict[str, str] | None, *, timeout_seconds: float
) -> GetPromptResult | None:
    """``prompts/get`` of the original prompt ``name``.

    Returns ``None`` when the upstream needs input from the client (2026-07-28 on both sides:
    the result to answer with is in :func:`host.upstream.input_required.current_exchange`).
    """
    async def op(c: Any) -> GetPromptResult | None:
        exchange, meta = current_exchange(), log_level_meta(c.protocol_version)
        if exchange is None or c.protocol_version < "2026":
            with _sampling_refusal(conn.name):
                return await c.get_prompt(name, arguments, meta=meta)
        return await run_round(exchange, lambda responses, state: c.session.get_prompt(
            name, arguments, input_responses=responses, request_state=state, allow_input_required=True,
            meta=meta), server=conn.name, allow_sampling=conn.relay.allow_sampling)

    return await _run(conn, timeout_seconds, op, f"prompts/get {name}")


async def read_resource(conn: ServerConnection, uri: str, *, timeout_seconds: float) -> ReadResourceResult | None:
    """``resources/read`` of the original ``uri`` (``None``: input required, as in :func:`get_prompt`)."""
    async def op(c: Any) -> ReadResourceResult | None:
        exchange, meta = current_exchange(), log_level_meta(c.protocol_version)
        if exchange is None or c.protocol_version < "2026":
            with _sampling_refusal(conn.name):
                return await c.read_resource(uri, cache_mode="bypass", meta=meta)
        return await run_round(exchange, lambda responses, state: c.session.read_resource(
            uri, input_responses=responses, request_state=state, allow_input_required=True,
            meta=meta), server=conn.name, allow_sampling=conn.relay.allow_sampling)

    return await _run(conn, timeout_seconds, op, "resources/read")


async def subscribe(conn: ServerConnection, uri: str, *, timeout_seconds: float) -> EmptyResult:
    """Watch the original ``uri``: ``resources/subscribe`` on handshake-era upstreams; on 2026-07-28
    ones, the connection's ``subscriptions/listen`` stream re-opened with the URI
    (:class:`host.upstream.listen.UpstreamListener`)."""
    async def op(c: Any) -> EmptyResult:
        if c.protocol_version >= "2026":
            await conn.listener.subscribe(uri, timeout_seconds=timeout_seconds)
            return EmptyResult()
        return await c.subscribe_resource(uri)

    return await _run(conn, timeout_seconds, op)


async def unsubscribe(conn: ServerConnection, uri: str, *, timeout_seconds: float) -> EmptyResult:
    """Stop watching the original ``uri`` (``resources/unsubscribe``, or the listen stream without it)."""
    async def op(c: Any) -> EmptyResult:
        if c.protocol_version >= "2026":
            await conn.listener.unsubscribe(uri, timeout_seconds=timeout_seconds)
            return EmptyResult()
        return await c.unsubscribe_resource(uri)

    return await _run(conn, timeout_seconds, op)


async def complete(
    conn: ServerConnection,
    ref: PromptReference | ResourceTemplateReference,
    argument: dict[str, str],
    context_arguments: dict[str, str] | None,
    *,
    timeout_seconds: float,
) -> CompleteResult:
    """``completion/complete`` for an original prompt name / URI template."""
    return await _run(conn, timeout_seconds, lambda c: c.complete(ref, argument, context_arguments))
