"""What a tool can do to you: poisoned definitions, drift triage, data-flow labels, session taint.

Pure (no I/O), like the rest of :mod:`registry`.
"""

from registry.safety.definition_scan import Finding, FindingKind, ScanResult, escape_span, scan_definition, scan_text

__all__ = [
    "Finding",
    "FindingKind",
    "ScanResult",
    "escape_span",
    "scan_definition",
    "scan_text",
]
