"""regex: search mode against a backtracking pattern from a remote caller (ReDoS)."""

from __future__ import annotations

import pytest

from registry import ToolDefinition, build_record
from registry.search import SearchIndex


def rec(name: str, description: str):
    return build_record(
        server="s", qualified_name=f"s__{name}", definition=ToolDefinition(name=name, description=description)
    )


@pytest.mark.timeout(10)  # stdlib re needs hours for this
def test_backtracking_regex_is_stopped_by_the_time_budget():
    index = SearchIndex()
    index.replace_server("s", [rec(f"t{i}", "a" * 45 + "b") for i in range(20)])
    result = index.search(r"regex:(?m)^(a|aa)+$", limit=5)
    assert result.hits == [] and "took longer than 0.25 s" in result.message


def test_regex_still_finds_tools():
    index = SearchIndex()
    index.replace_server("s", [rec("get_weather", "Current weather."), rec("send_mail", "Send an e-mail.")])
    assert [h.tool.qualified_name for h in index.search("regex:(?i)^s__GET", limit=5).hits] == ["s__get_weather"]
    assert "Invalid regex" in index.search("regex:(", limit=5).message
