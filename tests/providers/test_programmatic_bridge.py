"""Programmatic tool calling through the governed agent loop, against local HTTP stand-ins of the
Anthropic Messages and OpenAI Responses APIs driven by the official SDKs, over the real orders
server: read-risk tools are declared callable by the provider's program, a destructive one only
directly unless an allow grant says ``--no-approval``; every call a program made runs through the
pipeline, is refused with a clear error when it may not be made that way, and is audited (row
detail and event log) with the program id; the program's blocks and the container are replayed."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import anyio
import pytest
from anthropic import AsyncAnthropic
from openai import AsyncOpenAI

from host.access import AccessControl
from host.agent.governed import governed_runtime
from host.agent.providers import TOOL_SEARCH_NAME, OpenAIChatAdapter, adapter_for
from host.config import load_config

from .fake_api import CONTAINER, PROGRAM_CODE, Step
from .http_standin import provider_standin
from .test_examples import _config

PROGRAM = {"anthropic_messages": "srvtoolu_01prog", "openai_responses": "prog_call_7"}
ANSWER = "A1001 has shipped; A1002 needs a direct cancel."
REFUSAL = (
    "permission_denied: orders__cancel_order is a destructive-risk tool and may not be called from a program "
    "(program {api}:{program} call:call_c); call it directly as a tool call, or an admin allows programs to call "
    "it with `toolhost grants add {user} 'orders__cancel_order' --no-approval`"
)


def _client(api: str, base_url: str) -> Any:
    if api == "anthropic_messages":
        return AsyncAnthropic(api_key="sk-ant-test", base_url=base_url)
    return AsyncOpenAI(api_key="sk-test", base_url=base_url)


def _send(api: str, client: Any) -> Any:
    create = client.messages.create if api == "anthropic_messages" else client.responses.create

    async def send(params: dict) -> Any:
        if params.get("stream"):
            return (e.model_dump(mode="json", exclude_unset=True) async for e in await create(**params))
        return (await create(**params)).model_dump(mode="json", exclude_unset=True)
    return send


async def _ask(api: str, tmp_path: Path, *, stream: bool, user: str | None = None) -> list[dict[str, Any]]:
    program = PROGRAM[api]
    steps = [Step(calls=[("call_s", TOOL_SEARCH_NAME, {"query": "get or cancel an order by its id"})]),
             Step(calls=[("call_g", "orders__get_order", {"order_id": "A1001"}),
                         ("call_c", "orders__cancel_order", {"order_id": "A1002"})], program=program),
             Step(text=ANSWER)]
    data = tmp_path / "data"
    params = {"max_tokens": 1024} if api == "anthropic_messages" else {}
    with provider_standin(api, steps) as (base_url, sent):
        with anyio.fail_after(120):
            async with _client(api, base_url) as client, governed_runtime(
                load_config(_config(tmp_path), data_dir=data), data, user=user
            ) as gov:
                outcome = await gov.ask(adapter_for(api), _send(api, client), "Check A1001, cancel A1002",
                                        model="m", params={**params, "stream": stream}, programmatic=True,
                                        conversation_id=f"prog-{user}")
                events = [e for e in gov.runtime.event_log.events(f"prog-{user}") if e["kind"] == "program_call"]
                programs = [m.programs for m in outcome.messages if m.role == "assistant"]
    assert outcome.final_text == ANSWER
    assert programs == [{}, {"call_g": program, "call_c": program}, {}]
    assert [(e["data"]["tool"], e["data"]["program"], e["data"]["allowed"]) for e in events] == [
        ("orders__get_order", program, True), ("orders__cancel_order", program, user == "bob")]
    return sent


def _audit(data: Path) -> list[tuple[str, str, str, str | None]]:
    access = AccessControl.open(data)
    try:
        return [(r["user"], r["tool"], r["status"], r["detail"]) for r in access.audit_log.rows()
                if r["action"] == "call"]
    finally:
        access.close()


def _declared(body: dict[str, Any]) -> dict[str, Any]:
    return {t.get("name") or t["type"]: t.get("allowed_callers") for t in body["tools"]}


@pytest.mark.anyio
@pytest.mark.parametrize("stream", [False, True], ids=["whole", "streamed"])
@pytest.mark.parametrize("api", ["anthropic_messages", "openai_responses"])
async def test_a_programs_read_call_runs_and_its_destructive_call_is_refused_and_both_are_audited(api, stream,
                                                                                              tmp_path):
    sent = await _ask(api, tmp_path, stream=stream)
    program = PROGRAM[api]
    runtime_tool = "code_execution" if api == "anthropic_messages" else "programmatic_tool_calling"
    by_program = "code_execution_20250825" if api == "anthropic_messages" else "programmatic"
    declared = _declared(sent[1])
    assert {k: declared[k] for k in ("orders__get_order", "orders__cancel_order", TOOL_SEARCH_NAME, runtime_tool)
            } == {"orders__get_order": ["direct", by_program], "orders__cancel_order": ["direct"],
                  TOOL_SEARCH_NAME: None, runtime_tool: None}
    assert _audit(tmp_path / "data") == [
        ("agent", "orders__get_order", "ok", f"program {api}:{program} call:call_g"),
        ("agent", "orders__cancel_order", "permission_denied",
         f"program {api}:{program} call:call_c; refused: not programmatic"),
    ]
    refusal = REFUSAL.format(api=api, program=program, user="agent")
    if api == "anthropic_messages":
        assert sent[2]["container"] == CONTAINER["id"]
        assistant, results = sent[2]["messages"][-2:]
        assert assistant["content"] == [
            {"type": "server_tool_use", "id": program, "name": "code_execution", "input": {"code": PROGRAM_CODE}},
            {"type": "tool_use", "id": "call_g", "name": "orders__get_order", "input": {"order_id": "A1001"},
             "caller": {"type": "code_execution_20250825", "tool_id": program}},
            {"type": "tool_use", "id": "call_c", "name": "orders__cancel_order", "input": {"order_id": "A1002"},
             "caller": {"type": "code_execution_20250825", "tool_id": program}},
        ]
        got, cancel = results["content"]
        assert "ada@example.com" in got["content"][0]["text"] and "is_error" not in got
        assert cancel == {"type": "tool_result", "tool_use_id": "call_c", "is_error": True,
                          "content": [{"type": "text", "text": refusal}]}
    else:
        items = sent[2]["input"]
        [prog] = [i for i in items if i.get("type") == "program"]
        assert (prog["call_id"], prog["fingerprint"], prog["code"]) == (program, "ZnA=", PROGRAM_CODE)
        calls = {i["call_id"]: i for i in items if i.get("type") == "function_call"}
        assert {k: calls[k]["caller"] for k in ("call_g", "call_c")} == {
            "call_g": {"type": "program", "caller_id": program}, "call_c": {"type": "program", "caller_id": program}}
        outputs = {i["call_id"]: i["output"] for i in items if i.get("type") == "function_call_output"}
        assert "ada@example.com" in outputs["call_g"]
        assert outputs["call_c"] == refusal


@pytest.mark.anyio
async def test_under_users_a_no_approval_grant_lets_a_program_call_the_destructive_tool(tmp_path):
    access = AccessControl.open(tmp_path / "data")
    try:
        for user in ("alice", "bob"):
            access.users.add(user)
            access.grants.add(user, "orders__*")
        access.grants.add("bob", "orders__cancel_order", approval=False)
    finally:
        access.close()
    api = "openai_responses"
    alice = await _ask(api, tmp_path, stream=False, user="alice")
    bob = await _ask(api, tmp_path, stream=False, user="bob")
    assert _declared(alice[1])["orders__cancel_order"] == ["direct"]
    assert _declared(bob[1])["orders__cancel_order"] == ["direct", "programmatic"]
    alice_out = {i["call_id"]: i["output"] for i in alice[2]["input"] if i.get("type") == "function_call_output"}
    bob_out = {i["call_id"]: i["output"] for i in bob[2]["input"] if i.get("type") == "function_call_output"}
    assert alice_out["call_c"] == REFUSAL.format(api=api, program=PROGRAM[api], user="alice")
    assert json.loads(bob_out["call_c"])["status"] == "cancelled"
    rows = [(u, t, s) for u, t, s, _ in _audit(tmp_path / "data")]
    assert rows == [("alice", "orders__get_order", "ok"), ("alice", "orders__cancel_order", "permission_denied"),
                    ("bob", "orders__get_order", "ok"), ("bob", "orders__cancel_order", "ok")]


def test_chat_completions_has_no_programmatic_callers():
    from host.agent.providers import ProviderModel

    async def send(params: dict) -> dict:
        raise AssertionError("never sent")

    with pytest.raises(ValueError, match=r"^openai_chat has no programmatic tool calling \(OpenAI Chat Completions"):
        ProviderModel(OpenAIChatAdapter(), send, [], model="m", programmatic=lambda tool: False)
