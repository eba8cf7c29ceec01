"""What a tool can do to you: poisoned definitions, drift triage, data-flow labels, session taint.

Pure (no I/O), like the rest of :mod:`registry`.
"""

from registry.safety.definition_scan import Finding, FindingKind, ScanResult, escape_span, scan_definition, scan_text
from registry.safety.drift import Change, ChangeKind, DriftClass, classify_drift
from registry.safety.flow import FlowConfig, FlowLabels, Label, LabelOverride, derive_labels
from registry.safety.guard import DefinitionCheck, FlowGuard, TaintCheck, definition_hold, triage
from registry.safety.learned import (
    LearnedScore,
    LinearProbe,
    UnitScorer,
    definition_units,
    learned_finding,
    score_definition,
)
from registry.safety.taint import SeenCall, SessionTaint, TaintDecision, TaintRule, TaintTracker, TaintVerdict

__all__ = [
    "Change",
    "ChangeKind",
    "DefinitionCheck",
    "DriftClass",
    "Finding",
    "FindingKind",
    "FlowConfig",
    "FlowGuard",
    "FlowLabels",
    "Label",
    "LearnedScore",
    "LinearProbe",
    "LabelOverride",
    "ScanResult",
    "SeenCall",
    "SessionTaint",
    "TaintCheck",
    "TaintDecision",
    "TaintRule",
    "TaintTracker",
    "TaintVerdict",
    "UnitScorer",
    "classify_drift",
    "definition_hold",
    "definition_units",
    "derive_labels",
    "escape_span",
    "learned_finding",
    "scan_definition",
    "scan_text",
    "score_definition",
    "triage",
]
