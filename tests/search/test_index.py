import threading

import pytest

from registry.policy import PatternPolicy, Principal
from registry.search import SearchIndex
from registry.store import ToolRegistry
from registry.tool import Risk

from ._tools import catalog, tool


def _index(cat=None, **kwargs) -> SearchIndex:
    index = SearchIndex(**kwargs)
    for server, recs in (cat or catalog()).items():
        index.replace_server(server, recs)
    return index


def _names(result):
    return [h.tool.qualified_name for h in result.hits]


def test_free_text_finds_the_right_tool_first():
    index = _index()
    assert _names(index.search("cancel my order"))[0] == "orders__cancel_order"
    assert _names(index.search("weather forecast for Paris"))[0] == "weather__getForecast"
    assert set(_names(index.search("what changed in the repo, commit history", limit=2))) == {
        "git__git_log",
        "git__git_commit",
    }


def test_hits_carry_the_full_record_and_a_positive_score():
    hit = _index().search("air quality", limit=1).hits[0]
    assert hit.tool.qualified_name == "weather__air_quality"
    assert hit.tool.input_schema["properties"]["city"] == {"type": "string"}
    assert hit.score > 0


def test_ties_break_by_qualified_name():
    index = SearchIndex()
    index.replace_server("b", [tool("b", "ping", "Ping a host.")])
    index.replace_server("a", [tool("a", "ping", "Ping a host.")])
    result = index.search("ping")
    assert _names(result) == ["a__ping", "b__ping"]
    assert result.hits[0].score == result.hits[1].score


def test_hidden_tools_never_appear_and_do_not_change_visible_scores():
    cat = catalog()
    policy = PatternPolicy(deny=("orders__refund_*", "server:git"))
    who = Principal(user="ann")

    def visible(t):
        return policy.evaluate(who, t).visible

    full = _index(cat)
    only_visible = _index({s: [r for r in recs if visible(r)] for s, recs in cat.items()})
    for q in ["refund the payment of my order", "git commit", "order status", "city weather"]:
        got = full.search(q, visible=visible, limit=10)
        assert not any(n.startswith("git__") or n == "orders__refund_payment" for n in _names(got))
        want = only_visible.search(q, limit=10)
        # Same ranking AND same scores as an index that never held the hidden tools.
        assert [(h.tool.qualified_name, h.score) for h in got.hits] == [
            (h.tool.qualified_name, h.score) for h in want.hits
        ]


def test_visibility_mask_is_cached_per_key_and_index_generation():
    index = _index()
    calls = []

    def visible(t):
        calls.append(t.qualified_name)
        return t.server != "git"

    index.search("status", visible=visible, visible_key="ann")
    n = len(calls)
    assert _names(index.search("city", visible=visible, visible_key="ann"))  # has hits: no help text
    assert len(calls) == n  # cached
    index.replace_server("git", catalog()["git"][:1])
    assert "git__git_status" not in _names(index.search("status", visible=visible, visible_key="ann"))
    assert len(calls) > n  # new generation, recomputed


def test_server_and_risk_filters():
    index = _index()
    assert {h.tool.server for h in index.search("status order weather", servers=["weather"], limit=10).hits} == {
        "weather"
    }
    hits = index.search("order", max_risk=Risk.READ, limit=10).hits
    assert _names(index.search("order", max_risk=Risk.READ, limit=10)) == ["orders__get_order"]
    assert all(h.tool.risk is Risk.READ for h in hits)


def test_incremental_updates_equal_a_full_rebuild():
    cat = catalog()
    inc = _index(cat)
    inc.replace_server("orders", cat["orders"][:1])  # list_changed: two tools gone
    inc.remove_server("git")  # disconnect
    inc.replace_server("git", cat["git"])  # reconnect
    inc.replace_server("extra", [tool("extra", "send_email", "Send an email message.")])
    rebuilt = _index({"orders": cat["orders"][:1], "weather": cat["weather"], "git": cat["git"],
                      "extra": [tool("extra", "send_email", "Send an email message.")]})
    for q in ["order refund", "send email", "git log status", "weather city", "air"]:
        a, b = inc.search(q, limit=10), rebuilt.search(q, limit=10)
        assert [(h.tool.qualified_name, h.score) for h in a.hits] == [(h.tool.qualified_name, h.score) for h in b.hits]
    assert len(inc) == 8 and inc.servers() == ["extra", "git", "orders", "weather"]


def test_replace_server_rejects_foreign_records_and_name_clashes():
    index = _index()
    with pytest.raises(ValueError, match="belongs to server"):
        index.replace_server("weather", [tool("git", "x", "y")])
    clash = tool("git", "git_log", "z").model_copy(update={"server": "other"})
    with pytest.raises(ValueError, match="already indexed for server 'git'"):
        index.replace_server("other", [clash])
    assert len(index) == 9


def test_select_mode_looks_up_exact_names_in_order():
    index = _index()
    result = index.search("select:git__git_log, weather__air_quality")
    assert result.mode == "select" and _names(result) == ["git__git_log", "weather__air_quality"]
    assert _names(index.search("select:GIT__GIT_STATUS")) == ["git__git_status"]  # case-insensitive
    assert _names(index.search("select:getForecast")) == ["weather__getForecast"]  # unique original name


