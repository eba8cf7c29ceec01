"""Qualified tool names that every provider accepts at once.

Rules (OpenAI function names are the strictest: ``^[a-zA-Z0-9_-]{1,64}$``; Anthropic allows
128 characters, MCP ``^[A-Za-z0-9._-]{1,128}$``):

* A server **prefix** is sanitized to ``[A-Za-z0-9-]`` plus single underscores, with no
  leading/trailing ``_``/``-`` and at most :data:`MAX_PREFIX_CHARS` characters. Because a prefix
  never contains ``__`` nor ends in ``_``, the first ``__`` of a qualified name always ends the
  prefix, so names of different servers can never collide.
* A qualified name is ``prefix + "__" + tool_part``; an empty prefix (``toolhost.prefix: ""``,
  un-namespaced serving) gives just ``tool_part``, and collisions with other servers are then
  refused by the registry (:class:`registry.NameConflict` names both servers). ``tool_part`` is the original name with
  every character outside ``[A-Za-z0-9_-]`` replaced by ``_`` (after Unicode NFKC folding).
* When the result is longer than :data:`MAX_NAME_CHARS`, or when two tools of one server
  sanitize to the same name, the lossy names get ``_`` + 8 hex digits of
  ``sha256(server + "\\0" + original_name)``: stable across runs, machines and list orders.

Source: the provider APIs' tool-name rules (OpenAI rejects names over 64 characters or outside
``^[a-zA-Z0-9_-]+$``) and same-named tools on two servers (never shadowed silently).
"""

from __future__ import annotations

import functools
import hashlib
import re
import unicodedata
from collections import defaultdict
from collections.abc import Iterable

from registry.errors import InvalidToolName

__all__ = [
    "MAX_NAME_CHARS",
    "MAX_PREFIX_CHARS",
    "NAME_PATTERN",
    "assign_qualified_names",
    "is_valid_name",
    "qualify",
    "sanitize_part",
    "sanitize_prefix",
    "split_qualified",
]

MAX_NAME_CHARS = 64
"""Longest qualified name (OpenAI's limit, the strictest of the providers)."""

MAX_PREFIX_CHARS = 24
"""Longest server prefix, so every tool keeps at least 38 characters of its own name."""

NAME_PATTERN = re.compile(r"^[a-zA-Z0-9_-]{1,64}$")
"""What every qualified name matches."""

_SEPARATOR = "__"
_HASH_CHARS = 8
_ILLEGAL = re.compile(r"[^A-Za-z0-9_-]")


def is_valid_name(name: str) -> bool:
    """True when ``name`` matches :data:`NAME_PATTERN`."""
    return bool(NAME_PATTERN.fullmatch(name))


def _short_hash(*parts: str) -> str:
    return hashlib.sha256("\0".join(parts).encode("utf-8")).hexdigest()[:_HASH_CHARS]


def sanitize_part(name: str) -> str:
    """Replace every character outside ``[A-Za-z0-9_-]`` by ``_`` (after NFKC folding).

    Returns ``"tool"`` for an empty result so the part is never empty.
    """
    folded = unicodedata.normalize("NFKC", name)
    out = _ILLEGAL.sub("_", folded)
    return out or "tool"


@functools.lru_cache(maxsize=1024)
def sanitize_prefix(server: str) -> str:
    """Turn a server name into a namespace prefix (see module rules). Pure, so remembered: the
    call path maps each result's resource URIs through its server's prefix.

    Raises:
        InvalidToolName: when nothing usable is left (e.g. ``"..."``); choose a
            ``toolhost.prefix`` made of letters and digits.
    """
    out = sanitize_part(server)
    out = re.sub(r"_+", "_", out).strip("_-")
    if not out or out == "tool" and not server.strip():
        raise InvalidToolName(server, "a server prefix needs at least one letter or digit; set toolhost.prefix")
    if len(out) > MAX_PREFIX_CHARS:
        out = out[: MAX_PREFIX_CHARS - _HASH_CHARS - 1].rstrip("_-") + "-" + _short_hash(server)
    return out


def qualify(prefix: str, original_name: str, *, server: str | None = None, force_hash: bool = False) -> str:
    """Qualified name of one tool: ``prefix__tool`` (see module rules).

    Args:
        prefix: an already sanitized prefix (:func:`sanitize_prefix`).
        original_name: the tool's name on its server.
        server: identity mixed into the hash suffix (defaults to ``prefix``).
        force_hash: always append the hash suffix (used to break sanitizing collisions).

    Returns:
        A name matching :data:`NAME_PATTERN`.
    """
    part = sanitize_part(original_name)
    name = f"{prefix}{_SEPARATOR}{part}" if prefix else part
    if force_hash or len(name) > MAX_NAME_CHARS:
        suffix = "_" + _short_hash(server or prefix, original_name)
        name = name[: MAX_NAME_CHARS - len(suffix)] + suffix
    return name


def split_qualified(qualified_name: str) -> tuple[str, str]:
    """Split ``prefix__tool`` at the first ``__``: ``(prefix, tool_part)``.

    Raises:
        InvalidToolName: when there is no ``__`` separator.
    """
    prefix, sep, rest = qualified_name.partition(_SEPARATOR)
    if not sep or not prefix or not rest:
        raise InvalidToolName(qualified_name, "expected 'server__tool'")
    return prefix, rest


def assign_qualified_names(prefix: str, original_names: Iterable[str], *, server: str | None = None) -> dict[str, str]:
    """Qualified names for all tools of one server, unique and independent of list order.

    A name that is exact (sanitizing changed nothing) keeps its plain form; names whose
    sanitized forms collide with another tool of the same server get a hash suffix.

    Returns:
        ``{original_name: qualified_name}``. Duplicated original names appear once.
    """
    names = sorted(set(original_names))
    groups: dict[str, list[str]] = defaultdict(list)
    for n in names:
        groups[qualify(prefix, n, server=server)].append(n)
    out: dict[str, str] = {}
    for candidate, members in groups.items():
        if len(members) == 1:
            out[members[0]] = candidate
            continue
        for n in members:
            exact = sanitize_part(n) == n and candidate == (f"{prefix}{_SEPARATOR}{n}" if prefix else n)
            out[n] = candidate if exact else qualify(prefix, n, server=server, force_hash=True)
    # A forced hash could in theory land on another plain name; fall back to longer hashes.
    taken: dict[str, str] = {}
    for n in names:
        q = out[n]
        if q in taken:
            digest = hashlib.sha256(f"{server or prefix}\0{n}".encode()).hexdigest()[:16]
            q = (f"{prefix}{_SEPARATOR}" if prefix else "") + sanitize_part(n)
            q = q[: MAX_NAME_CHARS - 17] + "_" + digest
            out[n] = q
        taken[q] = n
    return out
