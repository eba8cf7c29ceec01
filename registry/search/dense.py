"""Dense (embedding) retrieval pieces: the ``Embedder`` interface, the text embedded per tool and
rank fusion with BM25. Pure: no I/O (the model wrapper and the vector cache live in
``host.search``).

Fusion (chosen on dev data only, ``bench/search_tune.py --dense``, then frozen):

* ``minmax``: each list's scores are min-max normalised over its own top ``depth`` candidates,
  then ``bm25_weight * bm25 + (1 - bm25_weight) * dense``; a tool missing from the BM25 list
  counts 0 there, a tool without a vector yet (not embedded) uses its BM25 part alone;
* ``rrf``: reciprocal-rank fusion ``w / (k + rank_bm25) + (1 - w) / (k + rank_dense)``
  (Cormack et al., SIGIR 2009; ``k`` = 60).
"""

from __future__ import annotations

import hashlib
import re
from collections.abc import Sequence
from dataclasses import dataclass
from typing import Protocol, runtime_checkable

import numpy as np

from registry.search.document import schema_texts
from registry.search.tokenize import split_identifier
from registry.tool import ToolRecord

__all__ = ["DEFAULT_FUSION", "Embedder", "FusionParams", "embedding_text", "english_query", "fuse", "text_key"]

_MAX_TEXT_CHARS = 600


@runtime_checkable
class Embedder(Protocol):
    """Texts → unit vectors. ``model_id`` names the model *and* its version: cached vectors are
    keyed by it, so a new model version re-embeds instead of mixing vector spaces.

    ``embed`` encodes tool texts, ``embed_query`` one search query (or a remembered one). A
    symmetric model (USE, MiniLM) returns ``embed([text])[0]``; a model with distinct query and
    document encodings (e5's ``query:`` / ``passage:``) encodes it as a query; an embedder of
    several models (:class:`registry.search.fusion.PartedEmbedder`) zeroes the parts that do not
    apply to it.
    """

    model_id: str
    dim: int

    def embed(self, texts: Sequence[str]) -> np.ndarray:
        """``(len(texts), dim)`` float32 array of L2-normalised rows (CPU-bound; no I/O)."""
        ...

    def embed_query(self, text: str) -> np.ndarray:
        """``(dim,)`` float32 query vector (CPU-bound; no I/O)."""
        ...


@dataclass(frozen=True)
class FusionParams:
    """How BM25 and dense rankings are combined.

    Attributes:
        method: ``"minmax"`` or ``"rrf"``.
        bm25_weight: weight of the BM25 part (0..1); the dense part gets ``1 - bm25_weight``.
        depth: candidates taken from each list before fusing.
        rrf_k: the RRF constant.
    """

    method: str = "minmax"
    bm25_weight: float = 0.65
    depth: int = 100
    rrf_k: int = 60

    def __post_init__(self) -> None:
        if self.method not in ("minmax", "rrf"):
            raise ValueError(f"fusion method must be 'minmax' or 'rrf', got {self.method!r}")
        if not 0.0 <= self.bm25_weight <= 1.0:
            raise ValueError(f"bm25_weight must be within 0..1, got {self.bm25_weight}")
        if self.depth < 1:
            raise ValueError(f"depth must be at least 1, got {self.depth}")


DEFAULT_FUSION = FusionParams()
"""Frozen from the dev grid (see the module docstring). BM25 weight 0.65 (was 0.6): the smallest
that never loses to BM25 alone on a dev set or query kind (``bench/search_fusion3_tune.py``: 0.6
lost 0.53 R@5 on the ToolLens pool's long queries, an API-style catalog where USE alone reaches
13 R@5 to BM25's 24 and its min-max-stretched cosines overturn BM25's confident orderings;
0.65: +0.02 at worst, mean dev R@5 46.10 → 45.64). Used without MiniLM installed."""


