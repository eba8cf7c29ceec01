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
(``${input:...}``, ``${workspaceFolder}``) have one resolution each, and are never sent literally:

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

One rule everywhere (top level, server entries, ``toolhost`` blocks at any depth), as Claude
Desktop and VS Code treat keys they do not know: an **unknown key** is a warning
(:attr:`HostConfig.warnings`: its JSON path, "unknown key, ignored" and a did-you-mean) and is
ignored; an **invalid value of a known key** is an error, and every such error of one part is
reported at once (``path: problem; path: problem``).
"""

from __future__ import annotations

import copy
import difflib
import json
import os
import sys
from collections.abc import Mapping
from pathlib import Path
from typing import Any, TypeVar, get_args, get_origin
from urllib.parse import urlsplit

from pydantic import BaseModel, ValidationError

from host.config_fixes import value_fix
from host.config_model import (
    DEFAULT_CONFIG_PATH,
    PACKAGE_RUNNERS,
    FailedServer,
    HostConfig,
    HostDefaults,
    LifecyclePolicy,
    RemoteServerConfig,
    ServerConfig,
    ServerOptions,
    StdioServerConfig,
)
from host.config_vars import _expand_tree, _inputs, _workspace_folder, expand_vars, input_env_name
from host.errors import ConfigError
from registry import InvalidToolName
from registry.naming import sanitize_prefix

M = TypeVar("M", bound=BaseModel)

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


def _model_in(annotation: Any) -> type[BaseModel] | None:
    """The pydantic model inside a field's annotation (``X | None``, ``Annotated[X, ...]``), if any."""
    if isinstance(annotation, type) and issubclass(annotation, BaseModel):
        return annotation
    for arg in get_args(annotation):
        found = _model_in(arg)
        if found is not None:
            return found
    return None


def _known_keys(model: type[BaseModel] | None, loc: tuple[Any, ...]) -> list[str]:
    """The keys the object at ``loc`` (inside ``model``) accepts, or ``[]`` when unknown."""
    current: Any = model
    for part in loc:
        if isinstance(current, type) and issubclass(current, BaseModel):
            field = current.model_fields.get(str(part))
            if field is None:
                return []
            current = field.annotation
        elif get_origin(current) is dict or get_origin(current) is list:
            current = get_args(current)[-1]  # a key or index: the value type
        else:
            inner = _model_in(current)
            if inner is None:
                return []
            current = inner
            field = current.model_fields.get(str(part))
            if field is None:
                return []
            current = field.annotation
        while get_origin(current) is not None and get_origin(current) not in (dict, list):
            inner = _model_in(current)  # X | None, Annotated[...]
            if inner is None:
                break
            current = inner
    inner = _model_in(current) if not (isinstance(current, type) and issubclass(current, BaseModel)) else current
    return list(inner.model_fields) if inner is not None else []


def _validate(model: type[M], data: dict[str, Any], prefix: str, source: str | None, warnings: list[str]) -> M:
    """``model`` validated from ``data`` under the one rule for every part of a config: an unknown
    key is a warning (its JSON path, "unknown key, ignored" and a did-you-mean) and is dropped; an
    invalid value of a known key is an error. Every error of ``data`` is reported at once.

    Raises:
        ConfigError: at the first error's path; its problem lists the others (``; path: problem``).
    """
    try:
        return model.model_validate(data)
    except ValidationError as err:
        errors = err.errors()
    kept = copy.deepcopy(data)
    for e in (e for e in errors if e["type"] == "extra_forbidden"):
        loc = tuple(e["loc"])
        known = [k for k in _known_keys(model, loc[:-1]) if k != "name"]
        close = difflib.get_close_matches(str(loc[-1]), known, n=1, cutoff=0.6)
        hint = (f" (did you mean {close[0]!r}?)" if close
                else " (check the spelling; see the toolhost block reference in README)")
        parent: Any = kept
        try:
            for part in loc[:-1]:
                parent = parent[part]
            parent.pop(loc[-1])
        except (KeyError, IndexError, TypeError, AttributeError):  # a path pydantic tags (unions): not droppable
            raise ConfigError(_loc(prefix, loc), f"unknown key{hint}", source) from None
        warnings.append(f"{_loc(prefix, loc)}: unknown key, ignored{hint}")
    invalid = [(_loc(prefix, tuple(e["loc"])), _problem(e)) for e in errors if e["type"] != "extra_forbidden"]
    if invalid:
        (path, problem), *rest = invalid
        raise ConfigError(path, problem + "".join(f"; {p}: {q}" for p, q in rest), source)
    return _validate(model, kept, prefix, source, warnings)


def _problem(error: Any) -> str:
    field = str(error["loc"][-1]) if error["loc"] else ""
    if error["type"] == "missing":
        return _MISSING_HINTS.get(field, "required")
    message, shown, fix = error["msg"].removeprefix("Value error, "), _shown_input(error.get("input")), value_fix(error)
    return f"{message}, got {shown} ({fix})" if fix else f"{message} (got {shown})"


