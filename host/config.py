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
``${TOOLHOST_DATA_DIR}`` (the resolved data folder) are defined. VS Code's own variables
(BR-46) have one resolution each, and are never sent literally:

* ``${input:ID}``: the environment variable ``TOOLHOST_INPUT_<ID>`` (ID upper-cased, every
  character other than a letter or digit replaced by ``_``; ``api-key`` → ``TOOLHOST_INPUT_API_KEY``),
  else the ``default`` of the entry with that ``id`` in the config's top-level ``inputs`` list;
  otherwise the server fails with a reason naming both.
* ``${workspaceFolder}``: ``$TOOLHOST_WORKSPACE_FOLDER`` if set, else the config file's folder
  (its parent when that folder is ``.vscode``, as for ``.vscode/mcp.json``);
  ``${userHome}``: the home folder.

A relative ``cwd`` is resolved against the config file's folder (never the folder toolhost was
started from); in-memory configs resolve it against the current folder.

Errors are :class:`host.errors.ConfigError` naming the JSON path, e.g.
``mcpServers.git.command: required (the executable that starts a stdio server)``. A problem
inside one server entry (an unset variable, a bad field) fails **only that server**: it is
recorded in :attr:`HostConfig.failed` and shown by ``toolhost servers``; problems outside the
entries (invalid JSON, no ``mcpServers``, a bad top-level ``toolhost`` block) fail the load.
"""

from __future__ import annotations

import difflib
import json
from dataclasses import dataclass
import os
import re
import sys
from collections.abc import Mapping
from pathlib import Path
from typing import Any, Literal

from host.limits.config import RateLimitConfig, SessionLimits
from pydantic import BaseModel, ConfigDict, Field, ValidationError

from host.errors import ConfigError
from registry import DEFAULT_MAX_OUTPUT_CHARS, DEFAULT_TIMEOUT_SECONDS, InvalidToolName, Risk, ToolOverrides
from registry.naming import sanitize_prefix

__all__ = [
    "DEFAULT_CONFIG_PATH",
    "FailedServer",
    "HostConfig",
    "HostDefaults",
    "LifecyclePolicy",
    "PACKAGE_RUNNERS",
    "RemoteServerConfig",
    "ServerConfig",
    "ServerOptions",
    "StdioServerConfig",
    "expand_vars",
    "input_env_name",
    "load_config",
    "parse_config",
]

DEFAULT_CONFIG_PATH = Path(__file__).resolve().parent.parent / "servers" / "default_config.json"
"""The bundled default config (example servers + mcp-server-time)."""


class ServerOptions(BaseModel):
    """The ``toolhost`` block of one server entry.

    Attributes:
        prefix: namespace prefix of the server's tools, prompts and resources (default: the server
            name, sanitized). ``""`` serves them under their original names and URIs; a name that
            then collides with another server's is refused with an error naming both servers.
        enabled: if set, only these original tool names are registered.
        disabled: original tool names never registered.
        risk: per-tool risk override, ``{"tool": "read" | "write" | "destructive"}``.
        timeout_seconds: per-call budget for every tool of the server (seconds).
        max_output_chars: model-visible output budget for every tool (characters).
        always_load: tools declared to the model without a prior ``tool_search``.
        connect_timeout_seconds: budget for start + handshake + listing (seconds).
        tools: full per-tool overrides, ``{"tool": {"timeout_seconds": 5, "concurrency_safe": true}}``.
        first_connect_timeout_seconds, ping_interval_seconds, healthy_after_seconds,
        backoff_max_seconds, relist_min_interval_seconds: lifecycle settings, see
        :class:`LifecyclePolicy` (``None``: the top-level default).
        protocol: ``"auto"`` (probe 2026-07-28 ``server/discover``, fall back to ``initialize``) or
            ``"legacy"`` (always the 2025-11-25 ``initialize`` handshake, e.g. for servers whose
            sampling/elicitation/subscriptions only work on handshake-era sessions).
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
    first_connect_timeout_seconds: float | None = Field(default=None, gt=0)
    ping_interval_seconds: float | None = Field(default=None, ge=0)
    healthy_after_seconds: float | None = Field(default=None, ge=0)
    backoff_max_seconds: float | None = Field(default=None, gt=0)
    relist_min_interval_seconds: float | None = Field(default=None, ge=0)
    protocol: Literal["auto", "legacy"] = "auto"

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
        """The sanitized namespace prefix of this server's tools (``""``: un-namespaced)."""
        if self.toolhost.prefix == "":
            return ""
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


