"""Code mode through a real ``toolhost serve --code-mode`` over HTTP, with SDK clients, per access mode.

The upstream is the bundled orders example (``python -m servers.examples.orders``). A scripted model
finds tools (``tool_search`` with ``format="python"``: typed stubs), runs one ``execute`` script that
calls several tools and gets one result; every inner call has its audit row naming the script id,
sha256, parent call and step, and the script has its own row. Access modes:

* ``open``: no users (``--auth auto``): every caller sees every tool;
* ``alice``: API key of a user whose grant ``server:orders`` covers the orders tools (destructive
  ``cancel_order`` needs approval, the default for grants);
* ``dave``: like alice, with self-approval enabled on his grant (his client is asked by elicitation);
* ``bob``: API key of a user granted only ``orders__get_order``; ``carol``: no grant at all: the
  hidden tools inside a script answer exactly like names that do not exist;
* ``off``: ``--auth off`` (no store: no audit, no approvals);
* the local admin: the admin API's call endpoint with the data folder's loopback token.

Both protocol eras (2025-11-25 handshake, 2026-07-28). A hostile script (memory bomb, endless loop)
ends with ``limit_exceeded`` while the same serve keeps answering another client.
"""

from __future__ import annotations

import hashlib
import json
import sys
from collections.abc import AsyncIterator
from contextlib import asynccontextmanager
from pathlib import Path
from typing import Any

import anyio
import httpx2
import pytest
from mcp import Client
from mcp.client.streamable_http import streamable_http_client
from mcp.types import ElicitResult

from host.access import AccessControl
from host.code_mode import parse_inner_detail
from host.store.audit_chain import arguments_digest
from tests.servers.serves import STARTUP_SECONDS, running
from tests.servers.test_access_matrix import CLIENT_MODE, LEGACY, MODERN, TOOLHOST, Gateway, _env

pytestmark = pytest.mark.anyio

ERAS = (LEGACY, MODERN)
STEP_SECONDS = 40
LIMITS = {"cpu_seconds": 2, "wall_clock_seconds": 15, "max_memory_bytes": 32 * 1024 * 1024}

JOIN_SCRIPT = (
    "import asyncio\n"
    "mine = await orders__list_orders(customer='ada@example.com')\n"
    "details = await asyncio.gather(*[orders__get_order(order_id=o['order_id']) for o in mine['orders']])\n"
    "{'orders': [d['order_id'] for d in details], 'total_cents': sum(d['total_cents'] for d in details)}\n"
)
JOIN_RESULT = {"orders": ["A1004", "A1001"], "total_cents": 11600}  # the same whatever was cancelled


@pytest.fixture(scope="module")
def anyio_backend() -> str:
    return "asyncio"


def code_mode_home(home: Path) -> Path:
    """``home/config.json`` (code mode with :data:`LIMITS`, two workers, the orders example) and an
    empty ``home/data``; returns the data folder."""
    data = home / "data"
    data.mkdir(parents=True)
    config = {
        "toolhost": {"connect_timeout_seconds": 30, "code_mode": {"pool": {"max_workers": 2}, "limits": LIMITS}},
        "mcpServers": {"orders": {"command": sys.executable, "args": ["-m", "servers.examples.orders"]}},
    }
    (home / "config.json").write_text(json.dumps(config))
    return data


def _gateway(root: Path, mode: str) -> Gateway:
    home = root / mode
    data = code_mode_home(home)
    keys: dict[str, str] = {}
    if mode == "keys":
        access = AccessControl.open(data)
        try:
            for user in ("alice", "bob", "carol", "dave"):
                access.users.add(user)
            access.grants.add("alice", "server:orders")
            access.grants.add("bob", "orders__get_order")
            access.grants.add("dave", "server:orders")
            access.grants.set_self_approval("dave", "server:orders")
            keys = {user: access.keys.create(user)[1] for user in ("alice", "bob", "carol", "dave")}
        finally:
            access.close()
    args = ["serve", "--config", str(home / "config.json"), "--data-dir", str(data), "--port", "0", "--code-mode"]
    if mode == "off":
        args += ["--auth", "off"]
    return Gateway((mode,), home, args, keys=keys)


