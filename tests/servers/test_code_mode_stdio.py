"""Code mode through a real ``toolhost serve --stdio --code-mode`` started by the SDK's stdio client,
in both protocol eras (2025-11-25 handshake, 2026-07-28): a model finds tools and runs one script
calling several of them (every inner call audited); a script naming a destructive tool asks one
approval for its manifest, approved with ``toolhost approvals approve``; a hostile script (endless
loop, memory bomb) ends at its limit while another request on the same connection is answered first.
The upstream is the bundled orders example."""

from __future__ import annotations

import json
from collections.abc import AsyncIterator
from contextlib import asynccontextmanager
from pathlib import Path
from types import SimpleNamespace
from typing import Any

import anyio
import pytest
from mcp import Client, StdioServerParameters
from mcp.client.stdio import stdio_client
from mcp.types import ElicitResult

from host.access import AccessControl
from tests.servers.test_access_matrix import CLIENT_MODE, LEGACY, MODERN, TOOLHOST, _env
from tests.servers.test_code_mode_serve import (
    ERAS,
    JOIN_RESULT,
    JOIN_SCRIPT,
    STEP_SECONDS,
    _audit,
    _error,
    _script_rows,
    _text,
    code_mode_home,
)

pytestmark = pytest.mark.anyio


def _home(tmp_path: Path, *, user: str | None = None, self_approval: bool = False) -> tuple[Path, list[str]]:
    home = tmp_path / "home"
    data = code_mode_home(home)
    args = ["serve", "--stdio", "--code-mode", "--config", str(home / "config.json"), "--data-dir", str(data)]
    if user is not None:
        access = AccessControl.open(data)
        try:
            access.users.add(user)
            access.grants.add(user, "server:orders")
            if self_approval:
                access.grants.set_self_approval(user, "server:orders")
        finally:
            access.close()
        args += ["--user", user]
    return home, args


@asynccontextmanager
async def stdio_serve(home: Path, args: list[str], era: str, **client: Any) -> AsyncIterator[Client]:
    """An SDK client owning a ``toolhost serve --stdio`` (closing its stdin ends the serve)."""
    params = StdioServerParameters(command=TOOLHOST, args=args, env=_env())
    with (home / "serve.err").open("w") as errlog:
        async with Client(stdio_client(params, errlog=errlog), mode=CLIENT_MODE[era], **client) as c:
            assert c.protocol_version == era
            yield c


@pytest.mark.parametrize("era", ERAS)
async def test_over_stdio_a_model_finds_tools_and_one_script_calls_several(tmp_path, era):
    home, args = _home(tmp_path)
    with anyio.fail_after(STEP_SECONDS * 3):
        async with stdio_serve(home, args, era) as c:
            listed = [t.name for t in (await c.list_tools()).tools]
            found = await c.call_tool("tool_search", {"query": "list orders status", "format": "python", "limit": 2})
            ran = await c.call_tool("execute", {"code": JOIN_SCRIPT})
    assert listed == ["tool_search", "call_tool", "execute"]
    assert "async def orders__list_orders(*, status: Literal[" in _text(found)
    assert ran.is_error is not True, _text(ran)
    out = ran.structured_content
    assert (out["result"], out["calls"]) == (JOIN_RESULT, 3)
    own, inner = _script_rows(SimpleNamespace(home=home), out["script_id"])
    assert [(r.tool, r.status) for r in inner] == [
        ("orders__list_orders", "ok"), ("orders__get_order", "ok"), ("orders__get_order", "ok")]
    assert (own.tool, own.status, own.user) == ("execute", "ok", "local")


@pytest.mark.parametrize("era", ERAS)
async def test_over_stdio_a_destructive_manifest_asks_one_approval_then_runs(tmp_path, era):
    home, args = _home(tmp_path, user="alice")
    script = ("r = []\nfor oid in ['A1002', 'A1005']:\n"
              "    r.append((await orders__cancel_order(order_id=oid))['status'])\nr\n")
    with anyio.fail_after(STEP_SECONDS * 4):
        async with stdio_serve(home, args, era) as c:
            asked = await c.call_tool("execute", {"code": script})
            err = _error(asked)
            approved = await anyio.run_process([TOOLHOST, "approvals", "approve", err["approval_id"], "--data-dir",
                                                str(home / "data")], check=False, env=_env())
            assert approved.returncode == 0, approved.stderr
            ran = await c.call_tool("execute", {"code": script})
    assert (err["code"], err["where"], err["details"]["needs_approval"]) == (
        "approval_required", "authorize", ["orders__cancel_order"])
    assert ran.structured_content["result"] == ["cancelled", "cancelled"], _text(ran)
    own, inner = _script_rows(SimpleNamespace(home=home), ran.structured_content["script_id"])
    assert (own.user, own.approval_id, own.status) == ("alice", err["approval_id"], "ok")
    assert [(r.tool, r.status, r.approval_id) for r in inner] == [
        ("orders__cancel_order", "ok", err["approval_id"])] * 2