def test_select_treats_hidden_and_unknown_names_alike():
    index = _index()
    hidden = index.search("select:git__git_log,orders__get_order", visible=lambda t: t.server != "git")
    unknown = index.search("select:git__nope,orders__get_order")
    assert _names(hidden) == _names(unknown) == ["orders__get_order"]
    assert hidden.not_found == ["git__git_log"] and unknown.not_found == ["git__nope"]
    assert hidden.message == "No tool named git__git_log. Search by what the tool does, e.g. 'send email'."


def test_regex_mode_matches_names_before_descriptions():
    index = _index()
    result = index.search("regex:^git__", limit=10)
    assert result.mode == "regex" and _names(result) == ["git__git_commit", "git__git_log", "git__git_status"]
    result = index.search("regex:commit", limit=10)
    assert _names(result) == ["git__git_commit", "git__git_log"]  # name match first, then description
    assert [h.score for h in result.hits] == [2.0, 1.0]
    assert _names(index.search("regex:repo_path", limit=10)) == ["git__git_commit", "git__git_log", "git__git_status"]


def test_regex_mode_reports_bad_patterns_without_raising():
    index = _index()
    bad = index.search("regex:(unclosed")
    assert bad.hits == [] and bad.message.startswith("Invalid regex '(unclosed'")
    long = index.search("regex:" + "a" * 201)
    assert long.hits == [] and "longer than 200" in long.message
    assert index.search("regex:git", visible=lambda t: t.server != "git", limit=10).hits == []


@pytest.mark.parametrize("query", ["", "   ", "the of and", "?!", "a"])
def test_empty_or_stop_word_queries_get_help_not_an_error(query):
    result = _index().search(query, visible=lambda t: t.server != "orders")
    assert result.hits == [] and result.mode == "empty"
    assert result.message == (
        "The query has no searchable words. Available servers: git (3 tools), weather (3 tools). "
        "Describe the task in a few words (e.g. 'create calendar event'), use 'select:<tool name>' "
        "for an exact name, or 'regex:<pattern>' to match names and descriptions."
    )


def test_no_match_explains_and_lists_servers():
    result = _index().search("quantum teleportation")
    assert result.hits == [] and result.mode == "bm25"
    assert result.message.startswith("No tool matched the query.")
    assert "orders (3 tools)" in result.message


def test_limit_must_be_positive():
    with pytest.raises(ValueError, match="limit must be at least 1, got 0"):
        _index().search("git", limit=0)


def test_chinese_descriptions_are_searchable_in_chinese():
    index = _index()
    index.replace_server("bing-cn", [tool("bing-cn", "bing_search", "使用必应搜索指定的关键词，并返回搜索结果列表")])
    assert _names(index.search("必应搜索", limit=1)) == ["bing-cn__bing_search"]


def test_attach_follows_the_registry():
    registry = ToolRegistry()
    cat = catalog()
    registry.replace_server("orders", cat["orders"])
    index = SearchIndex()
    unsubscribe = index.attach(registry)
    assert _names(index.search("cancel order", limit=1)) == ["orders__cancel_order"]
    registry.replace_server("git", cat["git"])
    assert _names(index.search("git status", limit=1)) == ["git__git_status"]
    registry.remove_server("orders")
    assert index.search("cancel order").hits == []
    unsubscribe()
    registry.replace_server("weather", cat["weather"])
    assert index.servers() == ["git"]


def test_readers_see_the_old_or_the_new_index_during_updates():
    cat = catalog()
    index = _index(cat)
    old = {r.qualified_name for r in cat["git"]}
    new_recs = [tool("git", f"git_op{i}", f"Git operation number {i} on the repository.") for i in range(40)]
    new = {r.qualified_name for r in new_recs}
    seen: list[frozenset] = []
    stop = threading.Event()

    def reader():
        while not stop.is_set():
            seen.append(frozenset(h.tool.qualified_name for h in index.search("git repository", limit=100).hits))

    t = threading.Thread(target=reader)
    t.start()
    try:
        for _ in range(30):
            index.replace_server("git", new_recs)
            index.replace_server("git", cat["git"])
    finally:
        stop.set()
        t.join(timeout=10)
    git_views = {frozenset(n for n in s if n.startswith("git__")) for s in seen}
    assert git_views <= {frozenset(old), frozenset(new)}


def test_list_changed_reindexes_changed_tools_and_keeps_unchanged_ones():
    cat = catalog()
    index = _index(cat, expansion=None)  # plain BM25: "forecast" matches only the forecast tool
    changed = tool("weather", "air_quality", "Pollen count for a city.", {"city": {"type": "string"}}, read_only=True)
    index.replace_server("weather", [cat["weather"][0], cat["weather"][1], changed])
    assert _names(index.search("pollen", limit=3)) == ["weather__air_quality"]
    assert "weather__air_quality" not in _names(index.search("AQI index", limit=10))
    # Same definition, new metadata (risk override): the record is replaced, the document kept.
    writable = cat["weather"][0].model_copy(update={"risk": Risk.WRITE})
    index.replace_server("weather", [writable, cat["weather"][1], changed])
    assert index.search("forecast", max_risk=Risk.READ).hits == []
    assert _names(index.search("forecast", max_risk=Risk.WRITE)) == ["weather__getForecast"]
    rebuilt = _index(
        {"orders": cat["orders"], "git": cat["git"], "weather": [writable, cat["weather"][1], changed]}, expansion=None
    )
    for q in ["pollen city", "forecast days", "temperature wind"]:
        assert [(h.tool.qualified_name, h.score) for h in index.search(q, limit=10).hits] == [
            (h.tool.qualified_name, h.score) for h in rebuilt.search(q, limit=10).hits
        ]
