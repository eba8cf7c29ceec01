"""Server→client traffic of an upstream, relayed to the downstream client that made the call.

During a ``tools/call`` (or ``prompts/get``, ``resources/read``, ``completion/complete``) an
upstream may send ``notifications/message`` (logs), ``elicitation/create``,
``sampling/createMessage`` or ``roots/list``. Upstream sessions are shared by every downstream
client, and on the handshake-era wire such a request names no call, so the relay routes by
*who is waiting on this connection right now*:

* The downstream request handler wraps its work in :func:`downstream_scope` with a
  :class:`Downstream` (a context variable, inherited by child tasks, like
  :func:`host.access.approval_elicitation`); the connection wraps each forwarded request in
  :meth:`Relay.active`, which records that downstream while the upstream request runs.
* When every in-flight request on the connection comes from one downstream session, that
  session is the target. Otherwise (no call in flight, or calls of several sessions at once)
  there is no safe target: logs go to the log file only, elicitation is **declined**, sampling
  and roots get a JSON-RPC error - at once, so the upstream never hangs.
* A target that did not declare the capability (``elicitation``, ``sampling``, ``roots``) gets
  the same immediate decline/error. Forwarded requests are bounded by
  :data:`FORWARD_TIMEOUT_SECONDS`.
* What reaches the user says which server asks: an elicitation's ``message`` starts with
  ``[MCP server 'NAME' asks]`` and a sampling request's ``systemPrompt`` with
  ``[Requested by MCP server 'NAME' through toolhost]``; both carry ``_meta["toolhost/server"]``.
  A server whose config sets ``toolhost.sampling: false`` gets an error for every sampling request,
  and the user is never asked (:attr:`Relay.allow_sampling`). ``includeContext`` is always sent as
  ``none`` (:func:`attributed_sampling`), and a sampling request during a call in a tainted session
  gets the session-taint rule's decision (:attr:`Downstream.sample_gate`).

Every upstream log message is also appended to ``<data_dir>/logs/<server>.log`` (one line:
UTC time, level, logger, JSON data). Source: MCP spec 2025-11-25, client features
(elicitation, sampling, roots) and server utilities (logging).
"""

from __future__ import annotations

import json
import time
from collections.abc import Awaitable, Callable, Iterator, Mapping
from contextlib import contextmanager
from contextvars import ContextVar
from dataclasses import dataclass, replace
from pathlib import Path
from typing import Any

import anyio
from mcp import MCPError
from mcp.types import (
    INVALID_REQUEST,
    CreateMessageRequestParams,
    CreateMessageResult,
    ElicitRequestParams,
    ElicitResult,
    ErrorData,
    ListRootsResult,
    LoggingMessageNotificationParams,
)
from mcp_types import LOG_LEVEL_META_KEY

from host.upstream.serverlog import LogLimits, NotificationBudget, RotatingFile
from registry.redaction import redact

__all__ = [
    "FORWARD_TIMEOUT_SECONDS",
    "LOG_LEVELS",
    "SERVER_LOG_FLOOR",
    "Downstream",
    "InputRefused",
    "Relay",
    "SampleGate",
    "SamplingDisabled",
    "current_downstream",
    "downstream_scope",
    "log_level_meta",
    "sample_gate_scope",
    "sample_refusal",
]

FORWARD_TIMEOUT_SECONDS = 300.0
"""Longest wait for a downstream answer to a relayed elicitation/sampling/roots request (seconds)."""

LOG_LEVELS = ("debug", "info", "notice", "warning", "error", "critical", "alert", "emergency")
"""MCP (RFC 5424) log levels, least to most severe."""

SERVER_LOG_FLOOR = "info"
"""The least severe level an upstream's log file keeps whatever level a client asks for."""


SampleGate = Callable[[str], Awaitable[str | None]]
"""``await gate(server)``: ``None`` when a sampling request of ``server`` may reach the client, else why not."""


@dataclass(frozen=True)
class Downstream:
    """The downstream request an upstream request runs for.

    Attributes:
        session: identity of the downstream session (requests of one session share it).
        log: deliver one upstream log message (the callee applies the session's level), or ``None``.
        elicit: forward ``elicitation/create``; ``None`` when the client did not declare elicitation.
        sample: forward ``sampling/createMessage``; ``None`` when the client did not declare sampling.
        roots: forward ``roots/list``; ``None`` when the client did not declare roots.
        log_level: the lowest log level the client asked for: a 2026-07-28 request's ``_meta``
            ``io.modelcontextprotocol/logLevel``, a handshake-era session's ``logging/setLevel``; or ``None``.
        sample_gate: asked before a ``sampling/createMessage`` of server NAME is forwarded
            (``await sample_gate(NAME)``): ``None`` lets it through, a text refuses it with that
            message (the session-taint rule, :meth:`host.pipeline.TaintStage.sampling_gate`).
    """

    session: object
    log: Callable[[LoggingMessageNotificationParams, str], Awaitable[None]] | None = None
    elicit: Callable[[ElicitRequestParams], Awaitable[ElicitResult]] | None = None
    sample: Callable[[CreateMessageRequestParams], Awaitable[Any]] | None = None
    roots: Callable[[], Awaitable[ListRootsResult]] | None = None
    log_level: str | None = None
    sample_gate: SampleGate | None = None