@pytest.mark.parametrize("era", ERAS)
@pytest.mark.parametrize(("kind", "code"), [("cpu_time", "n = 0\nwhile True:\n    n += 1"),
                                            ("memory", "x = 'a' * 1024\nwhile True:\n    x = x + x")])
async def test_over_stdio_a_hostile_script_ends_at_its_limit_while_another_request_is_answered(
        tmp_path, era, kind, code):
    home, args = _home(tmp_path)
    done: list[str] = []
    results: dict[str, object] = {}
    with anyio.fail_after(STEP_SECONDS * 3):
        async with stdio_serve(home, args, era) as c:
            hostile_started = anyio.Event()

            async def hostile() -> None:
                hostile_started.set()
                results["hostile"] = await c.call_tool("execute", {"code": code})
                done.append("hostile")

            async with anyio.create_task_group() as tg:
                tg.start_soon(hostile)
                await hostile_started.wait()
                results["other"] = await c.call_tool("call_tool", {"name": "orders__get_order",
                                                                   "arguments": {"order_id": "A1004"}})
                done.append("other")
            after = await c.call_tool("execute", {"code": JOIN_SCRIPT})
    err = _error(results["hostile"])
    assert (err["code"], err["where"], err["details"]["limit"]) == ("tool_error", "code_mode.limit", kind), err
    assert results["other"].structured_content["status"] == "delivered"
    if kind == "cpu_time":  # 2 s of CPU: the other call is answered long before
        assert done == ["other", "hostile"]
    assert after.structured_content["result"] == JOIN_RESULT


def _cancel_script(order_id: str) -> str:
    return f"(await orders__cancel_order(order_id={order_id!r}))['status']\n"


@pytest.mark.parametrize("era", ERAS)
async def test_over_stdio_a_script_is_self_approved_by_elicitation_like_a_direct_call(tmp_path, era):
    """Where the grant enables self-approval, the caller's client is asked once for the whole script
    (handshake era); on 2026-07-28 stdio there is no elicitation back channel, for a direct call as
    for a script: both stay pending."""
    home, args = _home(tmp_path, user="alice", self_approval=True)
    asked: list[str] = []

    async def on_elicit(context: Any, params: Any) -> ElicitResult:
        asked.append(params.message)
        return ElicitResult(action="accept", content={"approve": True})

    code = _cancel_script("A1005")
    with anyio.fail_after(STEP_SECONDS * 3):
        async with stdio_serve(home, args, era, elicitation_callback=on_elicit) as c:
            direct = await c.call_tool("call_tool", {"name": "orders__cancel_order",
                                                     "arguments": {"order_id": "A1002"}})
            ran = await c.call_tool("execute", {"code": code})
    if era == MODERN:
        assert [_error(r)["code"] for r in (direct, ran)] == ["approval_required"] * 2
        assert asked == []
        return
    assert (direct.structured_content["status"], ran.structured_content["result"]) == ("cancelled", "cancelled")
    own, [inner] = _script_rows(SimpleNamespace(home=home), ran.structured_content["script_id"])
    manifest = json.loads(own.arguments)["manifest"]
    assert list(manifest) == ["orders__cancel_order"]
    assert asked[1] == (
        "Allow execute (destructive) to run once with arguments "
        + json.dumps({"code": code, "manifest": manifest}, separators=(",", ":"))
        + f"? Approval id {own.approval_id}."
    )
    assert (own.approver, inner.approval_id, inner.status) == ("alice (self-approval)", own.approval_id, "ok")
    decided = [r for r in _audit_rows(home) if r.action == "approval" and r.approval_id == own.approval_id]
    assert [(r.tool, r.detail) for r in decided] == [("execute", "self-elicitation: approved by alice (self-approval)")]


async def test_over_stdio_without_self_approval_the_caller_is_not_asked_and_a_decline_rejects(tmp_path):
    home, args = _home(tmp_path, user="alice")
    asked: list[str] = []

    async def on_elicit(context: Any, params: Any) -> ElicitResult:
        asked.append(params.message)
        return ElicitResult(action="decline")

    with anyio.fail_after(STEP_SECONDS * 3):
        async with stdio_serve(home, args, LEGACY, elicitation_callback=on_elicit) as c:
            pending = await c.call_tool("execute", {"code": _cancel_script("A1005")})
            access = AccessControl.open(home / "data")
            try:
                access.grants.set_self_approval("alice", "server:orders")
            finally:
                access.close()
            declined = await c.call_tool("execute", {"code": _cancel_script("A1002")})
    assert _error(pending)["code"] == "approval_required" and "is pending for the whole script" in _text(pending)
    assert len(asked) == 1 and asked[0].startswith("Allow execute (destructive) to run once")
    assert (_error(declined)["code"], _error(declined)["where"]) == ("permission_denied", "authorize")
    assert "the user declined the script" in _text(declined), _text(declined)


def _audit_rows(home: Path) -> list[Any]:
    return _audit(SimpleNamespace(home=home))
