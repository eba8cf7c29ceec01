"""The learned second signal beside the rules: a linear probe over sentence embeddings of every
natural-language string of a definition.

Rules (:mod:`registry.safety.definition_scan`) catch the phrasings they were written for; an attack
reworded, translated or moved to a parameter name, an ``examples`` value or ``annotations.title``
slips past them. The probe scores each *text unit* the rules read poorly (:func:`scored_units`:
values, titles, the tool's name, text not in English) by how much its embedding resembles the
units of known poisoned definitions; the tool's score is the highest unit score, and a tool at or
over the threshold gets a strong ``learned`` finding naming the unit:
``resembles known poisoned definitions, score 0.93 ≥ 0.80, in `inputSchema.properties.x.description```.

Text units (path: text):

* ``name``, ``title``, ``description``, ``annotations.title``;
* each schema property (``inputSchema`` and ``outputSchema``, every nesting level): one unit at the
  property's ``description`` path (or the property path when it has none) reading
  ``"<name words>: <description>"``, so instructions hidden in the *name* are scored too;
* every string in ``enum``, ``default``, ``examples``, ``const`` and ``title`` of a schema node.

The seam: :class:`UnitScorer` (texts → scores in 0..1) is computed in ``host/`` (embeddings need a
model); this module only turns scores into a verdict. :class:`LinearProbe` is the shipped model's
pure part (``registry/safety/data/probe.npz``: weights over the embedding, the threshold and the
embedder's ``model_id``), trained by ``bench/definition_scan_train.py``. Pure; no I/O.
"""

from __future__ import annotations

import hashlib
import math
import re
from collections.abc import Iterator, Mapping, Sequence
from dataclasses import dataclass
from typing import Any, Protocol

import numpy as np

from registry.safety.definition_scan import Finding, FindingKind, ScanResult, escape_span, tool_document
from registry.safety.scan_decode import english_words
from registry.safety.scan_placement import placement
from registry.tool import ToolDefinition, ToolRecord

__all__ = ["LearnedScore", "LinearProbe", "UnitScorer", "definition_units", "learned_finding", "reads_as_english",
           "score_definition", "scored_units"]

MAX_UNIT_CHARS = 600
"""Characters of one unit that are embedded (the start; an embedding of more says little more)."""

MAX_UNITS = 200
"""Units scored per tool (in document order); the rules still read every field."""

_VALUE_KEYS = ("enum", "default", "examples", "const", "title")


class UnitScorer(Protocol):
    """Scores text units: how much each resembles the units of known poisoned definitions."""

    threshold: float
    """Scores at or over it hold the tool."""

    def scores(self, texts: Sequence[str]) -> Sequence[float]:
        """One score in 0..1 per text, same order (CPU-bound; may embed)."""
        ...


@dataclass(frozen=True)
class LinearProbe:
    """Logistic regression over unit embeddings: ``sigmoid(vectors @ weights + bias)``.

    Attributes:
        weights: ``(dim,)`` float32.
        bias: intercept.
        threshold: the operating point (chosen on training data, see the training script).
        model_id: the :class:`registry.search.Embedder` ``model_id`` the weights were trained on;
            vectors of another model are meaningless to it.
    """

    weights: np.ndarray
    bias: float
    threshold: float
    model_id: str

    def score_vectors(self, vectors: np.ndarray) -> np.ndarray:
        """``(n,)`` float64 scores of ``(n, dim)`` vectors."""
        z = np.asarray(vectors, dtype=np.float64) @ self.weights.astype(np.float64) + self.bias
        return 1.0 / (1.0 + np.exp(-np.clip(z, -50.0, 50.0)))

    @property
    def version(self) -> str:
        """16 hex digits identifying the model id, weights, bias and threshold (scores of another
        version are not reused)."""
        digest = hashlib.sha256(self.model_id.encode())
        digest.update(np.ascontiguousarray(self.weights, dtype="<f4").tobytes())
        digest.update(f"{self.bias!r}|{self.threshold!r}".encode())
        return digest.hexdigest()[:16]

    @classmethod
    def from_arrays(cls, arrays: Mapping[str, Any]) -> LinearProbe:
        """From the arrays of ``probe.npz`` (``weights``, ``bias``, ``threshold``, ``model_id``)."""
        return cls(np.asarray(arrays["weights"], dtype=np.float32), float(arrays["bias"]),
                   float(arrays["threshold"]), str(arrays["model_id"]))


def _words(key: str) -> str:
    return re.sub(r"(?<=[a-z0-9])(?=[A-Z])", " ", key).replace("_", " ").replace("-", " ").strip()


