"""The seams the call path and the pin store use: :class:`FlowGuard` (labels + session taint) and
:func:`definition_hold` / :func:`triage` (poisoned definitions, drift).

Wiring (one object per host, built with the registry; every method is synchronous, pure and O(1)
per call apart from the first label derivation of a definition):

* authorize stage, after the policy allowed the call: ``verdict = guard.check(session, call_id,
  record)``; ``approve`` → ask for an approval whose reason is ``verdict.reasons``; ``deny`` →
  an error result with ``verdict.message(record.qualified_name)``;
* when a result is handed back: ``guard.record_result(session, call_id, record)``;
* when a session ends: ``guard.end_session(session)``;
* on discovery and every re-list: ``definition_hold(record, scorer)`` (``None`` or the scan to
  hold it with; ``scorer`` the learned signal or ``None``), and for a changed pin ``triage(pinned_definition, record)``.

Protocols :class:`TaintCheck` and :class:`DefinitionCheck` let layers take part without knowing
this class (see the brief: a decision several layers share gets a ``Protocol``).
"""

from __future__ import annotations

import json
from collections.abc import Iterable, Mapping
from typing import Any, Protocol

from registry.safety.catalog_flow import catalog_labels
from registry.safety.definition_scan import ScanResult, scan_definition
from registry.safety.drift import DriftClass, classify_drift
from registry.safety.flow import FlowConfig, FlowLabels, derive_labels
from registry.safety.learned import UnitScorer, learned_finding, score_definition
from registry.safety.taint import CONFIG_RULE, DropListener, SeenCall, TaintRule, TaintTracker, TaintVerdict
from registry.tool import ToolDefinition, ToolRecord

__all__ = ["DefinitionCheck", "FlowGuard", "TaintCheck", "definition_hold", "triage"]


class TaintCheck(Protocol):
    """What the call path needs from session taint."""

    def labels(self, record: ToolRecord) -> FlowLabels: ...

    def check(self, session_id: str, call_id: str, record: ToolRecord, rule: TaintRule | None = None,
              source: str = CONFIG_RULE) -> TaintVerdict: ...

    def record_result(self, session_id: str, call_id: str, record: ToolRecord) -> SeenCall: ...

    def catalog_labels(self, server: str, kind: str, uri: str | None, tools: Iterable[ToolRecord]) -> FlowLabels: ...

    def record_content(self, session_id: str, call_id: str, name: str, labels: FlowLabels) -> SeenCall: ...

    def check_labels(self, session_id: str, call_id: str, name: str, labels: FlowLabels,
                     rule: TaintRule | None = None, source: str = CONFIG_RULE) -> TaintVerdict: ...

    def end_session(self, session_id: str) -> None: ...

    def end_sessions(self, prefix: str) -> list[str]: ...

    def watch_drops(self, listener: DropListener) -> None: ...


class DefinitionCheck(Protocol):
    """What discovery / re-list needs: the scan that holds a tool, or ``None``."""

    def __call__(self, record: ToolRecord) -> ScanResult | None: ...