@pytest.fixture(scope="module")
async def serves(tmp_path_factory: pytest.TempPathFactory) -> AsyncIterator[dict[str, Gateway]]:
    """One serve per access mode (open, keys, off), started at once; all stopped at the end."""
    root = tmp_path_factory.mktemp("codemode")
    async with running({mode: _gateway(root, mode) for mode in ("open", "keys", "off")}) as gws:
        yield gws


def _serve_of(caller: str) -> str:
    return "keys" if caller in ("alice", "bob", "carol", "dave") else caller


@asynccontextmanager
async def client(serves: dict[str, Gateway], caller: str, era: str, **options: Any) -> AsyncIterator[Client]:
    gw = serves[_serve_of(caller)]
    token = gw.keys.get(caller)
    headers = {"Authorization": f"Bearer {token}"} if token else {}
    async with (
        httpx2.AsyncClient(headers=headers, timeout=STEP_SECONDS) as http,
        Client(streamable_http_client(gw.url, http_client=http), mode=CLIENT_MODE[era], **options) as c,
    ):
        assert c.protocol_version == era
        yield c


def _text(result: Any) -> str:
    return "".join(b.text for b in result.content if getattr(b, "text", None))


def _error(result: Any) -> dict[str, Any]:
    assert result.is_error is True, _text(result)
    return (result.meta or {})["toolhost/error"]


def _audit(gw: Gateway) -> list[Any]:
    access = AccessControl.open(gw.home / "data")
    try:
        rows = access.audit_log.query(limit=1000)
        count, broken = access.audit_log.verify()
        assert broken is None and count >= len(rows)
        return list(reversed(rows))
    finally:
        access.close()


def _script_rows(gw: Gateway, script_id: str) -> tuple[Any, list[Any]]:
    """The script's own row and its inner calls' rows (step order)."""
    rows = [(r, parse_inner_detail(r.detail)) for r in _audit(gw)]
    mine = [(r, d) for r, d in rows if d is not None and d["script_id"] == script_id]
    own = [r for r, d in mine if "step" not in d]
    inner = sorted(((d["step"], r) for r, d in mine if "step" in d), key=lambda p: p[0])
    assert len(own) == 1, [r.detail for r, _ in mine]
    return own[0], [r for _, r in inner]


# -- a model finds tools, writes one script, gets one result ------------------------------------------
@pytest.mark.parametrize("era", ERAS)
@pytest.mark.parametrize("caller", ["open", "alice", "off"])
async def test_a_scripted_model_finds_tools_runs_one_script_and_every_inner_call_is_audited(serves, caller, era):
    with anyio.fail_after(STEP_SECONDS * 2):
        async with client(serves, caller, era) as c:
            listed = [t.name for t in (await c.list_tools()).tools]
            assert listed == ["tool_search", "call_tool", "execute"]
            found = await c.call_tool("tool_search", {"query": "list orders status", "format": "python", "limit": 2})
            stubs = _text(found)
            assert stubs.startswith("from typing import Any, Literal\n")
            assert "async def orders__list_orders(*, status: Literal[" in stubs
            assert "Risk: read. Tool: orders__list_orders." in stubs
            assert found.structured_content["stubs"] == stubs

            ran = await c.call_tool("execute", {"code": JOIN_SCRIPT})
    assert ran.is_error is not True, _text(ran)
    out = ran.structured_content
    assert (out["result"], out["calls"], out["printed"]) == (JOIN_RESULT, 3, "")
    assert json.loads(_text(ran))["result"] == JOIN_RESULT
    if caller == "off":  # --auth off keeps no store, so no audit
        return
    own, inner = _script_rows(serves[_serve_of(caller)], out["script_id"])
    sha = hashlib.sha256(JOIN_SCRIPT.encode()).hexdigest()
    assert [(r.tool, r.status, r.action) for r in inner] == [
        ("orders__list_orders", "ok", "call"), ("orders__get_order", "ok", "call"), ("orders__get_order", "ok", "call")]
    details = [parse_inner_detail(r.detail) for r in inner]
    assert [d["step"] for d in details] == [0, 1, 2]
    assert {d["sha256"] for d in details} == {sha}
    assert {d["parent"] for d in details} == {parse_inner_detail(own.detail)["parent"]}
    assert json.loads(inner[0].arguments) == {"customer": "ada@example.com"}
    assert [r.user for r in inner] == [own.user] * 3
    assert (own.tool, own.status, own.decision, own.rule) == ("execute", "ok", "allow", "code_mode")
    assert own.detail.endswith("tools:2 calls:3 (ok=3) outcome:ok")
    manifest = json.loads(own.arguments)["manifest"]
    assert sorted(manifest) == ["orders__get_order", "orders__list_orders"]
    assert own.arguments_digest == arguments_digest({"code": JOIN_SCRIPT, "manifest": manifest})
    assert own.id > inner[-1].id  # the script's row is written once it ended
    [script_event] = await _script_events(serves[_serve_of(caller)].home / "data" / "events", out["script_id"])
    assert (script_event["script_sha256"], script_event["status"], script_event["calls"]) == (sha, "ok", 3)
    assert script_event["manifest"] == ["orders__get_order", "orders__list_orders"]


