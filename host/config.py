"""The ``mcpServers`` configuration (Claude Desktop / Cursor / VS Code format) plus toolhost options.

Example (``toolhost`` blocks are optional)::

    {
      "toolhost": {"timeout_seconds": 60, "max_output_chars": 20000},
      "mcpServers": {
        "git":   {"command": "uvx", "args": ["mcp-server-git", "--repository", "${REPO:-.}"],
                  "env": {"LOG_LEVEL": "warning"},
                  "toolhost": {"prefix": "git", "risk": {"git_status": "read"},
                               "disabled": ["git_reset"], "always_load": ["git_status"],
                               "timeout_seconds": 20, "max_output_chars": 8000}},
        "docs":  {"url": "https://example.com/mcp", "headers": {"Authorization": "Bearer ${DOCS_TOKEN}"}},
        "old":   {"type": "sse", "url": "http://127.0.0.1:9000/sse"}
      }
    }

VS Code's ``"servers"`` key is accepted as an alias of ``"mcpServers"``; an entry with
``"disabled": true`` is skipped. Every string (command, args, env values, cwd, url, header
values) is expanded: ``${VAR}``, ``${env:VAR}`` (VS Code) and ``${VAR:-default}``. Besides the
process environment, ``${TOOLHOST_PYTHON}`` (the running interpreter) and
``${TOOLHOST_DATA_DIR}`` (the resolved data folder) are defined.

Errors are :class:`host.errors.ConfigError` naming the JSON path, e.g.
``mcpServers.git.command: required (the executable that starts a stdio server)``.
"""

from __future__ import annotations

import difflib
import json
import os
import re
import sys
from collections.abc import Mapping
from pathlib import Path
from typing import Any, Literal

from pydantic import BaseModel, ConfigDict, Field, ValidationError

from host.errors import ConfigError
from registry import DEFAULT_MAX_OUTPUT_CHARS, DEFAULT_TIMEOUT_SECONDS, InvalidToolName, Risk, ToolOverrides
from registry.naming import sanitize_prefix

__all__ = [
    "DEFAULT_CONFIG_PATH",
    "HostConfig",
    "HostDefaults",
    "RemoteServerConfig",
    "ServerConfig",
    "ServerOptions",
    "StdioServerConfig",
    "expand_vars",
    "load_config",
    "parse_config",
]

DEFAULT_CONFIG_PATH = Path(__file__).resolve().parent.parent / "servers" / "default_config.json"
"""The bundled default config (example servers + mcp-server-time)."""


class ServerOptions(BaseModel):
    """The ``toolhost`` block of one server entry.

    Attributes:
        prefix: namespace prefix of the server's tools (default: the server name, sanitized).
        enabled: if set, only these original tool names are registered.
        disabled: original tool names never registered.
        risk: per-tool risk override, ``{"tool": "read" | "write" | "destructive"}``.
        timeout_seconds: per-call budget for every tool of the server (seconds).
        max_output_chars: model-visible output budget for every tool (characters).
        always_load: tools declared to the model without a prior ``tool_search``.
        connect_timeout_seconds: budget for start + handshake + listing (seconds).
        tools: full per-tool overrides, ``{"tool": {"timeout_seconds": 5, "concurrency_safe": true}}``.
    """

    model_config = ConfigDict(extra="forbid")

    prefix: str | None = None
    enabled: list[str] | None = None
    disabled: list[str] = Field(default_factory=list)
    risk: dict[str, Risk] = Field(default_factory=dict)
    timeout_seconds: float | None = Field(default=None, gt=0)
    max_output_chars: int | None = Field(default=None, gt=0)
    always_load: list[str] = Field(default_factory=list)
    connect_timeout_seconds: float | None = Field(default=None, gt=0)
    tools: dict[str, ToolOverrides] = Field(default_factory=dict)

    def includes(self, tool: str) -> bool:
        """Whether the tool named ``tool`` (original name) is registered at all."""
        if tool in self.disabled:
            return False
        return self.enabled is None or tool in self.enabled

    def overrides_for(self, tool: str) -> ToolOverrides:
        """The merged overrides of one tool: ``tools.<name>`` then ``risk``/``always_load``/budgets."""
        base = self.tools.get(tool, ToolOverrides())
        update: dict[str, Any] = {}
        if base.risk is None and tool in self.risk:
            update["risk"] = self.risk[tool]
        if tool in self.always_load:
            update["always_load"] = True
        if base.timeout_seconds is None and self.timeout_seconds is not None:
            update["timeout_seconds"] = self.timeout_seconds
        if base.max_output_chars is None and self.max_output_chars is not None:
            update["max_output_chars"] = self.max_output_chars
        return base.model_copy(update=update) if update else base