PACKAGE_RUNNERS = frozenset({"npx", "uvx", "pipx", "bunx", "pnpx", "pnpm", "yarn", "docker", "podman"})
"""Commands that may download/install a package on their first start (``npx -y pkg``)."""


@dataclass(frozen=True)
class LifecyclePolicy:
    """How one connection is kept alive. Units: seconds.

    Attributes:
        first_connect_timeout_seconds: budget of the **first** connect attempt when longer than
            the connect timeout (``None``: same as every attempt). Default: 120 s for stdio
            commands in :data:`PACKAGE_RUNNERS` (``npx -y`` may install first), else ``None``.
        ping_interval_seconds: MCP ``ping`` period for HTTP/SSE servers (0 disables).
        healthy_after_seconds: uptime after which the reconnect backoff resets.
        backoff_initial_seconds: first reconnect delay.
        backoff_max_seconds: cap of a reconnect delay.
        relist_min_interval_seconds: minimum time between two re-lists on ``list_changed``.
    """

    first_connect_timeout_seconds: float | None = None
    ping_interval_seconds: float = 30.0
    healthy_after_seconds: float = 60.0
    backoff_initial_seconds: float = 1.0
    backoff_max_seconds: float = 60.0
    relist_min_interval_seconds: float = 1.0


class FailedServer(BaseModel):
    """A server entry that could not be used as written (only this server fails).

    Attributes:
        name: the entry's name.
        transport: ``stdio``, ``streamable-http`` or ``sse`` (best guess from the entry).
        reason: one line naming the JSON path and the fix.
    """

    name: str
    transport: str
    reason: str


class HostDefaults(BaseModel):
    """The top-level ``toolhost`` block: defaults for every server (lifecycle fields: see
    :class:`LifecyclePolicy`)."""

    model_config = ConfigDict(extra="forbid")

    timeout_seconds: float = Field(default=DEFAULT_TIMEOUT_SECONDS, gt=0)
    max_output_chars: int = Field(default=DEFAULT_MAX_OUTPUT_CHARS, gt=0)
    connect_timeout_seconds: float = Field(default=30.0, gt=0)
    first_connect_timeout_seconds: float = Field(default=120.0, gt=0)
    ping_interval_seconds: float = Field(default=30.0, ge=0)
    healthy_after_seconds: float = Field(default=60.0, ge=0)
    backoff_max_seconds: float = Field(default=60.0, gt=0)
    relist_min_interval_seconds: float = Field(default=1.0, ge=0)
    audit_durability: Literal["commit", "interval"] = "commit"
    """``commit``: a call is answered only after its audit row is committed (no answered call's row
    is lost even if the process crashes); ``interval``: rows are committed in the background within
    ``audit_flush_seconds`` (see :mod:`host.access.audit_writer`)."""
    audit_flush_seconds: float = Field(default=0.05, gt=0, le=60)
    rate_limits: RateLimitConfig | None = None  # issue 11: per-user / per-tool token buckets
    sessions: SessionLimits = Field(default_factory=SessionLimits)  # issue 11: fair HTTP sessions


