"""The usage memory repository (host.store.usage), on SQLite and PostgreSQL, and ``toolhost usage``."""

from __future__ import annotations

from typer.testing import CliRunner

from host.store.db import Store
from host.store.usage import HALF_LIFE_SECONDS, MAX_PER_TOOL, UsageMemory
from servers.cli.app import app


def _mem(url_or_dir) -> UsageMemory:
    if isinstance(url_or_dir, str):
        return UsageMemory(Store.open(url_or_dir))
    return UsageMemory(Store.open(data_dir=url_or_dir))


def test_record_is_redacted_deduplicated_and_ranked_by_use(store_url):
    m = _mem(store_url)
    assert m.record("email bob  the report, password=hunter2", "mail__send", "h1", now=1000.0)
    assert m.record("email bob the report, password=hunter2", "mail__send", "h1", now=1001.0)  # same pair
    assert m.record("send a mail", "mail__send", "h1", now=1002.0)
    assert not m.record("   ", "mail__send", "h1")
    assert m.load(now=1003.0) == {
        "mail__send": ("h1", ["email bob the report, password=[REDACTED]", "send a mail"]),
    }
    st = m.stats()
    assert (st.pairs, st.tools, st.oldest) == (2, 1, 1001.0)


def test_long_queries_are_cut_and_each_tool_keeps_at_most_32(store_url):
    m = _mem(store_url)
    m.record("x" * 500, "t__a", "h", now=1.0)
    for i in range(MAX_PER_TOOL + 3):
        m.record(f"query number {i}", "t__b", "h", now=10.0 + i)
    loaded = m.load(now=100.0)
    assert loaded["t__a"][1] == ["x" * 199 + "…"]  # cut like an audit value
    assert len(loaded["t__b"][1]) == MAX_PER_TOOL and "query number 0" not in loaded["t__b"][1]


def test_memory_decays_and_is_dropped_when_the_definition_changes(store_url):
    m = _mem(store_url)
    m.record("old habit", "t__a", "h1", now=0.0)
    m.record("fresh", "t__b", "h1", now=10 * HALF_LIFE_SECONDS)
    # 10 half-lives later the old pair weighs 1/1024 < 0.05: forgotten.
    assert m.load(now=10 * HALF_LIFE_SECONDS) == {"t__b": ("h1", ["fresh"])}
    assert m.load({"t__b": "h2"}, now=10 * HALF_LIFE_SECONDS) == {}  # t__b changed definition
    assert m.stats().pairs == 0


def test_usage_cli_shows_counts_only_and_clears(tmp_path):
    m = _mem(tmp_path)
    m.record("secret project falcon", "t__a", "h")
    m.record("another", "t__b", "h")
    runner = CliRunner()
    out = runner.invoke(app, ["usage", "stats", "--data-dir", str(tmp_path)])
    assert out.exit_code == 0 and out.output.startswith("2 remembered queries for 2 tools; oldest use ")
    assert "falcon" not in out.output
    out = runner.invoke(app, ["usage", "clear", "--tool", "t__a", "--data-dir", str(tmp_path)])
    assert (out.exit_code, out.output) == (0, "forgot 1 remembered queries of t__a\n")
    out = runner.invoke(app, ["usage", "clear", "--data-dir", str(tmp_path)])
    assert (out.exit_code, out.output) == (0, "forgot 1 remembered queries\n")
    assert m.stats().pairs == 0
