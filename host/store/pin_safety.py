"""What the pin store keeps about a definition's safety: scanner findings and drift triage.

:class:`PinSafety` scans each served definition once per definition hash
(:func:`registry.safety.definition_hold`, cached, so a re-list of unchanged tools costs a dict
look-up) and triages a change against the pinned JSON (:func:`registry.safety.triage`). The pin
row stores both as JSON text:

* ``findings``: ``["instruction (fake_tag) at description[0:11]: '<IMPORTANT>'", ...]`` (strong
  first), ``NULL`` when the served definition is not suspicious;
* ``drift``: ``{"class": "risk_downgrade, cosmetic", "reasons": [...], "auto_acceptable": false,
  "risk_downgrade": true, "poisoning": false}``, ``NULL`` when nothing is pending;
* ``scan_ok_hash``: the definition hash an admin accepted with its findings (not held again for them).
"""

from __future__ import annotations

import json
import logging
import sqlite3
import threading
from collections import OrderedDict
from collections.abc import Iterable, Mapping, Sequence
from dataclasses import dataclass
from typing import Any, Protocol

import anyio
import anyio.to_thread

from registry.safety import (
    DriftClass,
    LearnedScore,
    ScanResult,
    UnitScorer,
    learned_finding,
    scan_definition,
    score_definition,
    triage,
)
from registry.tool import ToolRecord

__all__ = ["DriftSummary", "PinSafety", "SavedScores", "drift_json", "findings_json", "parse_drift", "parse_findings"]

_log = logging.getLogger("toolhost.safety")

MAX_STORED_REASONS = 50
"""Findings / drift lines kept per pin (the rest are counted in a last line)."""


def _put(cache: OrderedDict[str, Any], key: str, value: Any, max_entries: int) -> None:
    cache[key] = value
    while len(cache) > max_entries:
        cache.popitem(last=False)


def _cut(lines: list[str]) -> list[str]:
    if len(lines) <= MAX_STORED_REASONS:
        return lines
    return lines[:MAX_STORED_REASONS] + [f"... and {len(lines) - MAX_STORED_REASONS} more"]


def findings_json(scan: ScanResult | None) -> str | None:
    """The ``findings`` column of a pin (``None``: not suspicious)."""
    return None if scan is None else json.dumps(_cut(scan.reasons()), ensure_ascii=False)


def drift_json(drift: DriftClass | None) -> str | None:
    """The ``drift`` column of a pin (``None``: nothing pending or no pinned definition to compare)."""
    if drift is None:
        return None
    return json.dumps({"class": drift.label, "reasons": _cut(drift.reasons()), "auto_acceptable": drift.auto_acceptable,
                       "risk_downgrade": drift.risk_downgrade, "poisoning": drift.poisoning}, ensure_ascii=False)


def parse_findings(text: str | None) -> list[str]:
    """The stored findings (``[]`` for none)."""
    return list(json.loads(text)) if text else []


@dataclass(frozen=True)
class DriftSummary:
    """A stored drift triage: class label (most serious first), one reason per change, flags."""

    label: str
    reasons: tuple[str, ...]
    auto_acceptable: bool
    risk_downgrade: bool
    poisoning: bool


def parse_drift(text: str | None) -> DriftSummary | None:
    """The stored drift triage (``None`` for none)."""
    if not text:
        return None
    d: dict[str, Any] = json.loads(text)
    return DriftSummary(d["class"], tuple(d["reasons"]), bool(d["auto_acceptable"]), bool(d["risk_downgrade"]),
                        bool(d["poisoning"]))


class SavedScores(Protocol):
    """Learned scores kept across restarts, by definition hash (:class:`host.safety.ScoreCache`)."""

    def get_many(self, hashes: Iterable[str]) -> dict[str, LearnedScore | None]:
        """The saved scores of those ``hashes`` that have one."""
        ...

    def put_many(self, scores: Mapping[str, LearnedScore | None]) -> None:
        """Save ``scores``."""
        ...


