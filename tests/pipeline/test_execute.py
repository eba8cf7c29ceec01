"""Execution against the in-process ``flaky`` server: isError, images, huge outputs, hung calls,
rate limits, scheduling."""

from __future__ import annotations

import json

import anyio
import pytest
from mcp.server.mcpserver import Context, MCPServer

from host.calls import ImageBlock, ResultStatus, TextBlock, ToolCall
from host.pipeline import EMPTY_PLACEHOLDER, BatchCancel, CallContext
from registry import ToolOverrides
from servers.examples import flaky

from .conftest import connect


def tc(call_id, name, args=None, index=0):
    return ToolCall(call_id=call_id, name=name, raw_arguments=json.dumps(args or {}), index=index)


@pytest.mark.anyio
async def test_br21_timeout_cancels_the_upstream_handler(tmp_path):
    state = flaky.FlakyState()
    ov = {"flaky": {"slow": ToolOverrides(timeout_seconds=0.3)}}
    async with connect({"flaky": flaky.create_server(state)}, tmp_path, overrides=ov, state=state) as h:
        with anyio.fail_after(5):
            res = await h.pipeline.call("flaky__slow", {"seconds": 30}, h.ctx(), call_id="c7")
            await state.slow_cancelled_event.wait()  # the handler itself was cancelled
    assert res.status is ResultStatus.TIMEOUT and res.call_id == "c7"
    assert res.error.details["timeout_seconds"] == 0.3
    assert "no answer within 0.3 s; the request was cancelled" in res.text
    assert (state.slow_started, state.slow_cancelled, state.slow_finished) == (1, 1, 0)


@pytest.mark.anyio
async def test_deadline_shortens_the_timeout_and_late_calls_are_not_executed(host):
    ctx = CallContext.with_budget(0.3, conversation_id="c")
    with anyio.fail_after(5):
        results = await host.pipeline.run_batch(
            [tc("a", "flaky__slow", {"seconds": 30}), tc("b", "flaky__increment", {"key": "k"}, 1)], ctx)
    assert [r.status for r in results] == [ResultStatus.TIMEOUT, ResultStatus.NOT_EXECUTED]
    assert results[1].error.details["reason"] == "deadline"
    assert host.state.counters == {}


@pytest.mark.anyio
async def test_cancel_mid_batch_running_calls_cancelled_waiting_calls_not_executed(host):
    cancel = BatchCancel()
    ctx = CallContext(conversation_id="c", cancel=cancel)
    calls = [tc("r1", "flaky__slow", {"seconds": 30}, 0),
             tc("r2", "flaky__slow", {"seconds": 30}, 1),
             tc("w", "flaky__increment", {"key": "x"}, 2),     # a write: waits for r1, r2
             tc("r3", "flaky__huge", {"chars": 10}, 3)]         # waits for the write
    out = []
    async with anyio.create_task_group() as tg:
        async def run():
            out.extend(await host.pipeline.run_batch(calls, ctx))
        tg.start_soon(run)
        with anyio.fail_after(5):
            while host.state.slow_started < 2:
                await host.state.slow_started_event.wait()
                host.state.slow_started_event = anyio.Event()
            cancel.cancel("the user pressed stop")
    with anyio.fail_after(5):
        while host.state.slow_cancelled < 2:
            await host.state.slow_cancelled_event.wait()
            host.state.slow_cancelled_event = anyio.Event()
    assert [r.call_id for r in out] == ["r1", "r2", "w", "r3"]
    assert [r.status for r in out] == [ResultStatus.CANCELLED, ResultStatus.CANCELLED,
                                       ResultStatus.NOT_EXECUTED, ResultStatus.NOT_EXECUTED]
    assert "the user pressed stop" in out[0].text
    assert host.state.counters == {}


@pytest.mark.anyio
async def test_br17_is_error_passes_through_as_tool_error(host):
    res = await host.pipeline.call("flaky__lookup_order", {"order_id": "Z9"}, host.ctx(), call_id="c1")
    assert res.status is ResultStatus.TOOL_ERROR and res.is_error and res.call_id == "c1"
    assert res.content == [TextBlock(text="no such order: Z9")]
    assert res.error.message == "no such order: Z9"
    ok = await host.pipeline.call("flaky__lookup_order", {"order_id": "A1"}, host.ctx())
    assert ok.status is ResultStatus.OK and ok.structured == {"order_id": "A1", "status": "shipped"}


@pytest.mark.anyio
async def test_handler_exception_is_a_tool_error(host):
    res = await host.pipeline.call("flaky__crash", {}, host.ctx())
    # MCPServer hides the exception text (SDK pitfall 10); the pipeline passes on what the server said
    assert res.status is ResultStatus.TOOL_ERROR and res.text == "Error executing tool crash"


