"""Variable expansion in the configuration: ``${VAR}``, ``${env:VAR}``, ``${VAR:-default}``,
``${input:ID}`` and VS Code's ``${workspaceFolder}`` / ``${userHome}`` (see :mod:`host.config`)."""

from __future__ import annotations

import os
import re
from collections.abc import Mapping
from pathlib import Path
from typing import Any

from host.errors import ConfigError

__all__ = ["expand_vars", "input_env_name"]

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


