"""What a tool can do to you: poisoned definitions, drift triage, data-flow labels, session taint.

Pure (no I/O), like the rest of :mod:`registry`.
"""

from registry.safety.catalog_flow import catalog_labels
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
from registry.safety.taint import (
    DropListener,
    SeenCall,
    SessionTaint,
    TaintDecision,
    TaintRule,
    TaintTracker,
    TaintVerdict,
    owner_of,
)

__all__ = [
    "Change",
    "ChangeKind",
    "DefinitionCheck",
    "DriftClass",
    "DropListener",
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
    "catalog_labels",
    "classify_drift",
    "definition_hold",
    "definition_units",
    "derive_labels",
    "escape_span",
    "learned_finding",
    "owner_of",
    "scan_definition",
    "scan_text",
    "score_definition",
    "triage",
]