class _ServerBase(BaseModel):
    model_config = ConfigDict(extra="ignore")

    name: str = ""
    toolhost: ServerOptions = Field(default_factory=ServerOptions)
    disabled: bool = False

    @property
    def prefix(self) -> str:
        """The sanitized namespace prefix of this server's tools."""
        return sanitize_prefix(self.toolhost.prefix or self.name)


class StdioServerConfig(_ServerBase):
    """A server started as a child process speaking MCP over stdin/stdout."""

    transport: Literal["stdio"] = "stdio"
    command: str
    args: list[str] = Field(default_factory=list)
    env: dict[str, str] = Field(default_factory=dict)
    cwd: str | None = None


class RemoteServerConfig(_ServerBase):
    """A server reached over the network: streamable HTTP (default) or legacy SSE."""

    transport: Literal["streamable-http", "sse"] = "streamable-http"
    url: str
    headers: dict[str, str] = Field(default_factory=dict)


ServerConfig = StdioServerConfig | RemoteServerConfig


class HostDefaults(BaseModel):
    """The top-level ``toolhost`` block: defaults for every server."""

    model_config = ConfigDict(extra="forbid")

    timeout_seconds: float = Field(default=DEFAULT_TIMEOUT_SECONDS, gt=0)
    max_output_chars: int = Field(default=DEFAULT_MAX_OUTPUT_CHARS, gt=0)
    connect_timeout_seconds: float = Field(default=30.0, gt=0)


class HostConfig(BaseModel):
    """A parsed, expanded configuration.

    Attributes:
        servers: enabled servers by name, in file order.
        defaults: the top-level ``toolhost`` block.
        source: the file it came from (``None`` for in-memory configs).
        skipped: names of entries with ``"disabled": true``.
        warnings: ignored keys, with a suggestion when one looks like a typo (other clients'
            keys such as ``autoApprove`` are ignored silently).
    """

    servers: dict[str, ServerConfig] = Field(default_factory=dict)
    defaults: HostDefaults = Field(default_factory=HostDefaults)
    source: str | None = None
    skipped: list[str] = Field(default_factory=list)
    warnings: list[str] = Field(default_factory=list)

    def connect_timeout_for(self, server: ServerConfig) -> float:
        """Connect budget of one server in seconds (its own, else the default)."""
        return server.toolhost.connect_timeout_seconds or self.defaults.connect_timeout_seconds


# -- variable expansion ------------------------------------------------------------------
_VAR = re.compile(r"\$\{(?:env:)?([A-Za-z_][A-Za-z0-9_]*)(?::-([^}]*))?\}")


def expand_vars(value: str, environ: Mapping[str, str], *, path: str, source: str | None = None) -> str:
    """Expand ``${VAR}``, ``${env:VAR}`` and ``${VAR:-default}`` in ``value``.

    Raises:
        ConfigError: naming ``path`` and the variable when it is unset and has no default.
    """

    def repl(m: re.Match[str]) -> str:
        name, default = m.group(1), m.group(2)
        if name in environ and (environ[name] != "" or default is None):
            return environ[name]
        if default is not None:
            return default
        raise ConfigError(
            path, f"environment variable {name} is not set (set it, or write ${{{name}:-default}})", source
        )

    return _VAR.sub(repl, value)


