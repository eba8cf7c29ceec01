"""Exception tree of the host layer (config, connections, calls).

    HostError
    ├── ConfigError            the mcpServers config is invalid (carries the JSON path)
    ├── DataDirError           the data folder cannot be used (carries the path)
    ├── UpstreamUnavailable    the server is not connected (down, failed, closed): fail fast;
    │                          the call was NOT sent (safe to retry once the server is back)
    ├── CallOutcomeUnknown     the call WAS sent, then the connection was cut before an answer:
    │                          it may have run (never retried silently)
    ├── UpstreamError          the server answered a request with a JSON-RPC error
    └── CallTimeout            a tools/call exceeded its budget (the request was cancelled)

Each error keeps the values involved as attributes and builds its message from them, naming
where it happened and how to fix it. No secret (env values, header values) is ever included.
"""

from __future__ import annotations

from typing import Any

__all__ = [
    "CallOutcomeUnknown",
    "CallTimeout",
    "ConfigError",
    "DataDirError",
    "HostError",
    "UpstreamError",
    "UpstreamUnavailable",
]


class HostError(Exception):
    """Base class of every error raised by :mod:`host`."""


class ConfigError(HostError):
    """The configuration is invalid.

    Attributes:
        path: JSON path of the offending value, e.g. ``mcpServers.git.command``.
        problem: what is expected there.
        source: the config file, when known.
    """

    def __init__(self, path: str, problem: str, source: str | None = None) -> None:
        self.path = path
        self.problem = problem
        self.source = source
        where = f"{source}: " if source else ""
        super().__init__(f"{where}{path}: {problem}")


class DataDirError(HostError):
    """The data folder cannot be created or written.

    Attributes:
        path: the folder that was tried.
        reason: what went wrong (the OS error text).
    """

    def __init__(self, path: str, reason: str) -> None:
        self.path = path
        self.reason = reason
        super().__init__(
            f"data folder {path}: {reason} (pass --data-dir or set $TOOLHOST_HOME to a writable folder)"
        )


class UpstreamUnavailable(HostError):
    """A call was routed to a server that is not connected.

    Attributes:
        server: the server's name.
        reason: why it is unavailable (e.g. the connect error, "disconnected").
    """

    def __init__(self, server: str, reason: str) -> None:
        self.server = server
        self.reason = reason
        super().__init__(f"server {server!r} is unavailable: {reason}")


class CallOutcomeUnknown(HostError):
    """A ``tools/call`` was sent, then the connection was cut before its answer arrived.

    The upstream may or may not have run it: upstream death, transport close,
    ``serve`` shutdown. Never retried silently.

    Attributes:
        server: the server's name.
        tool: the original tool name.
        reason: how the connection was cut (e.g. "the server's stdout closed (process exited)").
    """

    def __init__(self, server: str, tool: str, reason: str) -> None:
        self.server = server
        self.tool = tool
        self.reason = reason
        super().__init__(f"{server}/{tool} was sent, then the connection was lost ({reason}); "
                         "the outcome is unknown (it may have run)")


class UpstreamError(HostError):
    """The upstream server answered with a JSON-RPC error.

    Attributes:
        server: the server's name.
        tool: the original tool name, when the request was a tool call.
        code: the JSON-RPC / MCP error code (e.g. -32602).
        error_message: the server's error message.
        data: the error's ``data`` member, if any.
    """

    def __init__(self, server: str, tool: str | None, code: int, error_message: str, data: Any = None) -> None:
        self.server = server
        self.tool = tool
        self.code = code
        self.error_message = error_message
        self.data = data
        target = f"{server}/{tool}" if tool else server
        super().__init__(f"{target} returned MCP error {code}: {error_message}")


class CallTimeout(HostError):
    """A tool call exceeded its time budget; the upstream request was cancelled.

    Attributes:
        server: the server's name.
        tool: the original tool name.
        timeout_seconds: the budget that ran out.
    """

    def __init__(self, server: str, tool: str, timeout_seconds: float) -> None:
        self.server = server
        self.tool = tool
        self.timeout_seconds = timeout_seconds
        super().__init__(f"{server}/{tool} did not answer within {timeout_seconds:g} s (the request was cancelled)")
