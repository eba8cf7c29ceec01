"""The merged tool registry: per-server snapshots swapped atomically.

Readers call :meth:`ToolRegistry.snapshot` (or the lookup helpers, which use it) and get an
immutable :class:`RegistrySnapshot`; writers replace or remove one server's tools at a time.
A reader therefore sees the old or the new set of a server's tools, never a half-updated one.
Pure: no I/O, no locks needed under a single event loop (every mutation is one assignment).
"""

from __future__ import annotations

import difflib
from collections.abc import Callable, Iterable, Mapping
from dataclasses import dataclass, field
from types import MappingProxyType

from registry.errors import NameConflict, ToolNotFound
from registry.tool import ToolRecord

__all__ = ["RegistryListener", "RegistrySnapshot", "ToolRegistry"]

RegistryListener = Callable[[str, tuple[ToolRecord, ...], tuple[ToolRecord, ...]], None]
"""Called as ``listener(server, old_records, new_records)`` after a server's tools change."""


@dataclass(frozen=True)
class RegistrySnapshot:
    """An immutable view of every registered tool at one version.

    Attributes:
        version: increases by one with every change.
        by_name: ``{qualified_name: ToolRecord}``.
        by_server: ``{server: (ToolRecord, ...)}`` in the server's listing order.
    """

    version: int = 0
    by_name: Mapping[str, ToolRecord] = field(default_factory=lambda: MappingProxyType({}))
    by_server: Mapping[str, tuple[ToolRecord, ...]] = field(default_factory=lambda: MappingProxyType({}))

    def __len__(self) -> int:
        return len(self.by_name)

    def tools(self) -> list[ToolRecord]:
        """Every tool, sorted by qualified name."""
        return [self.by_name[k] for k in sorted(self.by_name)]

    def get(self, qualified_name: str) -> ToolRecord | None:
        """The tool under ``qualified_name``, or ``None``."""
        return self.by_name.get(qualified_name)

    def resolve(self, server: str, original_name: str) -> ToolRecord | None:
        """Reverse lookup: the tool ``original_name`` of ``server``, or ``None``."""
        for rec in self.by_server.get(server, ()):
            if rec.original_name == original_name:
                return rec
        return None


class ToolRegistry:
    """All tools of all connected servers, under unique qualified names.

    Two servers may expose the same original tool name: their qualified names differ by
    prefix and both stay reachable (never shadowed silently).
    """

    def __init__(self) -> None:
        self._snap = RegistrySnapshot()
        self._listeners: list[RegistryListener] = []

    # -- reading -----------------------------------------------------------------------
    def snapshot(self) -> RegistrySnapshot:
        """The current immutable snapshot (cheap; hold it for a consistent multi-step read)."""
        return self._snap

    @property
    def version(self) -> int:
        """Version of the current snapshot."""
        return self._snap.version

    def __len__(self) -> int:
        return len(self._snap)

    def __contains__(self, qualified_name: object) -> bool:
        return qualified_name in self._snap.by_name

    def tools(self) -> list[ToolRecord]:
        """Every tool, sorted by qualified name."""
        return self._snap.tools()

    def servers(self) -> list[str]:
        """Names of servers that currently have tools registered, sorted."""
        return sorted(self._snap.by_server)

    def by_server(self, server: str) -> tuple[ToolRecord, ...]:
        """The tools of one server in listing order (empty when unknown)."""
        return self._snap.by_server.get(server, ())

    def get(self, qualified_name: str) -> ToolRecord:
        """The tool under ``qualified_name``.

        Raises:
            ToolNotFound: with up to 3 close names in ``suggestions``.
        """
        rec = self._snap.get(qualified_name)
        if rec is None:
            raise ToolNotFound(qualified_name, self.suggest(qualified_name))
        return rec

    def suggest(self, name: str, limit: int = 3, among: Iterable[str] | None = None) -> list[str]:
        """Up to ``limit`` existing qualified names close to ``name`` (difflib ratio ≥ 0.5).

        ``among`` restricts the candidates (e.g. to the names a caller may see).

        A name over three times the longest candidate cannot reach a ratio of 0.5 (ratio =
        2·matches / total length), so it gets ``[]`` without running difflib, whose time grows
        with the name's length (a 1 MB name held the event loop for seconds).
        """
        pool = list(among) if among is not None else list(self._snap.by_name)
        if not pool or len(name) > 3 * max(map(len, pool)):
            return []
        lowered = {n.lower(): n for n in pool}
        hits = difflib.get_close_matches(name.lower(), list(lowered), n=limit, cutoff=0.5)
        # Also match on the bare tool part, so "cancel_order" suggests "orders__cancel_order".
        if len(hits) < limit:
            bare = {n.partition("__")[2].lower(): n for n in pool}
            for h in difflib.get_close_matches(name.lower(), list(bare), n=limit, cutoff=0.6):
                full = bare[h].lower()
                if full not in hits:
                    hits.append(full)
        return [lowered.get(h, h) for h in hits[:limit]]

    # -- writing -----------------------------------------------------------------------
    def subscribe(self, listener: RegistryListener) -> Callable[[], None]:
        """Call ``listener`` after every change; returns an unsubscribe function."""
        self._listeners.append(listener)
        return lambda: self._listeners.remove(listener) if listener in self._listeners else None

    def replace_server(self, server: str, records: Iterable[ToolRecord]) -> RegistrySnapshot:
        """Atomically replace all tools of ``server`` with ``records``.

        Raises:
            NameConflict: when a qualified name is already used by another server's tool,
                or twice within ``records``; the registry is left unchanged.
            ValueError: when a record's ``server`` is not ``server``.
        """
        new = tuple(records)
        old_snap = self._snap
        names = dict(old_snap.by_name)
        for rec in old_snap.by_server.get(server, ()):
            names.pop(rec.qualified_name, None)
        for rec in new:
            if rec.server != server:
                raise ValueError(f"record {rec.qualified_name!r} belongs to server {rec.server!r}, not {server!r}")
            other = names.get(rec.qualified_name)
            if other is not None:
                raise NameConflict(
                    rec.qualified_name, (other.server, other.original_name), (rec.server, rec.original_name)
                )
            names[rec.qualified_name] = rec
        servers = dict(old_snap.by_server)
        if new:
            servers[server] = new
        else:
            servers.pop(server, None)
        self._snap = RegistrySnapshot(
            version=old_snap.version + 1,
            by_name=MappingProxyType(names),
            by_server=MappingProxyType(servers),
        )
        old = old_snap.by_server.get(server, ())
        for listener in list(self._listeners):
            listener(server, old, new)
        return self._snap

    def remove_server(self, server: str) -> RegistrySnapshot:
        """Drop every tool of ``server`` (no-op when it has none)."""
        if server not in self._snap.by_server:
            return self._snap
        return self.replace_server(server, ())
