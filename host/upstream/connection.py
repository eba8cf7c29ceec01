"""One MCP server connection, owned by one task from connect to cleanup.

:meth:`ServerConnection.run` is started with ``task_group.start()``: it opens the transport
(stdio child, streamable HTTP or SSE), performs the handshake (the SDK's ``auto`` mode speaks
both protocol generations: 2026-07-28 ``server/discover`` and the 2025-11-25 ``initialize``
handshake), lists every page of ``tools/list`` and reports readiness — all under the connect
timeout. It then keeps the session open, re-lists on ``notifications/tools/list_changed`` and,
when the connection drops, reconnects with exponential backoff and re-lists (bug case BR-21).
The same task enters and exits the SDK client, as AnyIO cancel scopes require.

A stdio child's stderr goes to ``<data_dir>/logs/<server>.stderr.log``; its last lines are
quoted in connect errors. The child gets a small safe environment (see :data:`SAFE_ENV_VARS`)
plus its configured ``env``, never the whole parent environment.
"""

from __future__ import annotations

import enum
import math
import os
import time
from collections.abc import Callable
from contextlib import AsyncExitStack
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import anyio
import httpx2
from anyio.abc import TaskStatus
from mcp import Client, MCPError, StdioServerParameters, stdio_client
from mcp.client.sse import sse_client
from mcp.client.streamable_http import streamable_http_client
from mcp.types import CONNECTION_CLOSED, REQUEST_TIMEOUT, CallToolResult, Tool, ToolListChangedNotification

from host.config import RemoteServerConfig, ServerConfig, StdioServerConfig
from host.errors import CallTimeout, UpstreamError, UpstreamUnavailable
from host.upstream.executor import ProgressCallback
from host.paths import logs_dir, safe_file_name

__all__ = [
    "MAX_LIST_PAGES",
    "SAFE_ENV_VARS",
    "ConnectionState",
    "ServerConnection",
    "ServerStatus",
    "call_client_tool",
    "list_all_tools",
]

SAFE_ENV_VARS = ("PATH", "HOME", "USER", "LOGNAME", "SHELL", "TERM", "LANG", "LANGUAGE", "LC_ALL", "LC_CTYPE", "TMPDIR", "TZ")
"""Parent variables a stdio child inherits; everything else must be set in its ``env``."""

MAX_LIST_PAGES = 1000
"""Upper bound on ``tools/list`` pages, so a server that never ends its cursor chain cannot hang us."""

_STDERR_TAIL_LINES = 20
_BACKOFF_MAX_SECONDS = 30.0

ToolsCallback = Callable[[str, list[Tool], list[str]], None]
"""``on_tools(server, tools, warnings)``: called after each complete listing."""


class ConnectionState(str, enum.Enum):
    PENDING = "pending"
    CONNECTING = "connecting"
    CONNECTED = "connected"
    FAILED = "failed"
    STOPPED = "stopped"


@dataclass
class ServerStatus:
    """What ``toolhost servers`` shows for one server.

    Attributes:
        name: the server's config name.
        transport: ``stdio``, ``streamable-http`` or ``sse``.
        state: the connection state.
        tool_count: tools registered from the last listing.
        error: why the last attempt failed (``None`` when connected).
        stderr_tail: last stderr lines of a stdio child at the failure.
        protocol_version: the negotiated MCP protocol version.
        server_info: ``"name version"`` the server reported.
        connect_seconds: duration of the last successful connect + listing.
        warnings: non-fatal problems (duplicate tool names, cursor loops, …).
    """

    name: str
    transport: str
    state: ConnectionState = ConnectionState.PENDING
    tool_count: int = 0
    error: str | None = None
    stderr_tail: str = ""
    protocol_version: str | None = None
    server_info: str | None = None
    connect_seconds: float | None = None
    warnings: list[str] = field(default_factory=list)