def embedding_text(record: ToolRecord, *, server: bool = False) -> str:
    """The text embedded for a tool: its words-split name and title, the start of its
    description and its parameter names (at most 600 characters); with ``server``, the server
    name in front (``"github: create issue. ..."``)."""
    name = " ".join(split_identifier(record.original_name))
    title = record.title or record.annotations.title or ""
    names, _descs, _enums = schema_texts(record.input_schema)
    head = f"{name}. {title}. " if title else f"{name}. "
    if server:
        head = f"{record.server}: {head}"
    text = head + " ".join((record.description or "").split())
    if names:
        text = text[: _MAX_TEXT_CHARS - 80] + " (" + ", ".join(names[:8]) + ")"
    return text[:_MAX_TEXT_CHARS]


_WORD = re.compile(r"[^\W\d_]+")
_LINK = re.compile(r"\S*[./@:]\S*\.\S+")
_FOREIGN_WORDS = frozenset((
    # Spanish, Portuguese, French, German, Italian function words that English text rarely has.
    "de", "del", "la", "las", "los", "el", "un", "una", "unos", "unas", "en", "y", "para", "por", "con", "que",
    "al", "mis", "sus", "uma", "com", "não", "das", "dos", "pelo", "pela", "le", "les", "des", "une", "du",
    "pour", "avec", "aux", "sur", "dans", "der", "und", "ein", "eine", "einen", "mit", "für", "ist", "nicht",
    "auf", "von", "gli", "della", "delle", "che",
))
_FOREIGN_STRONG = frozenset((
    "una", "unos", "unas", "para", "por", "uma", "pour", "avec", "und", "mit", "für", "eine", "einen",
))
"""Function words that count twice: they alone mark a short query as not English."""


def english_query(text: str) -> bool:
    """Whether ``text`` reads as English for an English-only model: its letters all ASCII and at
    most one function word of another Latin-script language (``una``, ``para``, ``avec``, ``und``
    ... count two; links and e-mail addresses ignored): ``"ver los registros de un pod"`` is not
    English, ``"flights to Los Angeles"`` is, ``"创建议题"`` is not. A heuristic, checked on the dev
    queries (0.4 % of ToolLens train and 0.3 % of MetaTool read as not English, mostly "Los
    Angeles" twice) and on the cross-language set (every query not English): such a query keeps
    to the multilingual model."""
    words = _WORD.findall(_LINK.sub(" ", text.lower()))
    if not all(w.isascii() for w in words):
        return False
    return sum((w in _FOREIGN_WORDS) + (w in _FOREIGN_STRONG) for w in words) < 2


def text_key(text: str, model_id: str) -> bytes:
    """32-byte cache key of ``text`` embedded by ``model_id`` (SHA-256)."""
    return hashlib.sha256(f"{model_id}\x00{text}".encode()).digest()


def _top(slots: np.ndarray, scores: np.ndarray, depth: int) -> tuple[np.ndarray, np.ndarray]:
    """The ``depth`` best ``(slots, scores)``, best first; scores as float64 (any float input:
    the float32 cosines are selected before they are converted)."""
    n = len(slots)
    if n > depth:
        sel = np.argpartition(scores, n - depth)[n - depth :]
        slots, scores = slots[sel], scores[sel]
    order = np.argsort(-scores, kind="stable")
    return slots[order], scores[order].astype(np.float64)


def _union(a: np.ndarray, b: np.ndarray) -> np.ndarray:
    """``np.union1d(a, b)`` (sorted distinct values) without its generic ``np.unique`` path:
    about 10 µs less per hybrid search."""
    both = np.concatenate((a, b))
    both.sort()
    if len(both) < 2:
        return both
    keep = np.empty(len(both), dtype=bool)
    keep[0] = True
    np.not_equal(both[1:], both[:-1], out=keep[1:])
    return both[keep]


def _minmax(scores: np.ndarray) -> np.ndarray:
    if not len(scores):
        return scores
    lo, hi = float(scores.min()), float(scores.max())
    if hi - lo <= 1e-12:
        return np.ones(len(scores))
    return (scores - lo) / (hi - lo)


