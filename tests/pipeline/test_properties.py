"""Hypothesis: random batches always give exactly one result per call, in call order, with the right status."""

from __future__ import annotations

import json
from typing import Any

import anyio
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st
from mcp.types import CallToolResult, TextContent

from host.agent.accumulate import ArgumentAccumulator
from host.agent.transcript import Message, check_transcript
from host.calls import ResultStatus, ToolCall
from host.errors import CallTimeout, UpstreamError, UpstreamUnavailable
from host.pipeline import BatchCancel, CallContext, Pipeline
from registry import ToolAnnotations, ToolDefinition, ToolOverrides, ToolRegistry, build_record

BEHAVIOURS = ["ok", "slow", "raise", "iserror", "huge", "rate", "down", "cancel"]
EXPECTED = {
    "ok": ResultStatus.OK, "slow": ResultStatus.TIMEOUT, "raise": ResultStatus.UPSTREAM_ERROR,
    "iserror": ResultStatus.TOOL_ERROR, "huge": ResultStatus.OK, "rate": ResultStatus.RATE_LIMITED,
    "down": ResultStatus.UPSTREAM_UNAVAILABLE, "cancel": ResultStatus.CANCELLED,
}
SCHEMA = {"type": "object", "properties": {"n": {"type": "integer"}, "note": {"type": "string"}}, "required": ["n"]}
MAX_CHARS = 300


def make_registry() -> ToolRegistry:
    reg = ToolRegistry()
    records = []
    for b in BEHAVIOURS:
        for suffix, read in (("", True), ("_w", False)):
            ann = ToolAnnotations(read_only_hint=read, destructive_hint=False)
            records.append(build_record(
                server="svc", qualified_name=f"svc__{b}{suffix}",
                definition=ToolDefinition(name=f"{b}{suffix}", input_schema=SCHEMA, annotations=ann),
                overrides=ToolOverrides(timeout_seconds=0.02, max_output_chars=MAX_CHARS)))
    reg.replace_server("svc", records)
    return reg


class FakeExecutor:
    """Mimics the production executor's contract (typed exceptions, timeout honored)."""

    def __init__(self, cancel: BatchCancel) -> None:
        self.cancel = cancel

    async def call_tool(self, server: str, tool: str, arguments: dict[str, Any], *, timeout_seconds: float,
                        progress_callback=None) -> CallToolResult:
        b = tool.removesuffix("_w")
        if b == "down":
            raise UpstreamUnavailable(server, "not connected")
        try:
            with anyio.fail_after(timeout_seconds):
                if b == "slow":
                    await anyio.sleep(10)
        except TimeoutError:
            raise CallTimeout(server, tool, timeout_seconds) from None
        if b == "cancel":
            self.cancel.cancel("cancelled mid-batch")
            await anyio.sleep(10)
        await anyio.sleep(0)
        if b == "raise":
            raise UpstreamError(server, tool, -32603, "Internal error")
        if b == "rate":
            raise UpstreamError(server, tool, -32010, "Rate limit exceeded", {"retryAfter": 3})
        if b == "iserror":
            return CallToolResult(content=[TextContent(type="text", text="no such thing")], is_error=True)
        if b == "huge":
            return CallToolResult(content=[TextContent(type="text", text="漢🙂x" * 2000)])
        return CallToolResult(content=[TextContent(type="text", text=json.dumps(arguments))])


ARG_KINDS = ["valid", "coercible", "wrong_type", "bad_json", "empty", "not_object"]


def raw_for(kind: str, n: int, note: str) -> str:
    return {
        "valid": json.dumps({"n": n, "note": note}, ensure_ascii=False),
        "coercible": json.dumps({"n": str(n), "note": note}, ensure_ascii=False),
        "wrong_type": json.dumps({"n": note + "x"}, ensure_ascii=False),
        "bad_json": '{"n": ' + str(n) + ', "note": "' + note,
        "empty": "",
        "not_object": json.dumps([n, note], ensure_ascii=False),
    }[kind]


call_spec = st.tuples(
    st.one_of(st.sampled_from(BEHAVIOURS), st.text("abcxyz_", min_size=1, max_size=8).map(lambda s: "zz" + s)),
    st.booleans(),  # write tool?
    st.sampled_from(ARG_KINDS),
    st.integers(-10**6, 10**6),
    st.text(alphabet="aé漢🙂\"\\ ", max_size=6),
    st.lists(st.integers(1, 7), min_size=1, max_size=6),  # byte chunk sizes for streaming
    st.booleans(),  # provider gives ids?
)


def stream(specs) -> list[ToolCall]:
    """Feed every call through an accumulator, interleaving byte chunks split anywhere (mid-character too)."""
    acc = ArgumentAccumulator()
    chunks = []
    for i, (name, write, kind, n, note, sizes, with_id) in enumerate(specs):
        tool = name if name.startswith("zz") else f"svc__{name}{'_w' if write else ''}"
        acc.start(index=i, call_id=f"id{i}" if with_id else None, name=tool)
        data = raw_for(kind, n, note).encode()
        parts, pos, k = [], 0, 0
        while pos < len(data):
            size = sizes[k % len(sizes)]
            parts.append(data[pos:pos + size])
            pos, k = pos + size, k + 1
        chunks.append(parts)
    for r in range(max((len(c) for c in chunks), default=0)):
        for i, parts in enumerate(chunks):
            if r < len(parts):
                acc.feed(parts[r], index=i)
    acc.finish_all()
    return acc.calls()


