"""The runnable ``examples/`` (OpenAI Chat Completions, OpenAI Responses, Anthropic Messages with the
official SDKs) against a local HTTP stand-in of each API, whole and streamed: the final answer is
printed, the tool call reached the real orders server, and the audit has the call's row (the
examples are governed like ``toolhost serve``); with users, a destructive call waits for approval."""

from __future__ import annotations

import json
import os
import re
import subprocess
import sys
from pathlib import Path

import pytest

from host.access import AccessControl
from host.agent.providers import TOOL_SEARCH_NAME
from host.config import DEFAULT_CONFIG_PATH

from .fake_api import Step
from .http_standin import provider_standin

ROOT = Path(__file__).resolve().parents[2]
EXAMPLES = {"openai_chat": "openai_chat.py", "openai_responses": "openai_responses.py",
            "anthropic_messages": "anthropic_messages.py"}
ANSWER = "Order A1001 has shipped."


def _config(tmp_path: Path) -> Path:
    """The bundled config's orders server only (the others need nothing here)."""
    bundled = json.loads(DEFAULT_CONFIG_PATH.read_text())
    path = tmp_path / "cfg.json"
    path.write_text(json.dumps({"toolhost": bundled["toolhost"],
                                "mcpServers": {"orders": bundled["mcpServers"]["orders"]}}))
    return path


def _run(api: str, base_url: str, tmp_path: Path, *args: str) -> subprocess.CompletedProcess[str]:
    env = {**os.environ, "OPENAI_API_KEY": "sk-test", "ANTHROPIC_API_KEY": "sk-ant-test",
           "OPENAI_BASE_URL": base_url, "ANTHROPIC_BASE_URL": base_url, "TOOLHOST_DENSE_SEARCH": "0"}
    return subprocess.run([sys.executable, str(ROOT / "examples" / EXAMPLES[api]), "Where is order A1001?",
                           "--config", str(_config(tmp_path)), "--data-dir", str(tmp_path / "data"), *args],
                          capture_output=True, text=True, timeout=120, env=env, cwd=tmp_path, check=False)


def _calls(data: Path) -> list[tuple[str, str, str]]:
    access = AccessControl.open(data)
    try:
        return [(r["user"], r["tool"], r["status"]) for r in access.audit_log.rows() if r["action"] == "call"]
    finally:
        access.close()


@pytest.mark.parametrize("stream", [False, True], ids=["whole", "streamed"])
@pytest.mark.parametrize("api", list(EXAMPLES))
def test_each_example_answers_through_the_sdk_and_audits_the_call(api, stream, tmp_path):
    steps = [Step(calls=[("call_s", TOOL_SEARCH_NAME, {"query": "look up an order by its id"})]),
             Step(calls=[("call_g", "orders__get_order", {"order_id": "A1001"})]),
             Step(text=ANSWER)]
    with provider_standin(api, steps) as (base_url, sent):
        out = _run(api, base_url, tmp_path, *(["--stream"] if stream else []))
    assert (out.returncode, out.stdout) == (0, ANSWER + "\n"), out.stderr
    assert len(sent) == 3
    assert [bool(r.get("stream")) for r in sent] == [stream] * 3
    if api == "anthropic_messages":
        assert {r["max_tokens"] for r in sent} == {1024}
    result = json.dumps(sent[2])  # the tool result the model got: from the real orders server
    assert "A1001" in result and "shipped" in result.lower()
    assert _calls(tmp_path / "data") == [("agent", "orders__get_order", "ok")]


def test_with_users_the_example_acts_for_its_user_and_a_destructive_call_waits_for_approval(tmp_path):
    access = AccessControl.open(tmp_path / "data")
    try:
        access.users.add("alice")
        access.grants.add("alice", "orders__*")
    finally:
        access.close()
    steps = [Step(calls=[("call_s", TOOL_SEARCH_NAME, {"query": "cancel an order"})]),
             Step(calls=[("call_c", "orders__cancel_order", {"order_id": "A1002"})]),
             Step(text="I asked for approval to cancel A1002.")]
    with provider_standin("openai_chat", steps) as (base_url, sent):
        nobody = _run("openai_chat", base_url, tmp_path)
        out = _run("openai_chat", base_url, tmp_path, "--user", "alice")
    assert nobody.returncode == 2  # a usage error naming --user (see the test below), not a traceback
    assert "pass --user NAME" in nobody.stderr.strip().splitlines()[-1]
    assert (out.returncode, out.stdout) == (0, "I asked for approval to cancel A1002.\n"), out.stderr
    tool_message = [m for m in sent[2]["messages"] if m["role"] == "tool"][-1]
    assert tool_message["content"].startswith("approval_required")
    assert _calls(tmp_path / "data") == [("alice", "orders__cancel_order", "approval_required")]


