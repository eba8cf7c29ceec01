"""The usage learner updates one tool's memory per learned call and reloads the whole memory
from the database at most once per ``reload_seconds`` (issue 13: no reload per call)."""

from __future__ import annotations

from types import SimpleNamespace

import anyio
import pytest

from host.store.db import Store
from host.store.usage import UsageMemory
from registry.search import SearchIndex, SearchTrail
from registry.store import ToolRegistry
from servers.gateway.search_usage import UsageLearner
from tests.search._tools import catalog


class _Clock:
    def __init__(self) -> None:
        self.now = 1000.0

    def __call__(self) -> float:
        return self.now


@pytest.mark.anyio
async def test_learned_calls_update_the_index_without_reloading_until_the_interval_passes(store_url):
    registry = ToolRegistry()
    for server, records in catalog().items():
        registry.replace_server(server, records)
    index = SearchIndex()
    index.attach(registry)
    runtime = SimpleNamespace(registry=registry, search_index=index)
    memory = UsageMemory(Store.open(store_url))
    clock = _Clock()
    learner = UsageLearner(runtime, memory, reload_seconds=60.0, clock=clock)  # type: ignore[arg-type]
    assert learner.reloads == 1
    commit = registry.snapshot().get("git__git_commit")

    async def learn(query: str, tool: str) -> None:
        trail = SearchTrail()
        trail.record(query, index.search(query))
        with anyio.fail_after(10):
            await learner.learned(trail, tool)

    await learn("git commit my progress", "git__git_commit")
    await learn("commit staged changes", "git__git_commit")
    await learn("commit staged changes", "git__git_commit")  # same pair again: stored once
    assert learner.reloads == 1
    assert index.memory() == {
        "git__git_commit": (commit.definition_hash, ("commit staged changes", "git commit my progress")),
    }
    # The database has the same pairs, ranked by use.
    assert memory.load() == {"git__git_commit": (commit.definition_hash, ["commit staged changes", "git commit my progress"])}
    clock.now += 60.0
    await learn("show the weather in Paris", "weather__getForecast")
    assert learner.reloads == 2
    forecast = registry.snapshot().get("weather__getForecast")
    assert index.memory() == {
        "git__git_commit": (commit.definition_hash, ("commit staged changes", "git commit my progress")),
        "weather__getForecast": (forecast.definition_hash, ("show the weather in Paris",)),
    }


def test_remember_replaces_one_tools_memory_and_scores_like_set_memory():
    a, b = SearchIndex(), SearchIndex()
    for ix in (a, b):
        ix.replace_servers(catalog())
    h = a._state.by_name["git__git_commit"].definition_hash
    a.set_memory({"git__git_commit": (h, ["jot down my progress"])})
    b.remember("git__git_commit", h, ["jot down my progress"])
    ra, rb = a.search("jot down my progress"), b.search("jot down my progress")
    assert [x.tool.qualified_name for x in ra.hits] == [x.tool.qualified_name for x in rb.hits] == ["git__git_commit"]
    assert ra.hits[0].score == pytest.approx(rb.hits[0].score)
    b.remember("git__git_commit", h, [])
    assert b.memory() == {}
    assert b.search("jot down my progress").hits == []