@settings(max_examples=60, deadline=None, suppress_health_check=[HealthCheck.function_scoped_fixture])
@given(specs=st.lists(call_spec, min_size=1, max_size=20))
def test_random_batches_get_one_result_per_call_in_order_with_the_right_status(specs, tmp_path):
    calls = stream(specs)
    assert [c.raw_arguments for c in calls] == [raw_for(s[2], s[3], s[4]) for s in specs]  # byte-identical

    async def main():
        cancel = BatchCancel()
        pipeline = Pipeline(make_registry(), FakeExecutor(cancel), spill_dir=tmp_path / "spill")
        with anyio.fail_after(10):
            return await pipeline.run_batch(calls, CallContext(cancel=cancel, conversation_id="h"))

    results = anyio.run(main)
    assert len(results) == len(calls)
    assert [r.call_id for r in results] == [c.call_id for c in calls]
    assert len({c.call_id for c in calls}) == len(calls)
    cancelled = any(s[0] == "cancel" and s[2] in ("valid", "coercible") for s in specs)
    for spec, res in zip(specs, results, strict=True):
        name, _, kind, *_ = spec
        if name.startswith("zz"):
            expected = ResultStatus.UNKNOWN_TOOL
        elif kind not in ("valid", "coercible"):
            expected = ResultStatus.INVALID_ARGUMENTS
        else:
            expected = EXPECTED[name]
        if cancelled and expected not in (ResultStatus.UNKNOWN_TOOL, ResultStatus.INVALID_ARGUMENTS):
            assert res.status in (expected, ResultStatus.CANCELLED, ResultStatus.NOT_EXECUTED), (spec, res)
            if name == "cancel":
                assert res.status in (ResultStatus.CANCELLED, ResultStatus.NOT_EXECUTED)
        else:
            assert res.status is expected, (spec, res)
        assert res.content, "every result has model-visible content"
        if res.status is ResultStatus.OK:
            res.text.encode("utf-8", "strict")
            if name == "huge":
                assert len(res.text) <= MAX_CHARS and "6000 characters in total" in res.text
        if res.status is ResultStatus.RATE_LIMITED:
            assert res.error.retry_after_seconds == 3
    history = [Message(role="assistant", calls=calls), *(Message(role="tool", result=r) for r in results)]
    assert check_transcript(history) == []


REAL = {  # flaky tool, arguments, expected status
    "ok": ("flaky__lookup_order", {"order_id": "A1"}, ResultStatus.OK),
    "iserror": ("flaky__lookup_order", {"order_id": "Z"}, ResultStatus.TOOL_ERROR),
    "crash": ("flaky__crash", {}, ResultStatus.TOOL_ERROR),
    "rate": ("flaky__rate_limited", {}, ResultStatus.RATE_LIMITED),
    "mcp_error": ("flaky__protocol_error", {}, ResultStatus.UPSTREAM_ERROR),
    "huge": ("flaky__huge", {"chars": 50_000}, ResultStatus.OK),
    "slow": ("flaky__slow", {"seconds": 30}, ResultStatus.TIMEOUT),
    "write": ("flaky__increment", {"key": "k"}, ResultStatus.OK),
    "bad_args": ("flaky__huge", {"chars": "many"}, ResultStatus.INVALID_ARGUMENTS),
    "unknown": ("flaky__nope", {}, ResultStatus.UNKNOWN_TOOL),
}


@settings(max_examples=8, deadline=None, suppress_health_check=[HealthCheck.function_scoped_fixture])
@given(kinds=st.lists(st.sampled_from(sorted(REAL)), min_size=1, max_size=8))
def test_random_batches_against_the_real_in_process_flaky_server(kinds, tmp_path):
    from servers.examples import flaky

    from .conftest import connect

    calls = [ToolCall(call_id=f"k{i}", name=REAL[k][0], raw_arguments=json.dumps(REAL[k][1]), index=i)
             for i, k in enumerate(kinds)]

    async def main():
        ov = {"flaky": {"slow": ToolOverrides(timeout_seconds=0.2)}}
        async with connect({"flaky": flaky.create_server()}, tmp_path, overrides=ov) as h:
            with anyio.fail_after(20):
                return await h.pipeline.run_batch(calls, CallContext(conversation_id="real"))

    results = anyio.run(main)
    assert [r.call_id for r in results] == [c.call_id for c in calls]
    assert [r.status for r in results] == [REAL[k][2] for k in kinds]
    for k, r in zip(kinds, results, strict=True):
        if k == "huge":
            assert len(r.text) <= 2_000 and "50000 characters in total" in r.text
        if k == "rate":
            assert r.error.retry_after_seconds == 7