async def list_all_tools(client: Client, server: str, *, max_pages: int = MAX_LIST_PAGES) -> tuple[list[Tool], list[str]]:
    """Every page of ``tools/list``; ends on any input a broken server can send.

    Stops on a missing/empty cursor, a cursor seen before (loop), or after
    ``max_pages`` pages. Duplicate names keep the first definition.

    Returns:
        ``(tools, warnings)``.
    """
    tools: list[Tool] = []
    warnings: list[str] = []
    seen_cursors: set[str] = set()
    seen_names: dict[str, int] = {}
    cursor: str | None = None
    for page_no in range(max_pages):
        page = await client.list_tools(cursor=cursor, cache_mode="refresh")
        for tool in page.tools:
            if tool.name in seen_names:
                seen_names[tool.name] += 1
                continue
            seen_names[tool.name] = 1
            tools.append(tool)
        cursor = page.next_cursor or None
        if cursor is None:
            break
        if cursor in seen_cursors:
            warnings.append(f"tools/list cursor {cursor[:40]!r} repeated after page {page_no + 1}; stopped listing")
            break
        seen_cursors.add(cursor)
    else:
        warnings.append(f"tools/list returned more than {max_pages} pages; stopped listing")
    for name, count in seen_names.items():
        if count > 1:
            warnings.append(f"tool {name!r} is listed {count} times by {server!r}; kept the first definition")
    return tools, warnings


def _child_env(config: StdioServerConfig) -> dict[str, str]:
    env = {k: os.environ[k] for k in SAFE_ENV_VARS if k in os.environ and not os.environ[k].startswith("()")}
    env.update(config.env)
    return env