class PinSafety:
    """Scans (cached by definition hash, at most ``max_entries``) and triage for :class:`host.store.Pins`.

    ``scorer``: the learned signal beside the rules (:class:`host.safety.EmbeddingScorer`), or
    ``None`` for the rules alone. It embeds the text units of each definition not seen before
    (about 2 ms per unit, ~9 ms per tool). The server manager calls :meth:`prescore` for a new
    listing before it reaches the registry (:class:`host.upstream.DefinitionPrescorer`): the
    embedding runs in a worker thread (one at a time, off the event loop) and the synchronous
    registry listener then finds every score cached. A caller that observes without pre-scoring
    (one-shot CLI commands, tests) gets the score computed inline. A scorer that fails (the model
    cannot load or run) is logged and the rules alone decide for that definition.

    ``saved``: scores kept across restarts (:class:`host.safety.ScoreCache`), read and written in
    the same worker thread; a restart then embeds only new or changed definitions.

    The listing waits for its scan (in the thread, the event loop free): also for the model's first
    load (a few seconds, usually done already by the search index at start-up). That wait is the
    price of never listing a tool before the learned signal had its say; applying the score later
    would list, and let agents call, a tool that is then withdrawn.

    Thread-safe: the caches are read and written under one lock."""

    def __init__(self, max_entries: int = 20_000, scorer: UnitScorer | None = None,
                 saved: SavedScores | None = None) -> None:
        self.scorer = scorer
        self.saved = saved
        self._scans: OrderedDict[str, ScanResult | None] = OrderedDict()
        self._learned: OrderedDict[str, LearnedScore | None] = OrderedDict()
        self._max = max_entries
        self._lock = threading.Lock()
        self._limiter = anyio.CapacityLimiter(1)

    def suspicious(self, record: ToolRecord) -> ScanResult | None:
        """The scan that holds ``record`` (suspicious), else ``None``."""
        key = record.definition_hash
        with self._lock:
            if key in self._scans:
                self._scans.move_to_end(key)
                return self._scans[key]
        result = learned_finding(scan_definition(record), self._learned_score(record))
        found = result if result.suspicious else None
        with self._lock:
            _put(self._scans, key, found, self._max)
        return found

    def unscored(self, records: Sequence[ToolRecord]) -> list[ToolRecord]:
        """The records whose learned score is not in memory yet (``[]`` without a scorer)."""
        if self.scorer is None:
            return []
        with self._lock:
            return [r for r in records if r.definition_hash not in self._learned]

    async def prescore(self, records: Sequence[ToolRecord]) -> None:
        """Read the saved or compute the learned scores of the :meth:`unscored` ``records`` in a
        worker thread (never on the event loop; one such thread at a time)."""
        todo = self.unscored(records)
        if todo:
            await anyio.to_thread.run_sync(self._score_all, todo, limiter=self._limiter, abandon_on_cancel=True)

    def _learned_score(self, record: ToolRecord) -> LearnedScore | None:
        if self.scorer is None:
            return None
        key = record.definition_hash
        with self._lock:
            if key in self._learned:
                self._learned.move_to_end(key)
                return self._learned[key]
        return self._score_all([record]).get(key)

    def _score_all(self, records: Sequence[ToolRecord]) -> dict[str, LearnedScore | None]:
        todo = {r.definition_hash: r for r in records}
        with self._lock:
            known = {key: self._learned[key] for key in todo if key in self._learned}
        known |= self._saved_get([key for key in todo if key not in known])
        fresh: dict[str, LearnedScore | None] = {}
        for key, record in todo.items():
            if key not in known:
                try:
                    fresh[key] = score_definition(record, self.scorer)  # type: ignore[arg-type]
                except Exception as exc:  # noqa: BLE001 - the model failed (any way): the rules decide
                    _log.warning("definition scanner: learned signal failed on %s (%s: %s); rules alone",
                                 record.qualified_name, type(exc).__name__, exc)
                    known[key] = None  # not saved: a restart tries again
        self._saved_put(fresh)
        scores = known | fresh
        with self._lock:
            for key, score in scores.items():
                _put(self._learned, key, score, self._max)
        return scores

    def _saved_get(self, hashes: list[str]) -> dict[str, LearnedScore | None]:
        if self.saved is None or not hashes:
            return {}
        try:
            return self.saved.get_many(hashes)
        except (sqlite3.Error, OSError) as exc:
            _log.warning("definition scanner: saved learned scores unreadable (%s); scoring again", exc)
            return {}

    def _saved_put(self, scores: dict[str, LearnedScore | None]) -> None:
        if self.saved is None or not scores:
            return
        try:
            self.saved.put_many(scores)
        except (sqlite3.Error, OSError) as exc:
            _log.warning("definition scanner: could not save learned scores (%s); they are kept in memory", exc)

    @staticmethod
    def drift(pinned_json: str | None, record: ToolRecord) -> DriftClass | None:
        """The triage of ``record`` against the pinned definition (``None`` without one)."""
        return None if pinned_json is None else triage(pinned_json, record)
