"""Through a running serve: the local admin asking for a held (changed) definition is told it is held
and how to review it, while a user with a grant still gets ``unknown_tool``; the console and the admin
API do not show it as available; a tool of a server that never started answers
``upstream_unavailable`` with the server's reason, for the local admin and for a user whose grants
cover it."""

from __future__ import annotations

import json

import anyio

from host.access import AccessControl
from tests.admin.support import Serve, config, mcp_client, people
from tests.admin.test_cli_via_serve import cli
from tests.upstream.support import hostile

UNSET = "TOOLHOST_TEST_DOCS_TOKEN"


async def _call(url: str, key: str, name: str) -> dict:
    with anyio.fail_after(60):
        async with mcp_client(url, key) as c:
            r = await c.call_tool("call_tool", {"name": name, "arguments": {}})
            return (r.meta or {}).get("toolhost/error", {}) | {"is_error": r.is_error}


def test_held_definition_and_never_started_server_answer_with_the_reason(tmp_path, monkeypatch) -> None:
    monkeypatch.delenv(UNSET, raising=False)
    data = tmp_path / "data"
    data.mkdir()
    cfg = config(tmp_path, docs={**hostile(), "env": {"TOKEN": f"${{{UNSET}}}"}})
    keys = people(data)
    access = AccessControl.open(data)
    access.grants.add("alice", "server:docs")  # alice may also use the docs server
    access.close()
    reason = (f"config: mcpServers.docs.env.TOKEN: environment variable {UNSET} is not set (set it, or write "
              f"${{{UNSET}:-default}})")
    with Serve(cfg, data) as serve:
        # a server that never started: upstream_unavailable with its reason, for the local admin ...
        local = cli(data, "call", "docs__search", "{}", "--json")
        result = json.loads(local.stdout)
        assert (local.returncode, result["status"], result["error"]["details"]) == (
            1, "upstream_unavailable", {"server": "docs", "reason": reason, "sent": False})
        # ... and for a user whose grants cover it; one without (root has no grant) gets unknown_tool
        err = anyio.run(_call, serve.url, keys["alice"], "docs__search")
        assert (err["is_error"], err["code"], err["details"]["server"]) == (True, "upstream_unavailable", "docs")
        assert anyio.run(_call, serve.url, keys["root"], "docs__search")["code"] == "unknown_tool"

        # the rug pull: the first call makes the server change its definition
        start = len(serve.lines)
        assert anyio.run(_call, serve.url, keys["alice"], "rug__daily_quote")["is_error"] is False
        serve.wait_for(r"tools\.held.*rug__daily_quote", 60, start)
        assert anyio.run(_call, serve.url, keys["alice"], "rug__daily_quote")["code"] == "unknown_tool"
        held = cli(data, "call", "rug__daily_quote", "{}", "--json")
        result = json.loads(held.stdout)
        assert (held.returncode, result["status"], result["error"]["where"], result["error"]["details"]) == (
            1, "permission_denied", "authorize", {"rule": "pin:changed"})
        assert result["error"]["message"] == (
            "definition of rug__daily_quote changed since it was approved; an admin must review it "
            "(`toolhost pins diff rug__daily_quote`) and accept it (`toolhost pins accept rug__daily_quote "
            "--hash HASH`)")

        with serve.api() as api:
            tools = {t["name"]: t for t in api.get("/tools").json()["tools"]}
        assert (tools["rug__daily_quote"]["available"], tools["rug__daily_quote"]["unavailable"]) == (
            False, ("definition held: review `toolhost pins diff rug__daily_quote`, then "
                    "`toolhost pins accept rug__daily_quote --hash HASH`"))
        assert (tools["rug__word_count"]["available"], tools["rug__word_count"]["unavailable"]) == (True, None)