def _shown_input(value: Any) -> str:
    """What a config error shows of the rejected input: a scalar as written, an object by its keys
    only (objects hold ``headers``, ``env`` and ``oauth`` secrets, and errors reach logs)."""
    if isinstance(value, dict):
        return "an object with keys " + ", ".join(map(str, value)) if value else "an empty object"
    if isinstance(value, list):
        return f"a list of {len(value)} items"
    return repr(value)


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
            raise ConfigError(f"{path}.type", f"expected one of stdio, http, streamable-http, sse; got {kind!r}",
                              source)
        kind = _TRANSPORTS[kind.lower()]
    elif "url" in raw:
        kind = "streamable-http"
    else:
        kind = "stdio"
    data = _expand_tree({k: v for k, v in raw.items() if k not in ("type", "transport")}, environ, path, source, inputs)
    data["name"] = name
    options = data.get("toolhost")
    if isinstance(options, dict) and isinstance(options.get("sandbox"), dict):
        # the toolhost block is not expanded, except the sandbox's folders (${workspaceFolder}, ${HOME})
        sandbox = dict(options["sandbox"])
        for key in ("writable", "hidden"):
            if isinstance(sandbox.get(key), list):
                sandbox[key] = _expand_tree(sandbox[key], environ, f"{path}.toolhost.sandbox.{key}", source, inputs)
        data["toolhost"] = {**options, "sandbox": sandbox}
    cwd = data.get("cwd")
    if isinstance(cwd, str) and cwd and not os.path.isabs(os.path.expanduser(cwd)):
        base = Path(source).resolve().parent if source else Path.cwd()
        data["cwd"] = str(base / cwd)
    elif isinstance(cwd, str) and cwd.startswith("~"):
        data["cwd"] = os.path.expanduser(cwd)
    if kind == "stdio":
        return _validate(StdioServerConfig, data, path, source, warnings)
    _check_url(data.get("url"), f"{path}.url", source)
    data["transport"] = kind
    return _validate(RemoteServerConfig, data, path, source, warnings)


def _check_url(url: Any, path: str, source: str | None) -> None:
    """A remote server's URL must be ``http://`` or ``https://`` (shown without its query: it may
    carry a token)."""
    if not isinstance(url, str):
        return
    shown = url.split("?", 1)[0]
    scheme = urlsplit(url).scheme.lower() if "://" in url else ""
    if scheme in ("http", "https"):
        return
    if not scheme:
        if shown.strip() and not any(c.isspace() for c in shown.strip()):
            raise ConfigError(path, f"{shown!r} has no scheme; write it as http://{shown.strip()} or "
                                    f"https://{shown.strip()}", source)
        raise ConfigError(path, f"{shown!r} is not a URL; write the server's address as "
                                "http://HOST:PORT/PATH or https://HOST/PATH", source)
    fix = {"ws": "http", "wss": "https"}.get(scheme)
    hint = (f"; MCP over HTTP uses {fix}://, not {scheme}://" if fix
            else "; a remote MCP server is reached over http:// or https:// (a local program is a \"command\" entry)")
    raise ConfigError(path, f"scheme {scheme!r} of {shown!r} is not supported{hint}", source)


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
        close = difflib.get_close_matches("mcpServers", [k for k in data if isinstance(k, str)], n=1, cutoff=0.7)
        found = f"; found {close[0]!r}: did you mean 'mcpServers'?" if close else ""
        raise ConfigError("mcpServers", f"required (an object mapping server names to server entries){found}", source)
    if not isinstance(servers_raw, dict):
        raise ConfigError("mcpServers", f"expected an object, got {type(servers_raw).__name__}", source)
    top_warnings: list[str] = []
    defaults = _validate(HostDefaults, data.get("toolhost") or {}, "toolhost", source, top_warnings)
    cfg = HostConfig(defaults=defaults, source=source)
    cfg.warnings.extend(top_warnings)
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
            cfg.failed[name] = FailedServer(name=name, transport=_guess_transport(raw),
                                            reason=f"{err.path}: {err.problem}", prefix=_guess_prefix(name, raw))
            cfg.warnings.append(f"server {name!r} is not started: {err.path}: {err.problem}")
            continue
        prefixes[prefix] = name
        if isinstance(server, StdioServerConfig) and server.toolhost.inherit_env is None:
            server.toolhost.inherit_env = defaults.inherit_env  # the effective value, for child_env
        cfg.servers[name] = server
    return cfg


def _guess_prefix(name: str, raw: Any) -> str | None:
    """The prefix an unusable entry's tools would have had (see :class:`FailedServer`)."""
    block = raw.get("toolhost") if isinstance(raw, dict) else None
    given = block.get("prefix") if isinstance(block, dict) else None
    if given == "":
        return None  # un-namespaced: no name can be attributed to it
    try:
        return sanitize_prefix(given if isinstance(given, str) else name)
    except InvalidToolName:
        return None


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
            "$",
            f"key {dup.key!r} appears twice in one object (JSON would silently keep the last); rename or remove one",
            source,
        ) from None
    return parse_config(data, source=source, environ=environ, data_dir=data_dir)
