"""Per-conversation deferred-loading state: which tools are declared to the model.

Rule (Anthropic "tool search tool" / OpenAI ``defer_loading``): tools marked ``always_load`` are
always declared; every other tool is declared only after a search returned it, and then stays
declared for the rest of the conversation. Load order is kept: provider adapters append newly
loaded tools at the END of the tools array, so the prompt prefix of earlier requests stays
byte-identical (prompt caching).

The state is plain data (``{"loaded": [qualified names in load order]}``), so it can be saved in
and rebuilt from an event log; the registry server's ``tool_search`` and the adapters share it.
"""

from __future__ import annotations

from collections.abc import Callable, Iterable, Mapping
from dataclasses import dataclass, field
from typing import Any

from registry.search.result import SearchResult
from registry.store import RegistrySnapshot
from registry.tool import ToolRecord

__all__ = ["DeferredLoadingState"]


@dataclass
class DeferredLoadingState:
    """The tools a conversation has loaded, in load order.

    Attributes:
        loaded: qualified names, first loaded first, no duplicates.
    """

    loaded: list[str] = field(default_factory=list)

    def __post_init__(self) -> None:
        self.loaded = list(dict.fromkeys(self.loaded))
        self._seen = set(self.loaded)

    def is_loaded(self, name: str) -> bool:
        """Whether ``name`` was loaded by an earlier search."""
        return name in self._seen

    def mark_loaded(self, names: Iterable[str]) -> list[str]:
        """Append the names not loaded yet, in the given order; returns those newly loaded."""
        new = []
        for name in names:
            if name not in self._seen:
                self._seen.add(name)
                self.loaded.append(name)
                new.append(name)
        return new

    def record_search(self, result: SearchResult) -> list[str]:
        """Load every hit of ``result`` (best first); returns the newly loaded names."""
        return self.mark_loaded(h.tool.qualified_name for h in result.hits)

    def declared(
        self,
        snapshot: RegistrySnapshot | Mapping[str, ToolRecord],
        visible: Callable[[ToolRecord], bool] | None = None,
    ) -> list[ToolRecord]:
        """Tools to declare now: ``always_load`` ones (sorted by qualified name), then loaded
        ones in load order.

        A loaded tool whose server is gone (or that is no longer ``visible``) is skipped but stays
        in :attr:`loaded`, so it comes back in the same position when its server reconnects.

        Args:
            snapshot: the registry snapshot (or any ``{qualified name: ToolRecord}`` mapping).
            visible: the caller's permission predicate (``None``: all visible).
        """
        by_name = snapshot.by_name if isinstance(snapshot, RegistrySnapshot) else snapshot
        ok = visible or (lambda _r: True)
        always = [by_name[n] for n in sorted(by_name) if by_name[n].always_load and ok(by_name[n])]
        out = list(always)
        taken = {r.qualified_name for r in always}
        for name in self.loaded:
            rec = by_name.get(name)
            if rec is not None and name not in taken and ok(rec):
                out.append(rec)
                taken.add(name)
        return out

    def to_json(self) -> dict[str, Any]:
        """``{"loaded": [names]}``."""
        return {"loaded": list(self.loaded)}

    @classmethod
    def from_json(cls, data: Mapping[str, Any]) -> DeferredLoadingState:
        """Rebuild from :meth:`to_json` output.

        Raises:
            ValueError: ``data["loaded"]`` is not a list of strings.
        """
        loaded = data.get("loaded", [])
        if not isinstance(loaded, list) or not all(isinstance(n, str) for n in loaded):
            raise ValueError(f"deferred-loading state needs 'loaded': a list of tool names, got {loaded!r}")
        return cls(loaded=list(loaded))
