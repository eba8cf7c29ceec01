"""The registry: atomic per-server swaps, lookups, conflicts (never shadowed silently)."""

from __future__ import annotations

import pytest

from registry import NameConflict, ToolDefinition, ToolNotFound, ToolRegistry, build_record


def rec(server: str, name: str, qualified: str | None = None):
    return build_record(
        server=server, qualified_name=qualified or f"{server}__{name}", definition=ToolDefinition(name=name)
    )


def test_two_servers_with_the_same_tool_name_both_stay_reachable():
    reg = ToolRegistry()
    reg.replace_server("a", [rec("a", "send_email")])
    reg.replace_server("b", [rec("b", "send_email")])
    assert reg.get("a__send_email").server == "a"
    assert reg.get("b__send_email").server == "b"
    snap = reg.snapshot()
    assert snap.resolve("b", "send_email").qualified_name == "b__send_email"
    assert [t.qualified_name for t in reg.tools()] == ["a__send_email", "b__send_email"]


def test_replace_server_swaps_the_whole_set_and_bumps_version():
    reg = ToolRegistry()
    reg.replace_server("a", [rec("a", "x"), rec("a", "y")])
    old = reg.snapshot()
    reg.replace_server("a", [rec("a", "z")])
    assert [t.original_name for t in reg.by_server("a")] == ["z"]
    assert "a__x" not in reg and reg.version == old.version + 1
    assert sorted(old.by_name) == ["a__x", "a__y"]  # an old snapshot is never mutated


def test_conflicting_qualified_name_is_refused_and_registry_unchanged():
    reg = ToolRegistry()
    reg.replace_server("a", [rec("a", "x", "shared__x")])
    before = reg.snapshot()
    with pytest.raises(NameConflict) as e:
        reg.replace_server("b", [rec("b", "x", "shared__x")])
    assert e.value.existing == ("a", "x") and e.value.incoming == ("b", "x")
    assert reg.snapshot() is before


def test_unknown_name_suggests_close_names():
    reg = ToolRegistry()
    reg.replace_server("orders", [rec("orders", "cancel_order"), rec("orders", "get_order")])
    with pytest.raises(ToolNotFound) as e:
        reg.get("orders__cancel_ordr")
    assert e.value.suggestions[0] == "orders__cancel_order"
    assert reg.suggest("cancel_order")[0] == "orders__cancel_order"


def test_a_name_too_long_to_be_close_gets_no_suggestions_without_running_difflib(monkeypatch):
    """Hostile-caller finding: a 1 MB tool name made difflib hold the event loop for seconds."""
    import difflib

    reg = ToolRegistry()
    reg.replace_server("orders", [rec("orders", "cancel_order"), rec("orders", "get_order")])
    longest = len("orders__cancel_order")
    # just inside the bound difflib still runs (and finds the tool under the padding) ...
    assert reg.suggest("orders__cancel_order" + "x" * (2 * longest)) == ["orders__cancel_order"]

    def refuse(*_a, **_k):
        raise AssertionError("difflib must not run for a name that cannot be close")

    monkeypatch.setattr(difflib, "get_close_matches", refuse)
    assert reg.suggest("x" * (3 * longest + 1)) == []  # ... past it, no candidate can reach 0.5
    with pytest.raises(ToolNotFound) as e:
        reg.get("x" * 1_000_000)
    assert e.value.suggestions == []


def test_listeners_see_old_and_new_records():
    reg = ToolRegistry()
    seen = []
    unsubscribe = reg.subscribe(lambda s, old, new: seen.append((s, len(old), len(new))))
    reg.replace_server("a", [rec("a", "x")])
    reg.remove_server("a")
    unsubscribe()
    reg.replace_server("a", [rec("a", "x")])
    assert seen == [("a", 0, 1), ("a", 1, 0)]
