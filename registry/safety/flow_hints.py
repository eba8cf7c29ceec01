"""Where a server's annotations disagree with the labels its tool's name implies.

Annotations are untrusted hints (MCP 2025-11-25, server features, tools: "clients MUST consider
tool annotations to be untrusted unless they come from trusted servers"). So
:func:`registry.safety.flow.derive_labels` lets a name cue win over ``readOnlyHint: true`` (egress)
and over ``openWorldHint: false`` (untrusted source), and :func:`hint_conflicts` says so in one line
per overruled hint, for ``toolhost tools``, search hits and the console. Only the operator's config
(``toolhost.flow`` or ``toolhost.risk``) clears such a label; a label the config set is no conflict.

Pure; no I/O.
"""

from __future__ import annotations

from collections.abc import Mapping

from registry.tool import Risk, ToolRecord

__all__ = ["CUE_REASON", "hint_conflicts"]

CUE_REASON = "name cue "
"""How a label reason decided by a name cue starts (``"name cue 'send'…"``)."""


def hint_conflicts(record: ToolRecord, reasons: Mapping[str, str]) -> tuple[str, ...]:
    """The annotations of ``record`` its labels overrule, one line each (empty: none).

    Args:
        record: the tool (its ``risk`` and ``annotations``; ``risk_configured`` marks a config risk).
        reasons: the label reasons :func:`registry.safety.flow.derive_labels` chose, keyed by label
            value (``"egress"``, ``"untrusted_source"``).
    """
    out = []
    name = record.original_name
    if (reasons.get("egress", "").startswith(CUE_REASON) and record.risk is Risk.READ
            and not record.risk_configured):
        cue = reasons["egress"].removeprefix(CUE_REASON).split(",")[0]
        out.append(f"readOnlyHint true contradicts name cue {cue}: still egress; if the tool really sends "
                   f"nothing, set toolhost.flow.tools.{name}.egress false (or toolhost.risk.{name} read) "
                   "in the server's config")
    if reasons.get("untrusted_source", "").startswith(CUE_REASON) and record.annotations.open_world_hint is False:
        cue = reasons["untrusted_source"].removeprefix(CUE_REASON)
        out.append(f"openWorldHint false contradicts name cue {cue}: still an untrusted source; if its "
                   f"results are only your own data, set toolhost.flow.tools.{name}.untrusted_source false "
                   "in the server's config")
    return tuple(out)