# -- hidden tools inside a script answer like unknown ones ---------------------------------------------
HIDDEN_CASES = [
    ("bob", "orders__list_orders", "r = await {name}()\nr"),
    ("bob", "orders__cancel_order", "r = await call_tool('{name}', {{'order_id': 'A1001'}})\nr"),
    ("carol", "orders__get_order", "r = await {name}(order_id='A1001')\nr"),
    ("carol", "orders__list_orders", "try:\n    await {name}()\nexcept NameError as e:\n    r = str(e)\nr"),
]


@pytest.mark.parametrize("era", ERAS)
@pytest.mark.parametrize(("caller", "hidden", "template"), HIDDEN_CASES, ids=[f"{c}-{h}" for c, h, _ in HIDDEN_CASES])
async def test_a_hidden_tool_inside_a_script_answers_exactly_like_an_unknown_name(
        serves, caller, hidden, template, era):
    unknown = hidden[:-4] + "zzzz"  # the same length: the traceback's carets line up alike
    with anyio.fail_after(STEP_SECONDS * 2):
        async with client(serves, caller, era) as c:
            a = await c.call_tool("execute", {"code": template.format(name=hidden)})
            b = await c.call_tool("execute", {"code": template.format(name=unknown)})
            found = await c.call_tool("tool_search", {"query": f"select:{hidden}", "format": "python"})
    assert _text(a).replace(hidden, "<name>") == _text(b).replace(unknown, "<name>")
    assert a.is_error == b.is_error
    assert "not defined" in _text(a) or "not in this script's capability manifest" in _text(a)
    if a.is_error:
        ea, eb = _error(a), _error(b)
        assert (ea["code"], ea["where"]) == (eb["code"], eb["where"]) == ("tool_error", "code_mode.sandbox")
    assert found.structured_content["tools"] == [] and "async def" not in _text(found)
    own, inner = _script_rows(serves["keys"], (a.structured_content or {}).get("script_id")
                              or _error(a)["details"]["script_id"])
    # nothing reached the pipeline (the name was no tool for this caller); the refusal is its own row
    assert [(r.user, r.tool, r.status) for r in inner] == [(caller, hidden, "not_in_manifest")]
    assert json.loads(own.arguments)["manifest"] == {}


@pytest.mark.parametrize("era", ERAS)
async def test_bob_runs_the_one_tool_his_grant_allows(serves, era):
    with anyio.fail_after(STEP_SECONDS):
        async with client(serves, "bob", era) as c:
            ran = await c.call_tool("execute", {"code": "o = await orders__get_order(order_id='a1004')\no['status']"})
    assert ran.structured_content["result"] == "delivered", _text(ran)


