"""What a tool search returns: ranked hits and the result with its "no tool fits" signals
(decided by :class:`registry.search.abstain.Abstain`). Pure data, no I/O."""

from __future__ import annotations

from dataclasses import dataclass, field

from registry.search.abstain import Signals
from registry.tool import ToolRecord

__all__ = ["WEAK_MESSAGE", "SearchHit", "SearchResult"]


WEAK_MESSAGE = (
    "No tool fits this request well: the tools below are the closest, but probably not what you "
    "need. Try other words, or tell the user no available tool does this."
)


@dataclass(frozen=True)
class SearchHit:
    """One ranked hit: the tool's full record and its score (higher is better)."""

    tool: ToolRecord
    score: float


@dataclass(frozen=True)
class SearchResult:
    """What :meth:`SearchIndex.search` returns.

    Attributes:
        hits: best first, at most ``limit``.
        mode: ``"bm25"``, ``"select"``, ``"regex"`` or ``"empty"`` (nothing searchable in the query).
        message: guidance for the model when there are no hits (or some ``select:`` names were
            not found); ``None`` otherwise.
        not_found: ``select:`` names that match no visible tool (unknown and hidden alike).
        weak: free text only: nothing scored well enough ("no tool fits"); the hits are the best
            few anyway (see :class:`Abstain`).
        signals: how well the best hits match (free text only; :class:`Signals`).
        invalid: the query itself cannot run (a ``regex:`` pattern that is empty, invalid or too
            complex); ``message`` says why and how to fix it. (A pattern that ran out of its time
            budget is not invalid: that depends on the machine's load; ``message`` says so.)
    """

    hits: list[SearchHit]
    mode: str
    message: str | None = None
    not_found: list[str] = field(default_factory=list)
    weak: bool = False
    signals: Signals = field(default_factory=Signals)
    invalid: bool = False

    @property
    def dense_top(self) -> float | None:
        """Best dense cosine among the caller's tools (``None``: no dense part ran)."""
        return self.signals.dense_top

    @property
    def dense_z(self) -> float | None:
        """Standard deviations the best cosine stands above the caller's tools' mean."""
        return self.signals.dense_z

    @property
    def bm25_confidence(self) -> float:
        """Best BM25 score over the query's best possible score (0..1)."""
        return self.signals.bm25_confidence