def _expand_tree(node: Any, environ: Mapping[str, str], path: str, source: str | None) -> Any:
    if isinstance(node, str):
        return expand_vars(node, environ, path=path, source=source)
    if isinstance(node, list):
        return [_expand_tree(v, environ, f"{path}[{i}]", source) for i, v in enumerate(node)]
    if isinstance(node, dict):
        return {k: (v if k == "toolhost" else _expand_tree(v, environ, f"{path}.{k}", source)) for k, v in node.items()}
    return node


# -- parsing -----------------------------------------------------------------------------
_MISSING_HINTS = {
    "command": "required (the executable that starts a stdio server)",
    "url": "required (the server's URL)",
}


def _loc(prefix: str, loc: tuple[Any, ...]) -> str:
    out = prefix
    for part in loc:
        out += f"[{part}]" if isinstance(part, int) else f".{part}"
    return out


def _raise_validation(err: ValidationError, prefix: str, source: str | None) -> None:
    first = err.errors()[0]
    path = _loc(prefix, tuple(first["loc"]))
    field = str(first["loc"][-1]) if first["loc"] else ""
    if first["type"] == "missing":
        problem = _MISSING_HINTS.get(field, "required")
    elif first["type"] == "extra_forbidden":
        problem = "unknown key (check the spelling; see the toolhost block reference in README)"
    else:
        problem = f"{first['msg']} (got {first.get('input')!r})"
    raise ConfigError(path, problem, source)


_TRANSPORTS = {
    "stdio": "stdio",
    "http": "streamable-http",
    "streamable-http": "streamable-http",
    "streamable_http": "streamable-http",
    "streamablehttp": "streamable-http",
    "sse": "sse",
}


_SERVER_KEYS = ("command", "args", "env", "cwd", "url", "headers", "type", "transport", "toolhost", "disabled")
_OTHER_CLIENTS_KEYS = frozenset({
    "alwaysAllow", "autoApprove", "description", "disabledTools", "envFile", "icon", "name", "timeout",
    "trust", "includeTools", "excludeTools", "oauth", "auth", "startup_timeout_sec", "tool_timeout_sec",
})
_TOP_KEYS = ("mcpServers", "servers", "toolhost", "inputs", "$schema")


def _unknown_keys(raw: dict[str, Any], known: tuple[str, ...], path: str, tolerated: frozenset[str]) -> list[str]:
    out = []
    for key in raw:
        if key in known or key in tolerated:
            continue
        close = difflib.get_close_matches(key, known, n=1, cutoff=0.7)
        hint = f" (did you mean {close[0]!r}?)" if close else ""
        out.append(f"{path}.{key}: unknown key, ignored{hint}")
    return out


def _parse_server(
    name: str, raw: Any, environ: Mapping[str, str], source: str | None, warnings: list[str]
) -> ServerConfig | None:
    path = f"mcpServers.{name}"
    if not isinstance(raw, dict):
        raise ConfigError(path, f"expected an object with 'command' or 'url', got {type(raw).__name__}", source)
    warnings.extend(_unknown_keys(raw, _SERVER_KEYS, path, _OTHER_CLIENTS_KEYS))
    if raw.get("disabled") is True:
        return None
    kind = raw.get("type", raw.get("transport"))
    if kind is not None:
        if not isinstance(kind, str) or kind.lower() not in _TRANSPORTS:
            raise ConfigError(f"{path}.type", f"expected one of stdio, http, streamable-http, sse; got {kind!r}", source)
        kind = _TRANSPORTS[kind.lower()]
    elif "url" in raw:
        kind = "streamable-http"
    else:
        kind = "stdio"
    data = _expand_tree({k: v for k, v in raw.items() if k not in ("type", "transport")}, environ, path, source)
    data["name"] = name
    try:
        if kind == "stdio":
            return StdioServerConfig.model_validate(data)
        data["transport"] = kind
        return RemoteServerConfig.model_validate(data)
    except ValidationError as err:
        _raise_validation(err, path, source)
    raise AssertionError("unreachable")  # pragma: no cover


