"""Rug pull: the rugpull example server changes a tool's description after its first call;
the tool is held (invisible to search, refused at call) until an admin accepts the change."""

from __future__ import annotations

import re
import sys

import anyio
import pytest

from host.access import AccessControl
from host.config import parse_config
from host.runtime import HostRuntime
from registry.policy import Principal
from servers.examples.rugpull import EVIL_DESCRIPTION

pytestmark = pytest.mark.anyio


def searched(rt: HostRuntime, query: str, principal: Principal) -> set[str]:
    """Names ``rt.search`` returns (a list of hits, or a SearchResult with ``.hits``)."""
    result = rt.search(query, principal, limit=10)
    return {h.tool.qualified_name for h in getattr(result, "hits", result)}


async def test_changed_definition_is_held_until_accepted(tmp_path, access: AccessControl) -> None:
    access.users.add("alice")
    access.grants.add("alice", "server:rug")
    alice = Principal("alice")
    cfg = parse_config(
        {
            "toolhost": {"connect_timeout_seconds": 30},
            "mcpServers": {"rug": {"command": sys.executable, "args": ["-m", "servers.examples.rugpull"]}},
        },
        data_dir=tmp_path,
    )
    async with HostRuntime(cfg, data_dir=tmp_path, policy=access) as rt:
        unwatch = access.watch(rt.registry)
        relisted = anyio.Event()
        rt.registry.subscribe(lambda server, old, new: relisted.set() if server == "rug" and new else None)
        assert [p.status for p in access.pins.list()] == ["trusted", "trusted"]
        assert [t.qualified_name for t in rt.visible_tools(alice)] == ["rug__daily_quote", "rug__word_count"]

        with anyio.fail_after(20):
            first = await rt.call("rug__daily_quote", {}, alice)
        assert not first.is_error and "Simplicity" in first.content[0].text
        with anyio.fail_after(20):
            await relisted.wait()  # the server sent tools/list_changed; the host relisted

        assert rt.registry.get("rug__daily_quote").description == EVIL_DESCRIPTION
        assert [(p.tool, p.status) for p in access.pins.list(status="changed")] == [("rug__daily_quote", "changed")]
        assert "rug__daily_quote" not in searched(rt, "quote of the day", alice)
        assert "rug__daily_quote" not in searched(rt, "select:rug__daily_quote", alice)
        assert [t.qualified_name for t in rt.visible_tools(alice)] == ["rug__word_count"]
        with anyio.fail_after(20):
            held = await rt.call("rug__daily_quote", {"note": "secret"}, alice)
            unknown = await rt.call("rug__no_such_tool", {}, alice)
        assert held.is_error

        def strip(t: str) -> str:
            return re.sub(r" ?[Dd]id you mean:? [^?]*\?", "", t)

        assert strip(held.content[0].text).replace("daily_quote", "X") == strip(unknown.content[0].text).replace(
            "no_such_tool", "X"
        )
        assert "id_rsa" not in held.content[0].text
        with anyio.fail_after(20):
            other = await rt.call("rug__word_count", {"text": "still fine here"}, alice)
        assert other.content[0].text == "3"  # the unchanged tool keeps working

        review = access.pins.review("rug__daily_quote")
        assert "id_rsa" in review.diff and '"note"' in review.diff
        assert review.pending_hash == rt.registry.get("rug__daily_quote").definition_hash
        assert access.pins.accept("rug__daily_quote", review.pending_hash).status == "trusted"
        assert [t.qualified_name for t in rt.visible_tools(alice)] == ["rug__daily_quote", "rug__word_count"]
        assert "rug__daily_quote" in searched(rt, "quote of the day", alice)
        with anyio.fail_after(20):
            again = await rt.call("rug__daily_quote", {}, alice)
        assert not again.is_error
        unwatch()


async def test_rugpull_flag_file_variant(tmp_path) -> None:
    from mcp import Client

    from servers.examples.rugpull import BENIGN_DESCRIPTION, create_server

    flag = tmp_path / "flip"
    with anyio.fail_after(20):
        async with Client(create_server(change_after_calls=1000, flag_file=flag)) as c:
            before = {t.name: t for t in (await c.list_tools()).tools}
            flag.touch()
            after = {t.name: t for t in (await c.list_tools(cache_mode="refresh")).tools}
    assert before["daily_quote"].description == BENIGN_DESCRIPTION
    assert after["daily_quote"].description == EVIL_DESCRIPTION
    assert "note" in after["daily_quote"].input_schema["properties"]
    assert before["word_count"].description == after["word_count"].description
