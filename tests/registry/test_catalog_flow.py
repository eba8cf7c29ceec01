"""Labels of a resources/read or prompts/get: their server's source labels, file:// private, a
tool-less server untrusted, never egress, config first (``toolhost.flow.catalog``, then server-wide)."""

from __future__ import annotations

from registry.safety import FlowConfig, FlowGuard, LabelOverride, catalog_labels, derive_labels
from registry.tool import ToolAnnotations, ToolDefinition, build_record


def record(server, name, **hints):
    return build_record(server=server, qualified_name=f"{server}__{name}",
                        definition=ToolDefinition(name=name, annotations=ToolAnnotations(**hints)))


LIST_DIR = record("files", "list_dir", read_only_hint=True, open_world_hint=False)
FETCH = record("web", "fetch_page", read_only_hint=True, open_world_hint=True)
ECHO = record("util", "echo", read_only_hint=True, open_world_hint=False)


def labelled(*records):
    return [(r.original_name, derive_labels(r)) for r in records]


def test_a_read_carries_its_servers_source_labels_and_never_egress():
    files = catalog_labels("resource", "memo://x", labelled(LIST_DIR))
    assert (files.short(), files.reasons[next(iter(files.labels))]) == (
        "private", "its server's tool 'list_dir' is a private source")
    web = catalog_labels("prompt", None, labelled(FETCH))
    assert web.as_dict()["labels"] == ["untrusted_source"]
    assert web.as_dict()["reasons"] == {
        "egress": "a prompt read sends nothing out", "private_source": "no tool of its server carries it",
        "untrusted_source": "its server's tool 'fetch_page' is an untrusted source"}
    assert catalog_labels("resource", "memo://x", labelled(ECHO)).short() == "-"


def test_file_resources_are_private_and_a_server_without_tools_is_untrusted():
    plan = catalog_labels("resource", "FILE:///srv/plan.txt", labelled(ECHO))
    assert (plan.short(), plan.reasons[next(iter(plan.labels))]) == ("private", "a file:// resource")
    assert catalog_labels("prompt", "file:///x", labelled(ECHO)).short() == "-"  # a prompt is no file
    bare = catalog_labels("resource", "page://news", [])
    assert bare.short() == "untrusted" and bare.as_dict()["reasons"]["untrusted_source"] == (
        "its server lists no tools (untrusted by default)")


def test_config_wins_catalog_block_before_the_server_wide_value():
    config = FlowConfig(untrusted_source=True, catalog=LabelOverride(private_source=False))
    got = catalog_labels("resource", "file:///srv/plan.txt", labelled(LIST_DIR), config)
    assert got.short() == "untrusted"
    assert (got.reasons[next(iter(got.labels))], got.as_dict()["reasons"]["private_source"]) == (
        "config toolhost.flow.untrusted_source", "config toolhost.flow.catalog.private_source")
    assert catalog_labels("resource", "page://x", [], FlowConfig(catalog=LabelOverride(
        untrusted_source=False))).short() == "-"


def test_the_guard_counts_only_the_servers_own_tools():
    guard = FlowGuard({"web": FlowConfig(tools={"fetch_page": LabelOverride(untrusted_source=False)})})
    assert guard.catalog_labels("files", "resource", "memo://a", [LIST_DIR, FETCH]).short() == "private"
    assert guard.catalog_labels("web", "prompt", None, [LIST_DIR, FETCH]).short() == "-"  # its tool's config