class HostConfig(BaseModel):
    """A parsed, expanded configuration.

    Attributes:
        servers: enabled servers by name, in file order.
        defaults: the top-level ``toolhost`` block.
        source: the file it came from (``None`` for in-memory configs).
        skipped: names of entries with ``"disabled": true``.
        failed: entries that could not be used, by name (each fails only itself).
        warnings: ignored keys, with a suggestion when one looks like a typo (other clients'
            keys such as ``autoApprove`` are ignored silently).
    """

    servers: dict[str, ServerConfig] = Field(default_factory=dict)
    defaults: HostDefaults = Field(default_factory=HostDefaults)
    source: str | None = None
    skipped: list[str] = Field(default_factory=list)
    failed: dict[str, FailedServer] = Field(default_factory=dict)
    warnings: list[str] = Field(default_factory=list)

    def connect_timeout_for(self, server: ServerConfig) -> float:
        """Connect budget of one server in seconds (its own, else the default)."""
        return server.toolhost.connect_timeout_seconds or self.defaults.connect_timeout_seconds

    def lifecycle_for(self, server: ServerConfig) -> LifecyclePolicy:
        """The server's :class:`LifecyclePolicy` (its ``toolhost`` block, else the defaults)."""
        o, d = server.toolhost, self.defaults
        first = o.first_connect_timeout_seconds
        if first is None and isinstance(server, StdioServerConfig):
            if Path(server.command).name.lower().removesuffix(".cmd") in PACKAGE_RUNNERS:
                first = d.first_connect_timeout_seconds
        pick = lambda mine, default: default if mine is None else mine  # noqa: E731
        return LifecyclePolicy(
            first_connect_timeout_seconds=first,
            ping_interval_seconds=pick(o.ping_interval_seconds, d.ping_interval_seconds),
            healthy_after_seconds=pick(o.healthy_after_seconds, d.healthy_after_seconds),
            backoff_initial_seconds=min(1.0, pick(o.backoff_max_seconds, d.backoff_max_seconds)),
            backoff_max_seconds=pick(o.backoff_max_seconds, d.backoff_max_seconds),
            relist_min_interval_seconds=pick(o.relist_min_interval_seconds, d.relist_min_interval_seconds),
        )


# -- variable expansion ------------------------------------------------------------------
_VAR = re.compile(r"\$\{(?:(env|input):)?([A-Za-z_][A-Za-z0-9_.-]*)(?::-([^}]*))?\}")
_VSCODE_VARS = frozenset({"workspaceFolder", "userHome"})


def input_env_name(input_id: str) -> str:
    """The environment variable that supplies ``${input:ID}``: ``TOOLHOST_INPUT_<ID>``."""
    return "TOOLHOST_INPUT_" + re.sub(r"[^A-Za-z0-9]", "_", input_id).upper()


def expand_vars(
    value: str,
    environ: Mapping[str, str],
    *,
    path: str,
    source: str | None = None,
    inputs: Mapping[str, str] | None = None,
) -> str:
    """Expand ``${VAR}``, ``${env:VAR}``, ``${VAR:-default}``, ``${input:ID}``,
    ``${workspaceFolder}`` and ``${userHome}`` in ``value`` (module docstring).

    Args:
        inputs: ``{id: default}`` from the config's ``inputs`` list.

    Raises:
        ConfigError: naming ``path`` and the variable when it has no value and no default.
    """

    def repl(m: re.Match[str]) -> str:
        kind, name, default = m.group(1), m.group(2), m.group(3)
        if kind == "input":
            env_name = input_env_name(name)
            if environ.get(env_name):
                return environ[env_name]
            if inputs is not None and name in inputs:
                return inputs[name]
            if default is not None:
                return default
            raise ConfigError(path, f"${{input:{name}}} has no value (set the environment variable {env_name}, "
                              f"or give the input {name!r} a \"default\" in the top-level \"inputs\" list)", source)
        if kind is None and name in _VSCODE_VARS and name not in environ:
            return environ.get(f"__toolhost_{name}", "")
        if "." in name or "-" in name:
            raise ConfigError(path, f"${{{name}}} is not a valid variable name (letters, digits and _ only)", source)
        if name in environ and (environ[name] != "" or default is None):
            return environ[name]
        if default is not None:
            return default
        raise ConfigError(
            path, f"environment variable {name} is not set (set it, or write ${{{name}:-default}})", source
        )

    return _VAR.sub(repl, value)


