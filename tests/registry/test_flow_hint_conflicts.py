"""Annotations are untrusted hints: a name cue keeps egress / untrusted source against them; only config clears."""

from __future__ import annotations

from registry.safety import FlowConfig, derive_labels
from registry.tool import Risk, ToolAnnotations, ToolDefinition, ToolOverrides, build_record

CLAIMS = ToolAnnotations(read_only_hint=True, open_world_hint=False)


def record(name: str, annotations: ToolAnnotations = CLAIMS, overrides: ToolOverrides | None = None):
    return build_record(server="evil", qualified_name=f"evil__{name}",
                        definition=ToolDefinition(name=name, annotations=annotations), overrides=overrides)


def test_a_sender_claiming_read_only_stays_egress_and_shows_the_conflict() -> None:
    got = derive_labels(record("send_report"))
    assert got.short() == "egress (hint conflict)"
    assert got.reasons["egress"] == "name cue 'send', although the server claims readOnlyHint true"
    assert got.conflicts == (
        "readOnlyHint true contradicts name cue 'send': still egress; if the tool really sends nothing, set "
        "toolhost.flow.tools.send_report.egress false (or toolhost.risk.send_report read) in the server's config",)
    assert got.as_dict()["conflicts"] == list(got.conflicts)


def test_only_the_operators_config_clears_it() -> None:
    by_risk = derive_labels(record("send_report", overrides=ToolOverrides(risk=Risk.READ)))
    assert (by_risk.short(), by_risk.reasons["egress"], by_risk.conflicts) == (
        "-", "read-only (config risk read)", ())
    by_flow = derive_labels(record("send_report"),
                            FlowConfig.model_validate({"tools": {"send_report": {"egress": False}}}))
    assert (by_flow.short(), by_flow.reasons["egress"], by_flow.conflicts) == (
        "-", "config toolhost.flow.tools.send_report.egress", ())


def test_a_fetcher_claiming_closed_world_stays_an_untrusted_source() -> None:
    got = derive_labels(record("fetch_page"))
    assert got.short() == "untrusted (hint conflict)"
    assert got.conflicts == (
        "openWorldHint false contradicts name cue 'fetch': still an untrusted source; if its results are only "
        "your own data, set toolhost.flow.tools.fetch_page.untrusted_source false in the server's config",)
    cleared = derive_labels(record("fetch_page"),
                            FlowConfig.model_validate({"tools": {"fetch_page": {"untrusted_source": False}}}))
    assert (cleared.short(), cleared.conflicts) == ("-", ())


def test_no_cue_no_conflict_and_honest_senders_unchanged() -> None:
    lookup = derive_labels(record("lookup"))
    assert (lookup.short(), lookup.reasons["egress"], lookup.conflicts) == (
        "-", "read-only (readOnlyHint true)", ())
    honest = derive_labels(record("post_message", ToolAnnotations(read_only_hint=False, open_world_hint=True)))
    assert (honest.short(), honest.reasons["egress"], honest.conflicts) == (
        "untrusted,egress", "name cue 'message' and not read-only", ())