# -- approvals: one for the whole manifest -------------------------------------------------------------
@pytest.mark.parametrize(("era", "order_ids"), [(LEGACY, ("A1001", "A1002")), (MODERN, ("A1005", "A1003"))])
async def test_a_destructive_tool_in_the_manifest_needs_one_approval_for_the_whole_script(serves, era, order_ids):
    gw = serves["keys"]
    first, second = order_ids
    script = (
        "out = []\n"
        f"for oid in {list(order_ids)!r}:\n"
        "    try:\n"
        "        out.append(await orders__cancel_order(order_id=oid, reason='duplicate'))\n"
        "    except RuntimeError as e:\n"
        "        out.append(tool_error(e)['status'])\n"
        "listed = await orders__list_orders(status='cancelled')\n"
        "[out, sorted(o['order_id'] for o in listed['orders'])]\n"
    )
    with anyio.fail_after(STEP_SECONDS * 3):
        async with client(serves, "alice", era) as c:
            asked = await c.call_tool("execute", {"code": script})
            err = _error(asked)
            assert (err["code"], err["where"]) == ("approval_required", "authorize")
            assert err["details"]["needs_approval"] == ["orders__cancel_order"]
            approval_id = err["approval_id"]
            assert "pending for the whole script" in _text(asked)
            again = await c.call_tool("execute", {"code": script})  # asking again reuses the pending approval
            assert _error(again)["approval_id"] == approval_id

            listed = await anyio.run_process([TOOLHOST, "approvals", "list", "--data-dir", str(gw.home / "data"),
                                              "--json"], check=False, env=_env())
            assert listed.returncode == 0, listed.stderr
            pending = [a for a in json.loads(listed.stdout) if a["id"] == approval_id]
            assert [(a["tool"], a["user"], a["status"]) for a in pending] == [("execute", "alice", "pending")]
            assert json.loads(pending[0]["arguments_redacted"])["code"] == script
            approved = await anyio.run_process([TOOLHOST, "approvals", "approve", approval_id, "--data-dir",
                                                str(gw.home / "data")], check=False, env=_env())
            assert approved.returncode == 0, approved.stderr

            changed = await c.call_tool("execute", {"code": script + "# changed after approval\n"})
            assert _error(changed)["approval_id"] not in (None, approval_id)  # another script, another approval
            ran = await c.call_tool("execute", {"code": script})
            assert ran.is_error is not True, _text(ran)
            once_more = await c.call_tool("execute", {"code": script})  # an approval runs the script once
    outcome, cancelled = ran.structured_content["result"]
    assert [o if isinstance(o, str) else (o["order_id"], o["status"]) for o in outcome] == [
        (first, "cancelled"), "tool_error" if second == "A1003" else (second, "cancelled")]
    assert first in cancelled
    assert _error(once_more)["approval_id"] not in (None, approval_id)
    own, inner = _script_rows(gw, ran.structured_content["script_id"])
    assert (own.decision, own.rule, own.approval_id, own.status) == (
        "approval", "code_mode:orders__cancel_order", approval_id, "ok")
    assert own.approver
    cancels = [r for r in inner if r.tool == "orders__cancel_order"]
    assert len(cancels) == 2
    assert {(r.decision, r.approval_id, r.approver) for r in cancels} == {("approval", approval_id, own.approver)}
    reads = [r for r in inner if r.tool == "orders__list_orders"]
    assert [(r.decision, r.approval_id) for r in reads] == [("allow", None)]


@pytest.mark.parametrize("era", ERAS)
@pytest.mark.parametrize("caller", ["open", "off"])
async def test_without_users_a_destructive_manifest_runs_at_once(serves, caller, era):
    """Open access and ``--auth off`` have no grants and no approvals: every tool, as for a direct call."""
    order_id = "A1002" if era == LEGACY else "A1005"
    script = f"(await orders__cancel_order(order_id={order_id!r}, reason='duplicate'))['status']\n"
    with anyio.fail_after(STEP_SECONDS):
        async with client(serves, caller, era) as c:
            ran = await c.call_tool("execute", {"code": script})
    assert ran.structured_content["result"] == "cancelled", _text(ran)
    if caller == "off":
        return
    own, inner = _script_rows(serves["open"], ran.structured_content["script_id"])
    assert (own.decision, own.approval_id, own.status) == ("allow", None, "ok")
    assert [(r.tool, r.decision, r.approval_id, r.status) for r in inner] == [
        ("orders__cancel_order", "allow", None, "ok")]