class FlowGuard:
    """Labels per tool (cached by qualified name and definition hash) and taint per session.

    Args:
        server_flow: ``{server: FlowConfig}`` (each server's ``toolhost.flow``).
        rule: the default rule (config ``toolhost.taint``); :meth:`check` may get a grant's rule.
        max_sessions, max_per_owner: sessions kept in all and per caller (:class:`registry.safety.TaintTracker`).
    """

    def __init__(self, server_flow: Mapping[str, FlowConfig] | None = None, *, rule: TaintRule | None = None,
                 max_sessions: int = 10_000, max_per_owner: int = 256) -> None:
        self.server_flow = dict(server_flow or {})
        self.rule = rule or TaintRule()
        self.sessions = TaintTracker(max_sessions, max_per_owner=max_per_owner)
        self._labels: dict[tuple[str, str], FlowLabels] = {}

    def reconfigure(self, server_flow: Mapping[str, FlowConfig], rule: TaintRule | None = None) -> None:
        """New ``toolhost.flow`` blocks and default rule (a config reload); labels are derived again,
        sessions keep what they have seen."""
        self.server_flow = dict(server_flow)
        self.rule = rule or TaintRule()
        self._labels.clear()

    def labels(self, record: ToolRecord) -> FlowLabels:
        """The labels of ``record`` (:func:`registry.safety.flow.derive_labels` with its server's config)."""
        key = (record.qualified_name, record.definition_hash)
        found = self._labels.get(key)
        if found is None:
            if len(self._labels) > 100_000:
                self._labels.clear()
            found = self._labels[key] = derive_labels(record, self.server_flow.get(record.server))
        return found

    def check(self, session_id: str, call_id: str, record: ToolRecord, rule: TaintRule | None = None,
              source: str = CONFIG_RULE) -> TaintVerdict:
        """The verdict for calling ``record`` now in ``session_id``: ``rule`` (a grant's, named by
        ``source``) or, when ``None``, the default rule."""
        if rule is None:
            rule, source = self.rule, CONFIG_RULE
        return self.sessions.session(session_id).check(call_id, record.qualified_name, self.labels(record),
                                                       rule, source)

    def record_result(self, session_id: str, call_id: str, record: ToolRecord) -> SeenCall:
        """Record that the result of ``call_id`` reached the caller of ``session_id``."""
        return self.sessions.session(session_id).record_result(call_id, record.qualified_name, self.labels(record))

    def catalog_labels(self, server: str, kind: str, uri: str | None, tools: Iterable[ToolRecord]) -> FlowLabels:
        """The labels of a ``resources/read`` / ``prompts/get`` of ``server`` (``kind`` ``resource`` or
        ``prompt``; ``uri`` the upstream URI of a resource): :func:`registry.safety.catalog_labels`
        over ``tools`` (the registry's records; only ``server``'s count)."""
        own = [(r.original_name, self.labels(r)) for r in tools if r.server == server]
        return catalog_labels(kind, uri, own, self.server_flow.get(server))

    def record_content(self, session_id: str, call_id: str, name: str, labels: FlowLabels) -> SeenCall:
        """Record that content named ``name`` (a resource URI, a prompt) carrying ``labels`` reached
        the caller of ``session_id`` (``call_id``: its request's id, for the reasons)."""
        return self.sessions.session(session_id).record_result(call_id, name, labels)

    def check_labels(self, session_id: str, call_id: str, name: str, labels: FlowLabels,
                     rule: TaintRule | None = None, source: str = CONFIG_RULE) -> TaintVerdict:
        """:meth:`check` for something that is not a registry tool (e.g. a sampling request an
        upstream makes during a call: ``labels`` egress)."""
        if rule is None:
            rule, source = self.rule, CONFIG_RULE
        return self.sessions.session(session_id).check(call_id, name, labels, rule, source)

    def watch_drops(self, listener: DropListener) -> None:
        """Tell ``listener`` of every tainted session dropped for room (:class:`registry.safety.TaintTracker`)."""
        self.sessions.watch_drops(listener)

    def end_session(self, session_id: str) -> None:
        """Forget ``session_id``."""
        self.sessions.end(session_id)

    def end_sessions(self, prefix: str) -> list[str]:
        """Forget every session whose id starts with ``prefix``; their ids."""
        return self.sessions.end_matching(prefix)


def definition_hold(record: ToolRecord | ToolDefinition | Mapping[str, Any],
                    scorer: UnitScorer | None = None) -> ScanResult | None:
    """The scan of a definition that must be held (suspicious), else ``None``.

    ``scorer``: the learned signal (:mod:`registry.safety.learned`); a tool whose highest unit
    score reaches ``scorer.threshold`` is held with a ``learned`` finding naming the unit and the
    score, whatever the rules say. ``None``: the rules alone."""
    result = scan_definition(record)
    if scorer is not None:
        result = learned_finding(result, score_definition(record, scorer))
    return result if result.suspicious else None


def triage(pinned: str | Mapping[str, Any] | ToolRecord, served: ToolRecord | Mapping[str, Any]) -> DriftClass:
    """The drift class of a held change; ``pinned`` may be the pin's stored JSON text."""
    old = json.loads(pinned) if isinstance(pinned, str) else pinned
    return classify_drift(old, served)
