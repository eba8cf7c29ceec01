"""Opening one configured server's transport: a stdio child, streamable HTTP or SSE.

A stdio child gets a small safe environment (:data:`SAFE_ENV_VARS`), by default with the
user's CA, proxy and package-manager settings (:mod:`host.upstream.child_env`), plus its
configured ``env``; never the whole parent environment unless ``inherit_env: "all"`` says so.
It is checked before it is spawned (:func:`host.upstream.diagnose.preflight`: a missing command or
folder fails at once, as :class:`Preflight`, and is not retried). Its stderr goes to the server's
log file. HTTP requests pass through the :class:`~host.upstream.guard.TransportGuard` response hook
(expired sessions, authentication failures). A stdio child runs under :mod:`host.upstream.pdeath`,
so its whole process group stops when this process dies, even by ``kill -9``. The stdio transport is
:mod:`host.upstream.stdio_pipe` (the SDK's ``stdio_client`` behaviour without its two pipe tasks).
"""

from __future__ import annotations

from contextlib import AsyncExitStack
from pathlib import Path

import httpx2
from mcp import StdioServerParameters
from mcp.client.sse import sse_client
from mcp.client.streamable_http import streamable_http_client

from host.config import RemoteServerConfig, ServerConfig, StdioServerConfig
from host.upstream.child_env import SAFE_ENV_VARS, inherited_env
from host.upstream.diagnose import preflight
from host.upstream.guard import Transport, TransportGuard
from host.upstream.oauth import oauth_provider
from host.upstream.pdeath import wrap
from host.upstream.sandbox import check_sandbox, sandbox_command, writable_conflict
from host.upstream.serverlog import ServerLog
from host.upstream.stdio_pipe import MAX_LINE_BYTES, stdio_pipe_client

__all__ = ["SAFE_ENV_VARS", "Preflight", "child_env", "open_transport"]



class Preflight(Exception):
    """The server cannot start as configured (command or folder missing); ``reason`` says why."""

    def __init__(self, reason: str) -> None:
        self.reason = reason
        super().__init__(reason)


def child_env(config: StdioServerConfig) -> dict[str, str]:
    """The environment of a stdio child: what its ``toolhost.inherit_env`` passes of toolhost's own
    (default ``"network"``: the safe base plus CA, proxy and package-manager settings; see
    :mod:`host.upstream.child_env`), then its configured ``env``."""
    env = inherited_env(config.toolhost.inherit_env or "network")
    env.update(config.env)
    return env


async def open_transport(
    config: ServerConfig, stack: AsyncExitStack, guard: TransportGuard, log: ServerLog, data_dir: Path | None = None
) -> Transport:
    """The SDK transport for ``config`` (not yet entered; the HTTP client is entered on ``stack``).

    A streamable-HTTP server with ``toolhost.oauth`` gets the SDK's OAuth client as the HTTP
    client's ``auth`` (:mod:`host.upstream.oauth`; tokens under ``data_dir``).

    A stdio server with ``toolhost.sandbox`` runs under bubblewrap (:mod:`host.upstream.sandbox`).

    Raises:
        Preflight: a stdio server whose command or working folder does not exist, or whose sandbox
            cannot run here (bwrap missing, namespaces refused).
    """
    if isinstance(config, StdioServerConfig):
        log.open(f"starting {config.command}")
        env = child_env(config)
        problem = preflight(config, env)
        if problem is not None:
            raise Preflight(problem.reason)
        command, args = config.command, list(config.args)
        if config.toolhost.sandbox is not None:
            problem_text, bwrap = await check_sandbox(config, env)
            if problem_text is not None:
                raise Preflight(problem_text)
            conflict = writable_conflict(config.toolhost.sandbox, server=config.name, data_dir=data_dir,
                                         home=env.get("HOME"))
            if conflict is not None:
                raise Preflight(conflict)
            command, args = sandbox_command(config, env, data_dir=data_dir, bwrap=bwrap)
        command, args = wrap(command, args)  # the child's group dies with this process
        params = StdioServerParameters(
            command=command, args=args, env=env, cwd=config.cwd, encoding_error_handler="replace"
        )
        limit = config.toolhost.max_message_mib
        return stdio_pipe_client(  # the SDK's stdio_client without its pipe tasks
            params, stderr_sink=log.write_bytes, max_line_bytes=int(limit * (1 << 20)) if limit else MAX_LINE_BYTES)
    assert isinstance(config, RemoteServerConfig)
    log.open(f"connecting ({config.transport})")
    if config.transport == "sse":
        return sse_client(config.url, headers=config.headers or None)
    auth = None
    if config.toolhost.oauth is not None and data_dir is not None:
        auth = oauth_provider(config.name, config.url, config.toolhost.oauth, data_dir)
    http = await stack.enter_async_context(
        httpx2.AsyncClient(
            auth=auth,
            headers=config.headers,
            timeout=httpx2.Timeout(30.0, read=300.0),
            event_hooks={"response": [guard.http_response_hook]},
        )
    )
    return streamable_http_client(config.url, http_client=http)