class ServerConnection:
    """The live connection to one configured server (see module docstring).

    Args:
        config: the server entry.
        connect_timeout_seconds: budget for start + handshake + full listing.
        data_dir: toolhost's data folder (stderr logs go to ``logs/``).
        on_tools: called with every complete listing.
        reconnect: reconnect with backoff after a failure or drop (``serve``), or give up
            after the first attempt (one-shot CLI commands).
        on_status: called with :attr:`status` after every state change and relisting.
    """

    def __init__(
        self,
        config: ServerConfig,
        *,
        connect_timeout_seconds: float,
        data_dir: Path,
        on_tools: ToolsCallback,
        reconnect: bool = True,
        on_status: Callable[[ServerStatus], None] | None = None,
    ) -> None:
        self.config = config
        self.name = config.name
        self.connect_timeout_seconds = connect_timeout_seconds
        self.data_dir = data_dir
        self.on_tools = on_tools
        self.reconnect = reconnect
        self.on_status = on_status
        self.status = ServerStatus(name=config.name, transport=config.transport)
        self._client: Client | None = None
        self._stop = anyio.Event()
        self._wake = anyio.Event()
        self._connect_scope: anyio.CancelScope | None = None
        self._relist = False
        self._stderr_path = logs_dir(data_dir) / f"{safe_file_name(config.name)}.stderr.log"
        self._stderr_offset = 0

    # -- lifecycle ---------------------------------------------------------------------
    def stop(self) -> None:
        """Ask the owner task to close the session and return (idempotent).

        A connect attempt in progress (spawn, handshake, listing) is abandoned at once rather
        than waited out, so Ctrl+C never waits for a hung server's connect timeout.
        """
        self._stop.set()
        self._wake.set()
        if self._connect_scope is not None:
            self._connect_scope.cancel()

    async def run(self, *, task_status: TaskStatus[None] = anyio.TASK_STATUS_IGNORED) -> None:
        """Own the connection until :meth:`stop`; reports started after the first attempt ends."""
        started = False
        backoff = 1.0
        while not self._stop.is_set():
            connected_once = await self._session_once(lambda: task_status.started() if not started else None)
            if not started:
                started = True
            if self._stop.is_set() or not self.reconnect:
                break
            if connected_once:
                backoff = 1.0
            with anyio.move_on_after(backoff):
                await self._stop.wait()
            backoff = min(backoff * 2, _BACKOFF_MAX_SECONDS)
        if self._stop.is_set():
            self._set_state(ConnectionState.STOPPED)
        if not started:
            task_status.started()

    async def _session_once(self, report_started: Callable[[], Any]) -> bool:
        """One connect → serve → close cycle. Returns whether it got connected."""
        self.status.error = None
        self._set_state(ConnectionState.CONNECTING)
        self._wake = anyio.Event()
        t0 = time.perf_counter()
        connected = False
        stage = "start"
        try:
            with anyio.CancelScope() as scope:
                scope.deadline = anyio.current_time() + self.connect_timeout_seconds
                self._connect_scope = scope
                if self._stop.is_set():
                    scope.cancel()
                async with AsyncExitStack() as stack:
                    client = await self._open(stack)
                    stage = "handshake"
                    await stack.enter_async_context(client)
                    stage = "list_tools"
                    tools, warnings = await list_all_tools(client, self.name)
                    scope.deadline = math.inf
                    self._connect_scope = None
                    self._client = client
                    connected = True
                    self._record_connected(client, tools, warnings, time.perf_counter() - t0)
                    report_started()
                    await self._serve(client, stack)
            if scope.cancelled_caught and not connected:
                if self._stop.is_set():
                    self._fail(stage, "stopped while connecting")
                else:
                    self._fail(stage, f"no answer within the connect timeout of {self.connect_timeout_seconds:g} s")
        except Exception as err:  # noqa: BLE001 - one server's failure must not reach the others
            self._fail(stage if not connected else "connection", _describe(err))
        finally:
            self._client = None
            self._connect_scope = None
        if connected and not self._stop.is_set() and self.status.state is ConnectionState.CONNECTED:
            self._fail("connection", "the server closed the connection")
        if not connected:
            report_started()
        return connected

    async def _serve(self, client: Client, stack: AsyncExitStack) -> None:
        """Stay connected until stop or a drop; re-list when the server says its tools changed."""
        async with anyio.create_task_group() as tg:
            if client.protocol_version >= "2026":
                tg.start_soon(self._listen_2026, client)
            while not self._stop.is_set():
                await self._wake.wait()
                self._wake = anyio.Event()
                if self._stop.is_set() or self._client is None:
                    break
                if self._relist:
                    self._relist = False
                    with anyio.fail_after(self.connect_timeout_seconds):
                        tools, warnings = await list_all_tools(client, self.name)
                    self._record_tools(tools, warnings)
            tg.cancel_scope.cancel()

    async def _listen_2026(self, client: Client) -> None:
        try:
            async with client.listen(tools_list_changed=True) as sub:
                async for _event in sub:
                    self._relist = True
                    self._wake.set()
        except Exception:  # noqa: BLE001 - listening is best effort; calls still work
            return

    async def _on_message(self, message: Any) -> None:
        if isinstance(message, ToolListChangedNotification):
            self._relist = True
            self._wake.set()

    async def _open(self, stack: AsyncExitStack) -> Client:
        cfg = self.config
        if isinstance(cfg, StdioServerConfig):
            errlog = stack.enter_context(open(self._stderr_path, "a", encoding="utf-8", errors="replace"))
            errlog.write(f"--- toolhost: starting {cfg.command} at {time.strftime('%Y-%m-%dT%H:%M:%S')} ---\n")
            errlog.flush()
            self._stderr_offset = self._stderr_path.stat().st_size
            params = StdioServerParameters(command=cfg.command, args=cfg.args, env=_child_env(cfg), cwd=cfg.cwd)
            transport: Any = stdio_client(params, errlog=errlog)
        elif isinstance(cfg, RemoteServerConfig) and cfg.transport == "sse":
            transport = sse_client(cfg.url, headers=cfg.headers or None)
        else:
            assert isinstance(cfg, RemoteServerConfig)
            http = await stack.enter_async_context(
                httpx2.AsyncClient(headers=cfg.headers, timeout=httpx2.Timeout(30.0, read=300.0))
            )
            transport = streamable_http_client(cfg.url, http_client=http)
        return Client(transport, message_handler=self._on_message, cache=None)

    # -- status ------------------------------------------------------------------------
    def _record_connected(self, client: Client, tools: list[Tool], warnings: list[str], seconds: float) -> None:
        info = client.server_info
        self.status.protocol_version = client.protocol_version
        self.status.server_info = f"{info.name} {info.version}" if info else None
        self.status.connect_seconds = seconds
        self.status.stderr_tail = ""
        self.status.state = ConnectionState.CONNECTED
        self._record_tools(tools, warnings)

    def _record_tools(self, tools: list[Tool], warnings: list[str]) -> None:
        self.status.warnings = list(warnings)
        self.on_tools(self.name, tools, self.status.warnings)
        self.status.tool_count = sum(1 for t in tools if self.config.toolhost.includes(t.name))
        self._changed()

    def _fail(self, stage: str, reason: str) -> None:
        self.status.error = f"{stage}: {reason}"
        self.status.stderr_tail = self.stderr_tail()
        self._set_state(ConnectionState.FAILED)

    def _set_state(self, state: ConnectionState) -> None:
        self.status.state = state
        self._changed()

    def _changed(self) -> None:
        if self.on_status is not None:
            self.on_status(self.status)

    def stderr_tail(self, lines: int = _STDERR_TAIL_LINES) -> str:
        """The last ``lines`` lines the child wrote to stderr during the current attempt (stdio only)."""
        if not isinstance(self.config, StdioServerConfig):
            return ""
        try:
            with open(self._stderr_path, encoding="utf-8", errors="replace") as fh:
                fh.seek(self._stderr_offset)
                text = fh.read()
        except OSError:
            return ""
        return "\n".join(text.strip().splitlines()[-lines:])

    # -- calls -------------------------------------------------------------------------
    async def call_tool(
        self,
        tool: str,
        arguments: dict[str, Any],
        *,
        timeout_seconds: float,
        progress_callback: ProgressCallback | None = None,
    ) -> CallToolResult:
        """Forward one ``tools/call`` (see :class:`host.upstream.executor.ToolExecutor` for the contract)."""
        client = self._client
        if client is None or self.status.state is not ConnectionState.CONNECTED:
            raise UpstreamUnavailable(self.name, self.status.error or self.status.state.value)
        return await call_client_tool(
            client,
            self.name,
            tool,
            arguments,
            timeout_seconds=timeout_seconds,
            progress_callback=progress_callback,
            on_lost=self._connection_lost,
        )

    def _connection_lost(self, reason: str) -> None:
        if self.status.state is ConnectionState.CONNECTED:
            self._fail("connection", reason)
            self._client = None
            self._wake.set()