@pytest.mark.anyio
async def test_rate_limit_error_carries_retry_after_and_is_not_retried(host):
    res = await host.pipeline.call("flaky__rate_limited", {}, host.ctx())
    assert res.status is ResultStatus.RATE_LIMITED
    assert res.error.retry_after_seconds == 7
    assert res.error.details["mcp_code"] == -32010
    assert "retry after 7 s" in res.text
    assert len(host.executor.calls) == 1  # no silent retry


@pytest.mark.anyio
async def test_mcp_error_is_upstream_error_with_code_and_message(host):
    res = await host.pipeline.call("flaky__protocol_error", {}, host.ctx())
    assert res.status is ResultStatus.UPSTREAM_ERROR
    assert (res.error.details["mcp_code"], res.error.details["mcp_message"]) == (
        -32602, "Invalid params: the upstream refused them")
    assert res.error.details["mcp_data"] == {"field": "x"}


@pytest.mark.anyio
async def test_br21_dead_server_fails_fast_without_waiting_for_the_timeout(host):
    del host.executor.clients["flaky"]  # the connection is gone
    start = anyio.current_time()
    with anyio.fail_after(1):  # the tool's budget is 5 s
        res = await host.pipeline.call("flaky__slow", {"seconds": 1}, host.ctx())
    assert res.status is ResultStatus.UPSTREAM_UNAVAILABLE
    assert anyio.current_time() - start < 0.5
    assert res.error.details == {"server": "flaky", "reason": "not connected", "sent": False}


@pytest.mark.anyio
async def test_br19_image_stays_an_image_block(host):
    res = await host.pipeline.call("flaky__image", {}, host.ctx())
    assert res.status is ResultStatus.OK
    assert res.content == [TextBlock(text="a 1x1 pixel"), ImageBlock(data=flaky.PNG_1X1, mime_type="image/png")]
    assert flaky.PNG_1X1 not in res.text