def parse_config(
    data: Any,
    *,
    source: str | None = None,
    environ: Mapping[str, str] | None = None,
    data_dir: Path | None = None,
) -> HostConfig:
    """Validate and expand a config object (the parsed JSON).

    Args:
        data: ``{"mcpServers": {...}, "toolhost": {...}}``.
        source: file name used in error messages.
        environ: variables for expansion (default: ``os.environ``).
        data_dir: value of ``${TOOLHOST_DATA_DIR}``.

    Raises:
        ConfigError: the first problem found, with its JSON path.
    """
    env = dict(os.environ if environ is None else environ)
    env.setdefault("TOOLHOST_PYTHON", sys.executable)
    if data_dir is not None:
        env.setdefault("TOOLHOST_DATA_DIR", str(data_dir))
    if not isinstance(data, dict):
        raise ConfigError("$", "expected a JSON object with an 'mcpServers' key", source)
    servers_raw = data.get("mcpServers", data.get("servers"))
    if servers_raw is None:
        raise ConfigError("mcpServers", "required (an object mapping server names to server entries)", source)
    if not isinstance(servers_raw, dict):
        raise ConfigError("mcpServers", f"expected an object, got {type(servers_raw).__name__}", source)
    try:
        defaults = HostDefaults.model_validate(data.get("toolhost") or {})
    except ValidationError as err:
        _raise_validation(err, "toolhost", source)
    cfg = HostConfig(defaults=defaults, source=source)
    cfg.warnings.extend(_unknown_keys(data, _TOP_KEYS, "$", frozenset()))
    prefixes: dict[str, str] = {}
    for name, raw in servers_raw.items():
        if not isinstance(name, str) or not name.strip():
            raise ConfigError("mcpServers", f"server names must be non-empty strings, got {name!r}", source)
        server = _parse_server(name, raw, env, source, cfg.warnings)
        if server is None:
            cfg.skipped.append(name)
            continue
        try:
            prefix = server.prefix
        except InvalidToolName as err:
            raise ConfigError(f"mcpServers.{name}.toolhost.prefix", err.reason, source) from None
        if prefix in prefixes:
            raise ConfigError(
                f"mcpServers.{name}.toolhost.prefix",
                f"prefix {prefix!r} is already used by server {prefixes[prefix]!r}; set a different toolhost.prefix",
                source,
            )
        prefixes[prefix] = name
        cfg.servers[name] = server
    return cfg


class _DuplicateKey(Exception):
    def __init__(self, key: str) -> None:
        self.key = key


def _no_duplicate_keys(pairs: list[tuple[str, Any]]) -> dict[str, Any]:
    out: dict[str, Any] = {}
    for key, value in pairs:
        if key in out:
            raise _DuplicateKey(key)
        out[key] = value
    return out


def load_config(
    path: str | os.PathLike[str] | None = None,
    *,
    environ: Mapping[str, str] | None = None,
    data_dir: Path | None = None,
) -> HostConfig:
    """Read and parse a config file (``None``: the bundled default).

    Raises:
        ConfigError: unreadable file, invalid JSON (with line and column), or invalid content.
    """
    file = Path(path) if path is not None else DEFAULT_CONFIG_PATH
    source = str(file)
    try:
        text = file.read_text(encoding="utf-8")
    except OSError as err:
        raise ConfigError("$", f"cannot read the config file: {err.strerror or err}", source) from None
    try:
        data = json.loads(text, object_pairs_hook=_no_duplicate_keys)
    except json.JSONDecodeError as err:
        raise ConfigError("$", f"invalid JSON at line {err.lineno}, column {err.colno}: {err.msg}", source) from None
    except _DuplicateKey as dup:
        raise ConfigError(
            "$", f"key {dup.key!r} appears twice in one object (JSON would silently keep the last); "
            "rename or remove one", source) from None
    return parse_config(data, source=source, environ=environ, data_dir=data_dir)