def _readme_agent_snippet() -> str:
    text = (ROOT / "README.md").read_text()
    section = text[text.index("## In your own agent loop"):text.index("## Users, keys and grants")]
    [code] = re.findall(r"```python\n(.*?)```", section, flags=re.DOTALL)
    return code


def test_the_readme_agent_loop_snippet_runs_as_written(tmp_path):
    steps = [Step(calls=[("call_s", TOOL_SEARCH_NAME, {"query": "look up an order by its id"})]),
             Step(calls=[("call_g", "orders__get_order", {"order_id": "A1001"})]),
             Step(text=ANSWER)]
    script = tmp_path / "agent.py"
    script.write_text(_readme_agent_snippet())
    with provider_standin("openai_chat", steps) as (base_url, sent):
        out = subprocess.run([sys.executable, str(script)], capture_output=True, text=True, timeout=180,
                             cwd=tmp_path, check=False,
                             env={**os.environ, "OPENAI_API_KEY": "sk-test", "OPENAI_BASE_URL": base_url,
                                  "TOOLHOST_HOME": str(tmp_path / "home"), "TOOLHOST_DENSE_SEARCH": "0"})
    assert (out.returncode, out.stdout) == (0, ANSWER + "\n"), out.stderr
    assert len(sent) == 3
    assert _calls(tmp_path / "home") == [("agent", "orders__get_order", "ok")]


@pytest.mark.parametrize("api", ["anthropic_messages", "openai_responses"])
def test_with_programmatic_the_examples_let_the_providers_program_call_a_read_tool_and_audit_it(api, tmp_path):
    program = "srvtoolu_01ex" if api == "anthropic_messages" else "prog_ex"
    steps = [Step(calls=[("call_s", TOOL_SEARCH_NAME, {"query": "look up an order by its id"})]),
             Step(calls=[("call_g", "orders__get_order", {"order_id": "A1001"})], program=program),
             Step(text=ANSWER)]
    with provider_standin(api, steps) as (base_url, sent):
        out = _run(api, base_url, tmp_path, "--programmatic")
    assert (out.returncode, out.stdout) == (0, ANSWER + "\n"), out.stderr
    get = next(t for t in sent[1]["tools"] if t.get("name") == "orders__get_order")
    assert get["allowed_callers"] == ["direct", "code_execution_20250825" if api == "anthropic_messages"
                                      else "programmatic"]
    access = AccessControl.open(tmp_path / "data")
    try:
        rows = [(r["tool"], r["status"], r["detail"]) for r in access.audit_log.rows() if r["action"] == "call"]
    finally:
        access.close()
    assert rows == [("orders__get_order", "ok", f"program {api}:{program} call:call_g")]


@pytest.mark.parametrize("api", list(EXAMPLES))
def test_a_missing_or_unknown_user_is_a_usage_error_naming_the_option(api, tmp_path):
    access = AccessControl.open(tmp_path / "data")
    try:
        access.users.add("ann")
    finally:
        access.close()
    missing = _run(api, "http://127.0.0.1:9", tmp_path)
    assert missing.returncode == 2 and "Traceback" not in missing.stderr
    assert missing.stderr.splitlines()[-1] == (
        f"{EXAMPLES[api]}: error: users are configured in {tmp_path / 'data'}: pass --user NAME, the user the "
        "agent acts for (see `toolhost users list`)")
    unknown = _run(api, "http://127.0.0.1:9", tmp_path, "--user", "nobody")
    assert unknown.returncode == 2 and "Traceback" not in unknown.stderr
    assert unknown.stderr.splitlines()[-1] == (
        f"{EXAMPLES[api]}: error: --user nobody: no such user in {tmp_path / 'data'} (see `toolhost users list`, "
        "or `toolhost users add nobody`)")
