"""Python identifiers for qualified tool names, so a script can call a tool as ``await name(...)``.

Qualified names match ``^[a-zA-Z0-9_-]{1,64}$`` (:data:`registry.naming.NAME_PATTERN`); a Python
identifier cannot hold ``-`` nor start with a digit, and must not be a keyword or shadow a builtin
the script needs. Rules, applied to each qualified name:

* ``-`` becomes ``_``; a leading digit gets a ``t_`` prefix;
* a keyword, a soft keyword or a builtin name (``print``, ``open``, ``list``...) gets a trailing ``_``;
* when two names of one catalog map to the same identifier (``a-b`` and ``a_b``), every lossy one
  gets ``_`` + 8 hex digits of ``sha256(qualified_name)``: stable across runs and list orders.

Pure (no I/O). Source: Python's lexical rules (https://docs.python.org/3.11/reference/lexical_analysis.html#identifiers).
"""

from __future__ import annotations

import builtins
import hashlib
import keyword
from collections import defaultdict
from collections.abc import Iterable, Mapping

__all__ = ["RESERVED_NAMES", "python_identifier", "python_names"]

RESERVED_NAMES = frozenset(keyword.kwlist) | frozenset(keyword.softkwlist) | frozenset(dir(builtins)) | {"call_tool"}
"""Identifiers a tool never takes as they are: keywords, builtins and the script's own ``call_tool``."""


def python_identifier(qualified_name: str) -> str:
    """The identifier for one qualified name, before collision handling (see module rules)."""
    ident = qualified_name.replace("-", "_")
    if not ident or ident[0].isdigit():
        ident = "t_" + ident
    if ident in RESERVED_NAMES:
        ident += "_"
    return ident


def python_names(qualified_names: Iterable[str]) -> Mapping[str, str]:
    """``{identifier: qualified_name}`` for a catalog's names, collisions resolved (see module rules).

    Raises:
        ValueError: a name is not a valid qualified name (it holds characters outside ``[A-Za-z0-9_-]``).
    """
    groups: dict[str, list[str]] = defaultdict(list)
    for name in dict.fromkeys(qualified_names):
        if not name or not all(c.isascii() and (c.isalnum() or c in "_-") for c in name):
            raise ValueError(f"tool name {name!r} is not a qualified name (expected [A-Za-z0-9_-]{{1,64}})")
        groups[python_identifier(name)].append(name)
    out: dict[str, str] = {}
    for ident, names in groups.items():
        if len(names) == 1:
            out[ident] = names[0]
            continue
        for name in names:
            exact = name == ident
            key = ident if exact else f"{ident}_{hashlib.sha256(name.encode()).hexdigest()[:8]}"
            out[key] = name
    return dict(sorted(out.items()))