async def test_carol_without_a_grant_finds_no_tool_and_her_script_sees_none(serves):
    with anyio.fail_after(STEP_SECONDS):
        async with client(serves, "carol", MODERN) as c:
            found = await c.call_tool("tool_search", {"query": "orders", "format": "python"})
            ran = await c.call_tool("execute", {"code": JOIN_SCRIPT})
    assert found.structured_content["tools"] == []
    assert (_error(ran)["code"], _error(ran)["where"]) == ("tool_error", "code_mode.sandbox")
    assert "name 'orders__list_orders' is not defined" in _text(ran), _text(ran)
    own, inner = _script_rows(serves["keys"], _error(ran)["details"]["script_id"])
    assert [(r.tool, r.status) for r in inner] == [("orders__list_orders", "not_in_manifest")]
    assert (own.user, json.loads(own.arguments)["manifest"]) == ("carol", {})


@pytest.mark.parametrize(("era", "order_id"), [(LEGACY, "A1003"), (MODERN, "A1004")])
async def test_a_self_approval_grant_lets_the_callers_client_approve_the_script_by_elicitation(serves, era, order_id):
    """Handshake era over HTTP: dave's client is asked once for the script and its manifest, and it
    runs; 2026-07-28 over HTTP has no elicitation back channel: the script stays pending, as a direct call."""
    asked: list[str] = []

    async def on_elicit(context: Any, params: Any) -> ElicitResult:
        asked.append(params.message)
        return ElicitResult(action="accept", content={"approve": True})

    code = f"o = await orders__get_order(order_id={order_id!r})\nawait orders__cancel_order(order_id=o['order_id'])\n"
    with anyio.fail_after(STEP_SECONDS * 2):
        async with client(serves, "dave", era, elicitation_callback=on_elicit) as c:
            ran = await c.call_tool("execute", {"code": code})
    if era == MODERN:
        assert (_error(ran)["code"], asked) == ("approval_required", [])
        return
    assert ran.is_error is True and _error(ran)["code"] == "tool_error"  # shipped: the business error of the tool
    assert "already shipped" in _text(ran) or "cannot be cancelled" in _text(ran), _text(ran)
    own, inner = _script_rows(serves["keys"], _error(ran)["details"]["script_id"])
    assert len(asked) == 1 and asked[0].startswith("Allow execute (destructive) to run once with arguments {\"code\":")
    assert f"Approval id {own.approval_id}." in asked[0]
    assert (own.user, own.approver) == ("dave", "dave (self-approval)")
    assert [(r.tool, r.approval_id) for r in inner] == [("orders__get_order", None),
                                                        ("orders__cancel_order", own.approval_id)]


async def test_a_tool_name_built_at_run_time_is_refused_as_outside_the_manifest(serves):
    script = "name = 'orders__' + 'cancel_order'\nawait call_tool(name, {'order_id': 'A1004'})"
    with anyio.fail_after(STEP_SECONDS):
        async with client(serves, "alice", LEGACY) as c:
            ran = await c.call_tool("execute", {"code": script})
    assert _error(ran)["code"] == "tool_error"
    assert _text(ran).rstrip().endswith(
        "PermissionError: not_in_manifest at code_mode.manifest: tool 'orders__cancel_order' is not in this "
        "script's capability manifest (tools named literally: none); name every tool literally so the manifest "
        "and its approval cover it")
    own, inner = _script_rows(serves["keys"], _error(ran)["details"]["script_id"])
    assert own.detail.endswith("calls:1 (not_in_manifest=1) outcome:tool_error")
    assert [(r.user, r.tool, r.status) for r in inner] == [("alice", "orders__cancel_order", "not_in_manifest")]
    assert inner[0].detail.endswith("step:0; refused: not in the script's capability manifest")
    assert json.loads(inner[0].arguments) == {"order_id": "A1004"}