def _schema_units(node: Any, path: str, depth: int = 0) -> Iterator[tuple[str, str]]:
    if depth > 32 or not isinstance(node, Mapping):
        return
    for key in _VALUE_KEYS:
        value = node.get(key)
        values = value if isinstance(value, list) else [value]
        for i, v in enumerate(values):
            if isinstance(v, str) and v.strip():
                yield (f"{path}.{key}[{i}]" if isinstance(value, list) else f"{path}.{key}"), v
    props = node.get("properties")
    if isinstance(props, Mapping):
        for name, sub in props.items():
            sub_path = f"{path}.properties.{name}"
            desc = sub.get("description") if isinstance(sub, Mapping) else None
            if isinstance(desc, str) and desc.strip():
                yield f"{sub_path}.description", f"{_words(str(name))}: {desc}"
            else:
                yield sub_path, _words(str(name))
            yield from _schema_units(sub, sub_path, depth + 1)
    for key in ("items", "additionalProperties"):
        yield from _schema_units(node.get(key), f"{path}.{key}", depth + 1)
    for key in ("anyOf", "oneOf", "allOf"):
        if isinstance(node.get(key), list):
            for i, sub in enumerate(node[key]):
                yield from _schema_units(sub, f"{path}.{key}[{i}]", depth + 1)
    for key in ("$defs", "definitions"):
        if isinstance(node.get(key), Mapping):
            for name, sub in node[key].items():
                yield from _schema_units(sub, f"{path}.{key}.{name}", depth + 1)


def definition_units(tool: Mapping[str, Any] | ToolDefinition | ToolRecord) -> list[tuple[str, str]]:
    """``[(path, text)]``: the natural-language strings of a definition (module docstring), each cut
    to :data:`MAX_UNIT_CHARS`, at most :data:`MAX_UNITS`, duplicates of a text kept once."""
    doc = tool_document(tool)
    units: list[tuple[str, str]] = []
    name = doc.get("name")
    if isinstance(name, str) and name.strip():
        units.append(("name", _words(name)))
    for field in ("title", "description"):
        if isinstance(doc.get(field), str) and doc[field].strip():
            units.append((field, doc[field]))
    annotations = doc.get("annotations")
    if isinstance(annotations, Mapping) and isinstance(annotations.get("title"), str) and annotations["title"].strip():
        units.append(("annotations.title", annotations["title"]))
    for field in ("inputSchema", "outputSchema"):
        units.extend(_schema_units(doc.get(field), field))
    seen: set[str] = set()
    out = []
    for path, text in units:
        text = text.strip()[:MAX_UNIT_CHARS]
        if text not in seen:
            seen.add(text)
            out.append((path, text))
    return out[:MAX_UNITS]


@dataclass(frozen=True)
class LearnedScore:
    """The probe's verdict on one tool: the highest unit score and where it is."""

    score: float
    path: str
    text: str
    threshold: float

    @property
    def held(self) -> bool:
        """At or over the threshold."""
        return self.score >= self.threshold

    def finding(self) -> Finding:
        """The strong ``learned`` finding of a held tool."""
        return Finding(FindingKind.LEARNED, self.path, escape_span(self.text), 0, len(self.text), True,
                       "learned_probe", message=f"resembles known poisoned definitions, score {self.score:.2f} ≥ "
                       f"{self.threshold:.2f}, in `{self.path}`")


def reads_as_english(text: str) -> bool:
    """Whether ``text`` is English prose: nearly all its letters ASCII and at least a fifth of its
    words among the commonest English words (a short label counts as English)."""
    letters = [c for c in text if c.isalpha()]
    if not letters or sum(c.isascii() for c in letters) < 0.9 * len(letters):
        return False
    words = text.split()
    return len(words) < 4 or english_words(text) >= 0.2 * len(words)


def scored_units(tool: Mapping[str, Any] | ToolDefinition | ToolRecord) -> list[tuple[str, str]]:
    """The units the probe speaks for: every unit (:func:`definition_units`) except English text in a
    description, a parameter description or a bare property name (the rules' identifier check reads
    those), which the rules read well — there the probe's extra
    holds were mostly honest tools it never trained on (``bench/definition_scan.py --learned``)."""
    return [(path, text) for path, text in definition_units(tool)
            if placement(path, False) != "text" or not reads_as_english(text)]


def score_definition(tool: Mapping[str, Any] | ToolDefinition | ToolRecord, scorer: UnitScorer) -> LearnedScore | None:
    """The highest-scoring of ``tool``'s :func:`scored_units` (``None``: none to score)."""
    units = scored_units(tool)
    if not units:
        return None
    scores = [float(s) for s in scorer.scores([text for _, text in units])]
    best = max(range(len(units)), key=lambda i: scores[i] if math.isfinite(scores[i]) else -1.0)
    return LearnedScore(scores[best], units[best][0], units[best][1], scorer.threshold)


def learned_finding(scan: ScanResult, learned: LearnedScore | None) -> ScanResult:
    """``scan`` with the ``learned`` finding added when the probe holds the tool."""
    if learned is None or not learned.held:
        return scan
    return ScanResult((*scan.findings, learned.finding()))

