"""What a tool search returns: ranked hits, the result with its "no tool fits" signals, and
the thresholds that decide "no tool fits" (:class:`Abstain`). Pure data, no I/O."""

from __future__ import annotations

from dataclasses import dataclass, field

from registry.tool import ToolRecord

__all__ = ["DEFAULT_ABSTAIN", "WEAK_MESSAGE", "Abstain", "SearchHit", "SearchResult"]


@dataclass(frozen=True)
class Abstain:
    """When a free-text search says "no tool fits" (:attr:`SearchResult.weak`).

    Weak when the best BM25 confidence (top score over the query's best possible score, 0..1) is
    below ``bm25_min`` and, when the dense part ran, the best dense cosine is below ``dense_min``
    and stands out from the caller's other tools by fewer than ``z_min`` standard deviations.
    """

    dense_min: float = 0.35
    bm25_min: float = 0.15
    z_min: float = 4.0

    def weak(self, bm25_confidence: float, dense_top: float | None, dense_z: float | None) -> bool:
        """Whether these signals of a search's best hit mean "no tool fits"."""
        if bm25_confidence >= self.bm25_min:
            return False
        if dense_top is None or dense_z is None:
            return True
        return dense_top < self.dense_min and dense_z < self.z_min


DEFAULT_ABSTAIN = Abstain()

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
        dense_top: best dense cosine among the caller's tools (``None``: no dense part ran).
        bm25_confidence: best BM25 score over the query's best possible score (0..1).
    """

    hits: list[SearchHit]
    mode: str
    message: str | None = None
    not_found: list[str] = field(default_factory=list)
    weak: bool = False
    dense_top: float | None = None
    dense_z: float | None = None
    bm25_confidence: float = 0.0