# -- the local admin -----------------------------------------------------------------------------------
@pytest.mark.parametrize("mode", ["open", "keys", "off"])
async def test_the_local_admin_runs_a_script_through_the_admin_api(serves, mode):
    gw = serves[mode]
    base = gw.url.removesuffix("/mcp")
    with anyio.fail_after(STEP_SECONDS):
        async with httpx2.AsyncClient(headers={"Authorization": f"Bearer {gw.admin_token}"}, timeout=30) as http:
            r = await http.post(f"{base}/admin/api/call", json={"name": "execute", "arguments": {"code": JOIN_SCRIPT}})
    assert r.status_code == 200, r.text
    body = r.json()
    assert (body["status"], body["structured"]["result"]) == ("ok", JOIN_RESULT)
    if mode == "off":  # --auth off keeps no store, so no audit
        return
    own, inner = _script_rows(gw, body["structured"]["script_id"])
    assert len(inner) == 3 and own.status == "ok"


# -- hostile scripts -----------------------------------------------------------------------------------
async def test_hostile_scripts_end_at_their_limits_while_serve_keeps_answering_another_client(serves):
    """alice's three bombs at once (three sessions, one API key): one runs into its limit, the other two
    are over her share of the pool (rate_limited, retry after), and dave is answered all along."""
    bombs = {
        "memory": "x = 'a' * 1024\nwhile True:\n    x = x + x",
        "cpu_time": "n = 0\nwhile True:\n    n += 1",
        "recursion": "def f(n):\n    return f(n + 1)\nf(0)",
    }
    results: dict[str, Any] = {}
    normal: list[Any] = []

    async def hostile(kind: str, code: str) -> None:
        async with client(serves, "alice", LEGACY) as c:
            results[kind] = await c.call_tool("execute", {"code": code})

    with anyio.fail_after(STEP_SECONDS * 3):
        async with anyio.create_task_group() as tg:
            for kind, code in bombs.items():
                tg.start_soon(hostile, kind, code)
            async with client(serves, "dave", MODERN) as other:
                for _ in range(5):
                    normal.append(await other.call_tool("call_tool", {"name": "orders__get_order",
                                                                      "arguments": {"order_id": "A1004"}}))
                normal.append(await other.call_tool("execute", {"code": JOIN_SCRIPT}))
        refusals = {kind: _error(r) for kind, r in results.items() if _error(r)["code"] == "rate_limited"}
        refused = list(refusals)
        async with client(serves, "alice", LEGACY) as after:
            for kind in refused:  # one at a time, each runs into its own limit
                results[kind] = await after.call_tool("execute", {"code": bombs[kind]})
            last = await after.call_tool("execute", {"code": JOIN_SCRIPT})
    assert len(refused) == 2
    for err in refusals.values():
        assert (err["where"], err["retry_after_seconds"] >= 1) == ("code_mode.pool", True), err
        assert "(toolhost.code_mode.pool.max_scripts_per_caller = 1)" in err["message"]
    for kind in bombs:
        err = _error(results[kind])
        assert (err["code"], err["where"], err["details"]["limit"]) == ("tool_error", "code_mode.limit", kind), err
    assert [r.structured_content["status"] for r in normal[:5]] == ["delivered"] * 5
    assert normal[5].structured_content["result"] == JOIN_RESULT
    assert last.structured_content["result"] == JOIN_RESULT


async def test_a_script_past_its_inner_call_limit_stops_and_every_call_it_made_is_audited(serves):
    script = "n = 0\nfor i in range(1000):\n    n += len(await orders__get_order(order_id='A1004'))\nn"
    with anyio.fail_after(STEP_SECONDS * 2):
        async with client(serves, "open", MODERN) as c:
            ran = await c.call_tool("execute", {"code": script})
    err = _error(ran)
    assert (err["code"], err["where"], err["details"]["limit"], err["details"]["calls"]) == (
        "tool_error", "code_mode.limit", "inner_calls", 101)
    assert "more than 100 tool calls (toolhost.code_mode.limits.max_inner_calls = 100)" in _text(ran)
    own, inner = _script_rows(serves["open"], err["details"]["script_id"])
    assert [(r.tool, r.status) for r in inner] == [("orders__get_order", "ok")] * 100 + [
        ("orders__get_order", "limit_exceeded")]  # the refused call past the limit: a row of its own
    assert [parse_inner_detail(r.detail)["step"] for r in inner] == list(range(101))
    assert inner[-1].detail.endswith("step:100; refused: past toolhost.code_mode.limits.max_inner_calls")
    assert json.loads(inner[-1].arguments) == {"order_id": "A1004"}  # what the refused call would have sent
    assert own.detail.endswith("calls:101 (limit_exceeded=1,ok=100) outcome:tool_error")