async def call_client_tool(
    client: Client,
    server: str,
    tool: str,
    arguments: dict[str, Any],
    *,
    timeout_seconds: float,
    progress_callback: ProgressCallback | None = None,
    on_lost: Callable[[str], None] | None = None,
) -> CallToolResult:
    """One ``tools/call`` on an entered SDK ``Client``, with SDK errors mapped to host errors.

    The SDK's read timeout cancels the request upstream (``notifications/cancelled``); an
    outer bound of ``timeout_seconds + 5`` guards against a transport that stops answering.
    JSON-RPC codes -32000/-32001 are also free for servers to use ("implementation-defined
    server errors"), so only the SDK's own local errors (fixed message, no data) mean
    closed / timed out.

    Args:
        on_lost: called with a reason when the connection turns out to be closed.

    Raises:
        CallTimeout, UpstreamUnavailable, UpstreamError: see :class:`host.upstream.executor.ToolExecutor`.
    """
    try:
        with anyio.fail_after(timeout_seconds + 5.0):
            return await client.call_tool(
                tool, arguments, read_timeout_seconds=timeout_seconds, progress_callback=progress_callback
            )
    except MCPError as err:
        if err.code == REQUEST_TIMEOUT and err.data is None and "timed out" in err.message.lower():
            raise CallTimeout(server, tool, timeout_seconds) from None
        if err.code == CONNECTION_CLOSED and err.data is None and err.message == "Connection closed":
            if on_lost is not None:
                on_lost(err.message)
            raise UpstreamUnavailable(server, f"connection closed: {err.message}") from None
        raise UpstreamError(server, tool, err.code, err.message, err.data) from None
    except TimeoutError:
        raise CallTimeout(server, tool, timeout_seconds) from None
    except (anyio.ClosedResourceError, anyio.BrokenResourceError, anyio.EndOfStream, httpx2.TransportError) as err:
        if on_lost is not None:
            on_lost(_describe(err))
        raise UpstreamUnavailable(server, f"connection lost: {_describe(err)}") from None


def _describe(err: BaseException) -> str:
    """A one-line description of an exception, unwrapping exception groups."""
    while isinstance(err, BaseExceptionGroup) and len(err.exceptions) == 1:
        err = err.exceptions[0]
    if isinstance(err, BaseExceptionGroup):
        return "; ".join(_describe(e) for e in err.exceptions[:3])
    if isinstance(err, MCPError):
        return f"MCP error {err.code}: {err.message}"
    if isinstance(err, FileNotFoundError):
        return f"command not found: {err.filename or err}"
    text = str(err) or type(err).__name__
    return f"{type(err).__name__}: {text}" if type(err).__name__ not in text else text
