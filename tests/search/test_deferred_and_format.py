import json

import pytest

from registry.search import DeferredLoadingState, SearchIndex, format_result, hit_line, param_summary, tool_definition
from registry.store import ToolRegistry

from ._tools import catalog, tool


def _registry() -> ToolRegistry:
    reg = ToolRegistry()
    for server, recs in catalog().items():
        reg.replace_server(server, recs)
    reg.replace_server("time", [tool("time", "now", "Current time.", always_load=True)])
    return reg


def test_only_always_load_tools_are_declared_before_any_search():
    assert [t.qualified_name for t in DeferredLoadingState().declared(_registry().snapshot())] == ["time__now"]


def test_searched_tools_are_appended_in_load_order_and_stay_loaded():
    reg = _registry()
    index = SearchIndex()
    index.attach(reg)
    state = DeferredLoadingState()
    assert state.record_search(index.search("cancel order", limit=1)) == ["orders__cancel_order"]
    assert state.record_search(index.search("git status", limit=1)) == ["git__git_status"]
    assert state.record_search(index.search("cancel order", limit=1)) == []  # already loaded
    assert [t.qualified_name for t in state.declared(reg.snapshot())] == [
        "time__now",
        "orders__cancel_order",
        "git__git_status",
    ]


def test_declared_skips_gone_or_hidden_tools_but_keeps_their_place():
    reg = _registry()
    state = DeferredLoadingState(["git__git_log", "orders__get_order"])
    reg.remove_server("git")
    assert [t.qualified_name for t in state.declared(reg.snapshot())] == ["time__now", "orders__get_order"]
    assert [t.qualified_name for t in state.declared(reg.snapshot(), visible=lambda t: t.server != "time")] == [
        "orders__get_order"
    ]
    reg.replace_server("git", catalog()["git"])
    assert [t.qualified_name for t in state.declared(reg.snapshot())] == [
        "time__now",
        "git__git_log",
        "orders__get_order",
    ]


def test_state_round_trips_through_json():
    state = DeferredLoadingState()
    state.mark_loaded(["b__x", "a__y", "b__x"])
    data = json.loads(json.dumps(state.to_json()))
    assert data == {"loaded": ["b__x", "a__y"]}
    again = DeferredLoadingState.from_json(data)
    assert again.loaded == ["b__x", "a__y"] and again.is_loaded("a__y")
    with pytest.raises(ValueError, match="list of tool names"):
        DeferredLoadingState.from_json({"loaded": "b__x"})


def test_hit_line_is_compact():
    rec = catalog()["weather"][0]
    assert hit_line(rec) == ("- weather__getForecast [read]: Weather forecast for a city, days ahead. (params: "
                             "city?: string, days?: integer)")
    assert param_summary({"type": "object", "properties": {}}) == ""
    schema = {"type": "object", "properties": {f"p{i}": {"type": "string"} for i in range(10)}, "required": ["p0"]}
    assert param_summary(schema).endswith("p7?: string, +2 more") and param_summary(schema).startswith("p0: string,")


def test_format_result_and_definition():
    index = SearchIndex()
    for s, recs in catalog().items():
        index.replace_server(s, recs)
    text = format_result(index.search("air quality", limit=1))
    assert text == ("Found 1 tool(s), now callable:\n- weather__air_quality [read]: Air quality index (AQI) for a "
                    "city. (params: city?: string)")
    assert format_result(index.search("the")).startswith("The query has no searchable words.")
    d = tool_definition(catalog()["git"][0])
    assert d == {
        "name": "git__git_status",
        "title": "git_status",
        "description": "Show the working tree status of a git repository.",
        "input_schema": {"type": "object", "properties": {"repo_path": {"type": "string"}}},
        "risk": "read",
        "server": "git",
        "annotations": {"readOnlyHint": True},
    }