async def test_calls_a_script_never_started_have_a_row_each(serves):
    script = (
        "import asyncio\n"
        "await asyncio.gather(*[orders__get_order(order_id='A1004') for _ in range(101)])\n"
    )
    with anyio.fail_after(STEP_SECONDS * 2):
        async with client(serves, "open", LEGACY) as c:
            ran = await c.call_tool("execute", {"code": script})
    err = _error(ran)
    assert (err["where"], err["details"]["limit"]) == ("code_mode.limit", "inner_calls")
    own, inner = _script_rows(serves["open"], err["details"]["script_id"])
    assert [r.status for r in inner] == ["not_executed"] * 100 + ["limit_exceeded"]
    assert inner[0].detail.endswith("step:0; not started: the script ended first")
    assert {r.arguments for r in inner} == {'{"order_id":"A1004"}'}
    assert own.detail.endswith("calls:101 (limit_exceeded=1,not_executed=100) outcome:tool_error")


LOOP = "n = 0\nwhile True:\n    n += 1"


async def _pool_running(gw: Gateway, http: Any) -> int:
    body = (await http.get(f"{gw.url.removesuffix('/mcp')}/admin/api/servers")).json()
    return body["code_mode"]["running"]


@pytest.mark.parametrize("era", ERAS)
@pytest.mark.parametrize("mode", ["open", "off"])
async def test_a_hostile_anonymous_session_does_not_use_up_another_anonymous_session_s_share(serves, mode, era):
    """Open access and ``--auth off`` (no API keys: every caller anonymous): a hostile session's loops
    use its own share of the pool; another session's ``1 + 1`` is answered while a loop still runs.
    A handshake-era session sends four loops at once (one Mcp-Session-Id); a stateless 2026-07-28
    client one (concurrent stateless requests may use several connections, each its own share)."""
    gw = serves[mode]
    loops = 4 if era == LEGACY else 1
    order: list[str] = []
    hostile: list[Any] = []
    with anyio.fail_after(STEP_SECONDS * 2):
        async with httpx2.AsyncClient(headers={"Authorization": f"Bearer {gw.admin_token}"}, timeout=30) as admin, \
                client(serves, mode, era) as attacker, client(serves, mode, era) as other:
            async with anyio.create_task_group() as tg:

                async def attack() -> None:
                    hostile.append(await attacker.call_tool("execute", {"code": LOOP}))
                    order.append("hostile")

                for _ in range(loops):
                    tg.start_soon(attack)
                while len(hostile) < loops - 1 or await _pool_running(gw, admin) < 1:
                    await anyio.sleep(0.02)  # across processes: the admin API is polled, bounded above
                assert order == ["hostile"] * (loops - 1)  # the refused ones; one loop runs
                began = anyio.current_time()
                other_result = await other.call_tool("execute", {"code": "1 + 1"})
                order.append("other")
                other_seconds = anyio.current_time() - began
    assert [_error(r)["code"] for r in hostile[: loops - 1]] == ["rate_limited"] * (loops - 1)
    assert other_result.structured_content["result"] == 2, _text(other_result)
    assert order[loops - 1] == "other"  # answered while the hostile loop still ran (its CPU limit is 2 s)
    assert other_seconds < LIMITS["cpu_seconds"]
    assert _error(hostile[-1])["details"]["limit"] == "cpu_time"


