"""A tool of a server that never listed its tools (an unset variable in its entry, a missing
command, still connecting) answers ``upstream_unavailable`` with that server's reason, never
``unknown_tool`` — for callers whose grants cover the name; anyone else still gets ``unknown_tool``."""

from __future__ import annotations

import anyio
import pytest

from host.access import AccessControl, build_policy
from host.calls import ResultStatus
from host.runtime import HostRuntime
from host.upstream.executor import UnlistedOwner
from host.upstream.status import ConnectionState
from registry import AllowAll, Principal
from tests.upstream.support import config, hostile

pytestmark = pytest.mark.anyio

UNSET = "TOOLHOST_TEST_DOCS_TOKEN"
DOCS_REASON = (f"config: mcpServers.docs.env.TOKEN: environment variable {UNSET} is not set (set it, or write "
               f"${{{UNSET}:-default}})")


def _servers(tmp_path) -> dict:
    return {
        "docs": {**hostile(), "env": {"TOKEN": f"${{{UNSET}}}"}},          # unusable entry: never started
        "gone": {"command": str(tmp_path / "no-such-binary"), "args": []},  # starts, fails before listing
        "renamed": {**hostile(), "env": {"X": f"${{{UNSET}}}"}, "toolhost": {"prefix": "rn"}},
        "good": hostile(),
    }


async def test_names_of_servers_that_never_listed_answer_upstream_unavailable(tmp_path, monkeypatch) -> None:
    monkeypatch.delenv(UNSET, raising=False)
    cfg = config(_servers(tmp_path))
    assert (cfg.failed["docs"].prefix, cfg.failed["renamed"].prefix) == ("docs", "rn")
    with anyio.fail_after(60):
        async with HostRuntime(cfg, data_dir=tmp_path, policy=AllowAll()) as rt:
            gone = rt.manager.connections["gone"].status
            assert gone.state is ConnectionState.FAILED and gone.error
            assert rt.manager.unlisted_owner("docs__search") == UnlistedOwner("docs", DOCS_REASON)
            assert rt.manager.unlisted_owner("good__nope") is None  # good listed: the registry answers
            assert rt.manager.unlisted_owner("docs") is None and rt.manager.unlisted_owner("__x") is None

            docs = await rt.call("docs__search", {"q": "x"})
            assert (docs.status, docs.error.where, docs.error.details) == (
                ResultStatus.UPSTREAM_UNAVAILABLE, "lookup", {"server": "docs", "reason": DOCS_REASON, "sent": False})
            assert docs.error.message == (
                f"'docs__search' would be a tool of the server 'docs', which has not listed its tools: {DOCS_REASON}; "
                "the call was not sent. Fix that (`toolhost servers` shows each server's state) and retry once "
                "the server is connected")
            missing = await rt.call("gone__echo", {})
            assert (missing.status, missing.error.details["reason"]) == (ResultStatus.UPSTREAM_UNAVAILABLE, gone.error)
            renamed = await rt.call("rn__echo", {})  # the entry's own toolhost.prefix names its tools
            assert (renamed.status, renamed.error.details["server"]) == (ResultStatus.UPSTREAM_UNAVAILABLE, "renamed")

            for name in ("good__nope", "nobody__x", "renamed__echo"):
                assert (await rt.call(name, {})).status is ResultStatus.UNKNOWN_TOOL, name
            assert (await rt.call("good__echo", {"text": "hi"})).status is ResultStatus.OK


async def test_only_callers_whose_grants_cover_the_name_learn_the_server_is_down(tmp_path, monkeypatch) -> None:
    monkeypatch.delenv(UNSET, raising=False)
    access = AccessControl.open(tmp_path)
    try:
        for user in ("alice", "bob"):
            access.users.add(user)
        access.grants.add("alice", "server:docs")
        access.grants.add("bob", "good__*")
        cfg = config(_servers(tmp_path))
        with anyio.fail_after(60):
            async with HostRuntime(cfg, data_dir=tmp_path, policy=build_policy(access, enforce=True)) as rt:
                alice = await rt.call("docs__search", {}, access.principal_for_user("alice"))
                bob = await rt.call("docs__search", {}, access.principal_for_user("bob"))
                stranger = await rt.call("docs__search", {}, Principal("mallory"))
        assert (alice.status, alice.error.details["server"]) == (ResultStatus.UPSTREAM_UNAVAILABLE, "docs")
        assert bob.status is stranger.status is ResultStatus.UNKNOWN_TOOL
        assert bob.error.message == ("there is no tool named 'docs__search'. Did you mean: good__echo? Use an exact "
                                     "name from the tool list, or use tool_search to find a tool by what it does.")
    finally:
        access.close()