def fuse(
    bm_slots: np.ndarray,
    bm_scores: np.ndarray,
    dense_slots: np.ndarray,
    dense_all: np.ndarray,
    has_vector: np.ndarray,
    params: FusionParams = DEFAULT_FUSION,
    dense_scores: np.ndarray | None = None,
) -> tuple[np.ndarray, np.ndarray]:
    """Fused ``(slots, scores)`` over the union of both lists' top ``params.depth`` candidates.

    Args:
        bm_slots, bm_scores: BM25 candidates (any order).
        dense_slots: the slots dense retrieval may rank (visible, allowed, with a vector).
        dense_all: cosine per slot (``len`` = capacity; only ``dense_slots`` are read as candidates).
        has_vector: boolean per slot: whether it has a vector. A tool without one (not embedded
            yet) is ranked by its BM25 part alone: lexical-only until embedded.
        params: the fusion method.
        dense_scores: ``dense_all[dense_slots]`` when the caller already has it (saves a gather).
    """
    b_s, b_v = _top(bm_slots, np.asarray(bm_scores, dtype=np.float64), params.depth)
    cand = dense_all[dense_slots] if dense_scores is None else dense_scores
    d_s, d_v = _top(dense_slots, cand, params.depth)
    union = _union(b_s, d_s)
    if not len(union):
        return union, np.zeros(0)
    w = params.bm25_weight
    bm_part = np.zeros(len(union))
    dn_part = np.zeros(len(union))
    vec = has_vector[union]
    if params.method == "rrf":
        if len(b_s):
            bm_part[np.searchsorted(union, b_s)] = 1.0 / (params.rrf_k + 1 + np.arange(len(b_s)))
        if len(d_s):
            dn_part[np.searchsorted(union, d_s)] = 1.0 / (params.rrf_k + 1 + np.arange(len(d_s)))
    else:
        if len(b_s):
            bm_part[np.searchsorted(union, b_s)] = _minmax(b_v)
        if len(d_s):
            lo, hi = float(d_v[-1]), float(d_v[0])
            span = hi - lo if hi - lo > 1e-12 else 1.0
            dn_part = np.where(vec, np.minimum(np.maximum((dense_all[union] - lo) / span, 0.0), 1.0), 0.0)
    fused = w * bm_part + (1.0 - w) * dn_part
    if not vec.all():
        fused = np.where(vec, fused, bm_part)
    return union, fused


class VectorBuffer:
    """Growable ``(capacity, dim)`` float32 matrix shared by successive index states.

    Rows are written in place only where no published state has ever had a vector (``ever``),
    so a reader of an older state never sees a row change under it; writing a row that was
    ever published copies the buffer first (copy-on-write). Capacity grows geometrically.
    """

    __slots__ = ("dim", "ever", "matrix")

    def __init__(self, dim: int, capacity: int = 0) -> None:
        self.dim = dim
        self.matrix = np.zeros((capacity, dim), dtype=np.float32)
        self.ever = np.zeros(capacity, dtype=bool)

    def writable_for(self, rows: np.ndarray, capacity: int, live: np.ndarray) -> VectorBuffer:
        """This buffer, or a grown / copied one, in which ``rows`` may be written in place.

        ``live`` is the current state's has-vector flags (they stay valid in a copy)."""
        need_copy = bool(len(rows)) and bool(self.ever[rows[rows < len(self.ever)]].any())
        if capacity <= len(self.matrix) and not need_copy:
            return self
        new = VectorBuffer(self.dim)
        cap = max(capacity, len(self.matrix)) if need_copy else max(capacity, int(len(self.matrix) * 1.5) + 64)
        new.matrix = np.zeros((cap, self.dim), dtype=np.float32)
        new.matrix[: len(self.matrix)] = self.matrix
        new.ever = np.zeros(cap, dtype=bool)
        new.ever[: len(live)] = live
        return new

    def write(self, rows: np.ndarray, vectors: np.ndarray) -> None:
        self.matrix[rows] = vectors
        self.ever[rows] = True