_CURRENT: ContextVar[Downstream | None] = ContextVar("toolhost_downstream", default=None)


@contextmanager
def downstream_scope(downstream: Downstream | None) -> Iterator[None]:
    """Within this block, upstream requests are made on behalf of ``downstream``."""
    token = _CURRENT.set(downstream)
    try:
        yield
    finally:
        _CURRENT.reset(token)


@contextmanager
def sample_gate_scope(gate: SampleGate) -> Iterator[None]:
    """Within this block, sampling requests made for the current downstream are asked ``gate`` first
    (no downstream: nothing to gate, sampling has no target anyway)."""
    current = current_downstream()
    if current is None:
        yield
        return
    with downstream_scope(replace(current, sample_gate=gate)):
        yield


async def sample_refusal(downstream: Downstream | None, server: str) -> str | None:
    """What ``downstream``'s :attr:`Downstream.sample_gate` says of a sampling request of ``server``."""
    if downstream is None or downstream.sample_gate is None:
        return None
    return await downstream.sample_gate(server)


def current_downstream() -> Downstream | None:
    """The downstream of the running request, or ``None`` (CLI, agent loop, tests)."""
    return _CURRENT.get()


def log_level_meta(upstream_protocol: str) -> dict[str, Any] | None:
    """The ``_meta`` of a request to a 2026-07-28 upstream made for the running downstream request:
    ``{"io.modelcontextprotocol/logLevel": LEVEL}`` when that request asked for log messages, where
    LEVEL is the client's level or :data:`SERVER_LOG_FLOOR` (``info``), whichever is more verbose:
    the upstream sends no chatter below what anyone wants, and the server's own log file under
    ``<data>/logs/`` keeps every ``info`` message and above whatever a client asked for (toolhost
    filters each client's messages at its own level). ``None`` when the request asked for none:
    the upstream client's default, ``debug``, applies and the log file gets every message.

    Source: MCP 2026-07-28, server/utilities/logging (per-request log level in ``_meta``).
    """
    downstream = current_downstream()
    if downstream is None or downstream.log_level is None or upstream_protocol < "2026":
        return None
    level = min(downstream.log_level, SERVER_LOG_FLOOR, key=LOG_LEVELS.index)
    return {LOG_LEVEL_META_KEY: level}


class InputRefused(MCPError):
    """Toolhost will not pass an upstream's input request to the client."""


class SamplingDisabled(InputRefused):
    """The upstream asked for sampling, and its config sets ``toolhost.sampling: false``: ``-32600``
    with ``data`` ``{"server": NAME, "setting": "toolhost.sampling"}``; the client is never asked."""

    def __init__(self, server: str) -> None:
        super().__init__(INVALID_REQUEST, f"toolhost: sampling is disabled for server {server!r} in the gateway's "
                         "config (toolhost.sampling: false)", {"server": server, "setting": "toolhost.sampling"})

    @staticmethod
    def raised_for(err: MCPError, server: str) -> bool:
        """Whether ``err`` is this refusal for ``server`` (as the SDK's own input-required driver
        re-raises what :meth:`Relay.on_sample` answered)."""
        return err.code == INVALID_REQUEST and err.data == {"server": server, "setting": "toolhost.sampling"}