@pytest.mark.anyio
async def test_br20_huge_output_head_tail_spill_and_no_broken_characters(host):
    res = await host.pipeline.call("flaky__huge", {"chars": 400_000}, host.ctx(conversation_id="../../etc"),
                                   call_id="c/../x")
    (block,) = res.content
    unit = "é漢🙂 line\n"
    full = (unit * (400_000 // len(unit) + 1))[:400_000]
    assert len(block.text) <= 2_000
    block.text.encode("utf-8", "strict")
    head, notice, tail = block.text.split("\n[…", 1)[0], "[…" + block.text.split("\n[…", 1)[1].split("…]\n")[0], \
        block.text.split("…]\n", 1)[1]
    assert full.startswith(head) and full.endswith(tail) and len(head) > 1000 and len(tail) > 300
    assert "400000 characters in total" in notice
    spill_path = notice.split("the full output is in ")[1].strip()
    spill = anyio.Path(spill_path)
    assert await spill.read_text(encoding="utf-8") == full
    root = host.spill_dir.resolve()
    assert root in (await spill.resolve()).parents  # never outside the spill folder
    assert ".." not in (await spill.resolve()).relative_to(root).as_posix()


@pytest.mark.anyio
async def test_structured_only_becomes_json_text_and_stays_structured(host):
    res = await host.pipeline.call("flaky__structured_only", {}, host.ctx())
    assert res.content == [TextBlock(text='{"temperature_c": 21.5, "city": "杭州"}')]
    assert res.structured == {"temperature_c": 21.5, "city": "杭州"}


@pytest.mark.anyio
async def test_empty_output_gets_a_placeholder(host):
    res = await host.pipeline.call("flaky__empty", {}, host.ctx())
    assert res.status is ResultStatus.OK and res.content == [TextBlock(text=EMPTY_PLACEHOLDER)]


@pytest.mark.anyio
async def test_reads_run_concurrently_writes_serialize_results_in_call_order(host):
    completed = []

    async def on_result(r):
        completed.append(r.call_id)

    calls = [tc("s1", "flaky__slow", {"seconds": 0.2}, 0),
             tc("s2", "flaky__slow", {"seconds": 0.05}, 1),
             tc("w1", "flaky__increment", {"key": "a", "delay_seconds": 0.05}, 2),
             tc("w2", "flaky__increment", {"key": "a"}, 3)]
    with anyio.fail_after(5):
        results = await host.pipeline.run_batch(calls, CallContext(conversation_id="c", on_result=on_result))
    assert [r.call_id for r in results] == ["s1", "s2", "w1", "w2"]
    assert all(r.status is ResultStatus.OK for r in results)
    assert completed == ["s2", "s1", "w1", "w2"]  # completion order
    assert host.state.order == ["slow:start", "slow:start", "slow:end", "slow:end",
                                "increment:a:start", "increment:a:end", "increment:a:start", "increment:a:end"]
    assert results[3].structured == {"a": 2}


@pytest.mark.anyio
async def test_calls_sharing_a_resource_key_serialize(tmp_path):
    state = flaky.FlakyState()
    ov = {"flaky": {"slow": ToolOverrides(resource_key="disk")}}
    async with connect({"flaky": flaky.create_server(state)}, tmp_path, overrides=ov, state=state) as h:
        with anyio.fail_after(5):
            await h.pipeline.run_batch([tc("a", "flaky__slow", {"seconds": 0.05}, 0),
                                        tc("b", "flaky__slow", {"seconds": 0.01}, 1)], h.ctx())
    assert state.order == ["slow:start", "slow:end", "slow:start", "slow:end"]


@pytest.mark.anyio
async def test_executor_bug_is_contained_to_its_call(host):
    class Broken:
        async def call_tool(self, server, tool, arguments, *, timeout_seconds, progress_callback=None):
            if tool == "crash":
                raise KeyError("boom")
            return await host.executor.call_tool(server, tool, arguments, timeout_seconds=timeout_seconds)

    host.pipeline.executor = Broken()
    results = await host.pipeline.run_batch([tc("a", "flaky__crash"), tc("b", "flaky__stats", index=1)], host.ctx())
    assert [r.status for r in results] == [ResultStatus.UPSTREAM_ERROR, ResultStatus.OK]
    assert results[0].error.details["exception"] == "KeyError"


@pytest.mark.anyio
async def test_executor_returning_garbage_is_fatal(host):
    from host.pipeline import PipelineFatal

    class Garbage:
        async def call_tool(self, *a, **k):
            return {"content": []}

    host.pipeline.executor = Garbage()
    with pytest.raises(PipelineFatal, match="not mcp.types.CallToolResult"):
        await host.pipeline.call("flaky__stats", {}, host.ctx())


@pytest.mark.anyio
async def test_progress_is_forwarded_to_the_context_callback(tmp_path):
    app = MCPServer("prog", log_level="WARNING")

    @app.tool()
    async def work(ctx: Context) -> str:
        await ctx.report_progress(1, 2, "half")
        return "done"

    seen = []

    async def progress(p, total, message):
        seen.append((p, total, message))

    async with connect({"prog": app}, tmp_path) as h:
        res = await h.pipeline.call("prog__work", {}, CallContext(progress_callback=progress))
    assert res.text == "done" and seen == [(1, 2, "half")]


@pytest.mark.anyio
async def test_unwritable_spill_folder_still_returns_the_cut_output(host):
    host.spill_dir.parent.mkdir(parents=True, exist_ok=True)
    host.spill_dir.write_text("a file where the folder should be")
    res = await host.pipeline.call("flaky__huge", {"chars": 10_000}, host.ctx())
    assert res.status is ResultStatus.OK
    assert "the full output could not be saved" in res.text and len(res.text) <= 2_000


@pytest.mark.anyio
async def test_a_call_cancelled_by_its_caller_still_gets_a_result_event(tmp_path):
    """Hostile-caller finding: a call whose caller went away (client disconnect, shutdown) had
    ``call`` and ``decision`` events but no ``result`` (the audit said ``cancelled``)."""
    from host.events import EventLog

    state = flaky.FlakyState()
    log = EventLog(tmp_path / "events")
    async with connect({"flaky": flaky.create_server(state)}, tmp_path, event_log=log, state=state) as h:
        with anyio.fail_after(5):
            async with anyio.create_task_group() as tg:
                ctx = h.ctx()

                async def run() -> None:
                    await h.pipeline.call("flaky__slow", {"seconds": 30}, ctx, call_id="gone1")

                tg.start_soon(run)
                await state.slow_started_event.wait()
                tg.cancel_scope.cancel()  # the caller's scope ends: what a disconnect does
    kinds = [(e["kind"], e["data"].get("call_id")) for e in log.events(ctx.conversation_id)]
    assert kinds == [("call", "gone1"), ("decision", "gone1"), ("result", "gone1")]
    result = list(log.events(ctx.conversation_id))[-1]["data"]
    assert (result["status"], result["error"]["details"], result["error"]["where"]) == (
        "cancelled", {"reason": "caller_cancelled"}, "execute")
    log.close()