def _expand_tree(
    node: Any, environ: Mapping[str, str], path: str, source: str | None, inputs: Mapping[str, str] | None = None
) -> Any:
    if isinstance(node, str):
        return expand_vars(node, environ, path=path, source=source, inputs=inputs)
    if isinstance(node, list):
        return [_expand_tree(v, environ, f"{path}[{i}]", source, inputs) for i, v in enumerate(node)]
    if isinstance(node, dict):
        return {
            k: (v if k == "toolhost" else _expand_tree(v, environ, f"{path}.{k}", source, inputs))
            for k, v in node.items()
        }
    return node


def _inputs(data: dict[str, Any]) -> dict[str, str]:
    """``{id: default}`` of the VS Code ``inputs`` list (entries without a default are left out)."""
    out: dict[str, str] = {}
    raw = data.get("inputs")
    if isinstance(raw, list):
        for entry in raw:
            if isinstance(entry, dict) and isinstance(entry.get("id"), str) and "default" in entry:
                out[entry["id"]] = str(entry["default"])
    return out


def _workspace_folder(source: str | None, environ: Mapping[str, str]) -> str:
    if environ.get("TOOLHOST_WORKSPACE_FOLDER"):
        return environ["TOOLHOST_WORKSPACE_FOLDER"]
    if source is None:
        return os.getcwd()
    folder = Path(source).resolve().parent
    return str(folder.parent if folder.name == ".vscode" else folder)


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
    name: str,
    raw: Any,
    environ: Mapping[str, str],
    source: str | None,
    warnings: list[str],
    inputs: Mapping[str, str] | None = None,
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
    data = _expand_tree({k: v for k, v in raw.items() if k not in ("type", "transport")}, environ, path, source, inputs)
    data["name"] = name
    cwd = data.get("cwd")
    if isinstance(cwd, str) and cwd and not os.path.isabs(os.path.expanduser(cwd)):
        base = Path(source).resolve().parent if source else Path.cwd()
        data["cwd"] = str(base / cwd)
    elif isinstance(cwd, str) and cwd.startswith("~"):
        data["cwd"] = os.path.expanduser(cwd)
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
    env["__toolhost_workspaceFolder"] = _workspace_folder(source, env)
    env["__toolhost_userHome"] = str(Path.home())
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
    inputs = _inputs(data)
    for name, raw in servers_raw.items():
        if not isinstance(name, str) or not name.strip():
            raise ConfigError("mcpServers", f"server names must be non-empty strings, got {name!r}", source)
        try:
            server = _parse_server(name, raw, env, source, cfg.warnings, inputs)
            if server is None:
                cfg.skipped.append(name)
                continue
            try:
                prefix = server.prefix
            except InvalidToolName as err:
                raise ConfigError(f"mcpServers.{name}.toolhost.prefix", err.reason, source) from None
            if prefix and prefix in prefixes:
                raise ConfigError(
                    f"mcpServers.{name}.toolhost.prefix",
                    f"prefix {prefix!r} is already used by server {prefixes[prefix]!r}; set a different "
                    "toolhost.prefix",
                    source,
                )
        except ConfigError as err:  # one bad entry fails only itself
            cfg.failed[name] = FailedServer(name=name, transport=_guess_transport(raw), reason=f"{err.path}: {err.problem}")
            cfg.warnings.append(f"server {name!r} is not started: {err.path}: {err.problem}")
            continue
        prefixes[prefix] = name
        cfg.servers[name] = server
    return cfg


def _guess_transport(raw: Any) -> str:
    if not isinstance(raw, dict):
        return "stdio"
    kind = raw.get("type", raw.get("transport"))
    if isinstance(kind, str) and kind.lower() in _TRANSPORTS:
        return _TRANSPORTS[kind.lower()]
    return "streamable-http" if "url" in raw else "stdio"


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