class Relay:
    """Routes one upstream connection's server→client traffic (see module docstring).

    Args:
        server: the upstream's config name (for messages).
        log_path: the server's log file (created on first message).
    """

    allow_sampling: bool = True
    """Whether ``sampling/createMessage`` of this server may reach the user (``toolhost.sampling``)."""

    def __init__(self, server: str, log_path: Path, limits: LogLimits | None = None) -> None:
        self.server = server
        self.log_path = log_path
        limits = limits or LogLimits()
        self._file = RotatingFile(log_path, limits)
        self._budget = NotificationBudget(limits.notifications_per_second)
        self._noted = 0.0
        self._active: dict[int, Downstream] = {}
        self._next = 0

    @contextmanager
    def active(self) -> Iterator[None]:
        """Mark the current downstream as waiting on this connection while the block runs."""
        downstream = current_downstream()
        if downstream is None:
            yield
            return
        self._next += 1
        key = self._next
        self._active[key] = downstream
        try:
            yield
        finally:
            self._active.pop(key, None)

    def target(self) -> Downstream | None:
        """The one downstream session waiting on this connection, or ``None`` when none or several."""
        sessions = {id(d.session): d for d in self._active.values()}
        if len(sessions) != 1:
            return None
        return next(iter(sessions.values()))

    # -- client callbacks (pass these to the SDK Client) -----------------------------------
    async def on_log(self, params: LoggingMessageNotificationParams) -> None:
        """``logging_callback``: write to the log file, then relay to the target."""
        self._write(params)
        target = self.target()
        if target is not None and target.log is not None:
            try:
                await target.log(params, self.server)
            except Exception:  # noqa: BLE001 - a gone client must not break the upstream session
                return

    async def on_elicit(self, _context: Any, params: ElicitRequestParams) -> ElicitResult | ErrorData:
        """``elicitation_callback``: forward to the target, or decline at once."""
        target = self.target()
        if target is None or target.elicit is None:
            return ElicitResult(action="decline")
        try:
            with anyio.fail_after(FORWARD_TIMEOUT_SECONDS):
                return await target.elicit(attributed_elicitation(params, self.server))
        except Exception:  # noqa: BLE001 - no answer / client error: the user did not accept
            return ElicitResult(action="cancel")

    async def on_sample(self, _context: Any, params: CreateMessageRequestParams) -> CreateMessageResult | ErrorData:
        """``sampling_callback``: forward to the target, or a clear error at once."""
        if not self.allow_sampling:
            return SamplingDisabled(self.server).error
        target = self.target()
        if target is None or target.sample is None:
            return ErrorData(code=INVALID_REQUEST, message=self._no_target("sampling", target))
        refused = await sample_refusal(target, self.server)
        if refused is not None:
            return ErrorData(code=INVALID_REQUEST, message=refused, data={"server": self.server, "rule": "taint"})
        try:
            with anyio.fail_after(FORWARD_TIMEOUT_SECONDS):
                return await target.sample(attributed_sampling(params, self.server))
        except Exception as err:  # noqa: BLE001 - report the downstream's failure upstream
            return ErrorData(code=INVALID_REQUEST, message=f"toolhost: sampling failed downstream: {_describe(err)}")

    async def on_roots(self, _context: Any) -> ListRootsResult | ErrorData:
        """``list_roots_callback``: forward to the target, or a clear error at once."""
        target = self.target()
        if target is None or target.roots is None:
            return ErrorData(code=INVALID_REQUEST, message=self._no_target("roots", target))
        try:
            with anyio.fail_after(FORWARD_TIMEOUT_SECONDS):
                return await target.roots()
        except Exception as err:  # noqa: BLE001 - report the downstream's failure upstream
            return ErrorData(code=INVALID_REQUEST, message=f"toolhost: roots/list failed downstream: {_describe(err)}")

    def _no_target(self, what: str, target: Downstream | None) -> str:
        if target is None:
            return (f"toolhost: no single client is waiting on a request to {self.server!r}, "
                    f"so {what} cannot be forwarded")
        return f"toolhost: the client that made this request did not declare the {what} capability"

    def _write(self, params: LoggingMessageNotificationParams) -> None:
        if not self._budget.take():
            return
        stamp = time.strftime("%Y-%m-%dT%H:%M:%SZ", time.gmtime())
        data = redact(params.data)  # upstream log text may carry credentials: masked like the audit
        text = data if isinstance(data, str) else json.dumps(data, ensure_ascii=False, default=str)
        line = f"{stamp} {params.level.upper()} {params.logger or '-'}: {text}\n"
        now = time.monotonic()
        if self._budget.dropped and now - self._noted >= 1.0:  # at most once a second: how much is missing
            line = (f"{stamp} WARNING toolhost: {self._budget.dropped} log notifications dropped (more than "
                    f"{self._budget.rate:g}/s)\n{line}")
            self._budget.dropped = 0
            self._noted = now
        self._file.write(line.encode("utf-8", "replace"))

    def close(self) -> None:
        """Close the log file (it reopens on the next message)."""
        self._file.close()


SERVER_META = "toolhost/server"
"""``_meta`` key naming the upstream server a relayed elicitation or sampling request comes from."""


def _meta_with_server(meta: Mapping[str, Any] | None, server: str) -> dict[str, Any]:
    return dict(meta or {}) | {SERVER_META: server}


def attributed_elicitation(params: Any, server: str) -> Any:
    """``params`` of an ``elicitation/create`` whose message says which server asks."""
    return params.model_validate(params.model_dump(by_alias=True, exclude_none=True) | {
        "message": f"[MCP server {server!r} asks] {params.message}",
        "_meta": _meta_with_server(params.meta, server),
    })


def attributed_sampling(params: CreateMessageRequestParams, server: str) -> CreateMessageRequestParams:
    """``params`` of a ``sampling/createMessage`` whose system prompt says which server asks, with
    ``includeContext`` ``none``: behind toolhost, ``thisServer``/``allServers`` would mean the
    context of every upstream (other servers' private results included), so no upstream may ask
    for it (MCP spec 2025-11-25, client features, sampling: ``includeContext`` is a request the
    client may ignore; toolhost answers it for the client)."""
    note = f"[Requested by MCP server {server!r} through toolhost]"
    prompt = f"{note}\n{params.system_prompt}" if params.system_prompt else note
    fields = params.model_dump(by_alias=True, exclude_none=True) | {
        "systemPrompt": prompt, "_meta": _meta_with_server(params.meta, server),
    }
    if "includeContext" in fields:
        fields["includeContext"] = "none"
    return params.model_validate(fields)


def _describe(err: BaseException) -> str:
    return (err.message if isinstance(err, MCPError) else "") or str(err) or type(err).__name__
