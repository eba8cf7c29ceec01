"""Data-flow labels of what a ``resources/read`` or ``prompts/get`` hands the model.

A resource's text and a prompt's messages reach the model like a tool result, so they count for
session taint (:mod:`registry.safety.taint`) like one. Reading sends nothing out, so they are
never *egress*; their *source* labels follow one rule a user can predict: **a read or get carries
what its server's tools carry** — the server that wrote the text is the one whose tools the
derivation table (:mod:`registry.safety.flow`) already labels — plus two defaults that err
towards labelling:

=================  ===========================================================================
label              derived as (first matching row wins)
=================  ===========================================================================
private_source     1. ``toolhost.flow.catalog.private_source`` (config, the server's prompts and
                      resources), then ``toolhost.flow.private_source`` (config, whole server)
                   2. a ``file://`` resource → true (a file of the machine the server runs on)
                   3. one of the server's tools is a private source → true
                   4. otherwise false
untrusted_source   1. config as above (``untrusted_source``)
                   2. one of the server's tools is an untrusted source → true
                   3. the server lists no tools → true (nothing says its content is the
                      user's own; the MCP default for annotations is open world)
                   4. otherwise false
egress             never (reading sends nothing out; config ``egress`` is ignored here)
=================  ===========================================================================

Why the server's tools and not the item's own metadata: a prompt or resource carries no
annotations, and an item's name or description is written by the same upstream that would
want to escape the label. Per-tool config (``toolhost.flow.tools``) changes the tools' labels and
so, through row 3 / 2, the catalog's; ``toolhost.flow.catalog`` sets the catalog's directly.

Pure; no I/O.
"""

from __future__ import annotations

from collections.abc import Iterable

from registry.safety.flow import FlowConfig, FlowLabels, Label

__all__ = ["catalog_labels"]


def _configured(config: FlowConfig | None, label: Label) -> tuple[bool, str] | None:
    if config is None:
        return None
    own = getattr(config.catalog, label.value)
    if own is not None:
        return own, f"config toolhost.flow.catalog.{label.value}"
    server = getattr(config, label.value)
    if server is not None:
        return server, f"config toolhost.flow.{label.value}"
    return None


def catalog_labels(kind: str, uri: str | None, tools: Iterable[tuple[str, FlowLabels]],
                   config: FlowConfig | None = None) -> FlowLabels:
    """The labels of one ``resources/read`` (``kind`` ``"resource"``, ``uri`` its upstream URI) or
    ``prompts/get`` (``"prompt"``, ``uri`` ``None``) of a server (module docstring table).

    Args:
        tools: ``(original tool name, labels)`` of every tool the server lists now.
        config: the server's ``toolhost.flow`` block.
    """
    listed = list(tools)
    reasons: dict[Label, str] = {Label.EGRESS: f"a {kind} read sends nothing out"}

    def first_tool(label: Label) -> str | None:
        return next((name for name, labels in listed if label in labels.labels), None)

    private_tool = first_tool(Label.PRIVATE_SOURCE)
    untrusted_tool = first_tool(Label.UNTRUSTED_SOURCE)
    rows = {
        Label.PRIVATE_SOURCE: [
            (kind == "resource" and (uri or "").lower().startswith("file://"), "a file:// resource"),
            (private_tool is not None, f"its server's tool {private_tool!r} is a private source"),
        ],
        Label.UNTRUSTED_SOURCE: [
            (untrusted_tool is not None, f"its server's tool {untrusted_tool!r} is an untrusted source"),
            (not listed, "its server lists no tools (untrusted by default)"),
        ],
    }
    values: dict[Label, bool] = {}
    for label, candidates in rows.items():
        found = _configured(config, label)
        if found is not None:
            values[label], reasons[label] = found
            continue
        values[label], reasons[label] = False, "no tool of its server carries it"
        for applies, why in candidates:
            if applies:
                values[label], reasons[label] = True, why
                break
    return FlowLabels(values[Label.PRIVATE_SOURCE], values[Label.UNTRUSTED_SOURCE], False, reasons)