# -- the pool, as operators see it ---------------------------------------------------------------------
async def test_the_admin_api_and_toolhost_servers_show_the_pool_and_limits(serves):
    gw = serves["open"]
    base = gw.url.removesuffix("/mcp")
    with anyio.fail_after(STEP_SECONDS * 2):
        async with httpx2.AsyncClient(headers={"Authorization": f"Bearer {gw.admin_token}"}, timeout=30) as http:
            body = (await http.get(f"{base}/admin/api/servers")).json()
        shown = await anyio.run_process([TOOLHOST, "servers", "--data-dir", str(gw.home / "data")], check=False,
                                        env=_env())
    cm = body["code_mode"]
    assert (cm["tool"], cm["pool"]["min_workers"], cm["pool"]["max_workers"]) == ("execute", 1, 2)
    assert {k: cm["limits"][k] for k in LIMITS} == LIMITS
    assert cm["limits"]["max_inner_calls"] == 100
    assert (cm["pool"]["max_scripts_per_caller"], cm["pool"]["max_queued_scripts"], cm["queued"]) == (1, 4, 0)
    assert cm["pool"]["max_anonymous_scripts"] == 6
    assert cm["pool"]["checkout_timeout_seconds"] == 10.0
    assert [s["name"] for s in body["servers"]] == ["orders"]
    assert shown.returncode == 0, shown.stderr
    assert ("code mode: execute on, 1-2 sandbox workers, 0 running, 0 queued now; share: 1 script per caller, "
            "6 for anonymous sessions together, queue 4; per script 15 s wall clock, 2 s CPU, 32 MiB, "
            "100 tool calls") in shown.stdout.decode()


async def test_toolhost_servers_shows_the_scripts_running_now(serves):
    gw = serves["open"]
    ran: list[Any] = []
    with anyio.fail_after(STEP_SECONDS * 2):
        async with httpx2.AsyncClient(headers={"Authorization": f"Bearer {gw.admin_token}"}, timeout=30) as admin, \
                client(serves, "open", LEGACY) as c, anyio.create_task_group() as tg:

            async def sleeper() -> None:
                ran.append(await c.call_tool("execute", {"code": "import time\ntime.sleep(8)\n'slept'"}))

            tg.start_soon(sleeper)
            while await _pool_running(gw, admin) < 1:
                await anyio.sleep(0.02)  # across processes: the admin API is polled, bounded above
            shown = await anyio.run_process([TOOLHOST, "servers", "--data-dir", str(gw.home / "data")],
                                            check=False, env=_env())
    assert shown.returncode == 0, shown.stderr
    assert "code mode: execute on, 1-2 sandbox workers, 1 running, 0 queued now; share: 1 script per caller" in (
        shown.stdout.decode())
    assert ran[0].structured_content["result"] == "slept"


async def test_toolhost_servers_without_a_serve_shows_the_configured_pool(tmp_path: Path):
    home = tmp_path / "home"
    data = code_mode_home(home)
    config = json.loads((home / "config.json").read_text())
    config["toolhost"]["code_mode"].update(enabled=True, pool={"max_workers": 3, "max_anonymous_scripts": 5})
    (home / "config.json").write_text(json.dumps(config))
    with anyio.fail_after(STARTUP_SECONDS):
        shown = await anyio.run_process(
            [TOOLHOST, "servers", "--config", str(home / "config.json"), "--data-dir", str(data)],
            check=False, env={**_env(), "COLUMNS": "300"})
    assert shown.returncode == 0, shown.stderr
    assert ("code mode: execute on, 1-3 sandbox workers, 0 running, 0 queued now; share: 1 script per caller, "
            "5 for anonymous sessions together, queue 6; per script 15 s wall clock, 2 s CPU, 32 MiB, "
            "100 tool calls") in shown.stdout.decode()


async def _script_events(folder: Path, script_id: str) -> list[dict[str, Any]]:
    """The ``script`` events of ``script_id`` in the serve's event log, once written: a handshake-era HTTP
    answer leaves before its events, which the serve writes within 50 ms (``EventLog.defer``)."""
    with anyio.fail_after(10):
        while True:
            events = [json.loads(line) for f in folder.glob("*.jsonl") for line in f.read_text().splitlines()]
            found = [e["data"] for e in events if e["kind"] == "script" and e["data"]["script_id"] == script_id]
            if found:
                return found
            await anyio.sleep(0.05)  # no event to await across processes: the file is polled, bounded above
