"""Misbehaving stdio upstreams (tests/upstream/fakes/hostile_stdio.py), one failure kind per test.

Each test asserts the exact state, error class/code and message, and that a healthy neighbour
kept serving.
"""

from __future__ import annotations

import time

import anyio
import pytest

from host.calls import ResultStatus
from host.errors import CallOutcomeUnknown, CallTimeout, UpstreamError, UpstreamUnavailable
from host.runtime import HostRuntime
from host.upstream.guard import PARSE_ERROR_CODE
from host.upstream.manager import ServerManager
from host.upstream.status import ConnectionState
from registry import AllowAll  # the runtime's default is safe; these tests call tools freely
from tests.upstream.support import StatusWatch, config, hostile

pytestmark = pytest.mark.anyio


async def _echo(m: ServerManager, server: str, text: str = "hi") -> str:
    res = await m.call_tool(server, "echo", {"text": text}, timeout_seconds=10)
    return res.content[0].text


async def test_idle_exit_is_noticed_at_once_and_tools_leave_search(tmp_path):
    """A stdio server that exits while idle: down without any call, upstream_unavailable at once."""
    watch = StatusWatch()
    cfg = config({"idle": hostile(exit_idle=2.0), "good": hostile()})
    with anyio.fail_after(30):
        async with HostRuntime(cfg, policy=AllowAll(), data_dir=tmp_path, reconnect=True, on_status=watch) as rt:
            conn = rt.manager.connections["idle"]
            assert "idle__echo" in \
                [h.tool.qualified_name for h in rt.search("echo", limit=10).hits if h.tool.server == "idle"]
            await watch.until(lambda: conn.status.state is ConnectionState.BACKING_OFF, timeout=5)
            assert conn.status.error == "connection: the server process exited (its stdout closed)"
            t0 = anyio.current_time()
            with pytest.raises(UpstreamUnavailable) as e:
                await rt.manager.call_tool("idle", "echo", {"text": "x"}, timeout_seconds=30)
            assert anyio.current_time() - t0 < 0.1
            assert e.value.reason == "connection: the server process exited (its stdout closed)"
            # Through the pipeline: upstream_unavailable (never unknown_tool), marked not sent.
            res = await rt.call("idle__echo", {"text": "x"})
            assert res.status is ResultStatus.UPSTREAM_UNAVAILABLE
            assert res.error.details["sent"] is False
            assert res.error.message == ("the server 'idle' is not connected (connection: the server process "
                                         "exited (its stdout closed)); the call was not sent, so it is safe to "
                                         "retry once the server is back")
            # Search and listings leave the down server's tools out; the neighbour is unaffected.
            assert {h.tool.server for h in rt.search("echo", limit=10).hits} == {"good"}
            assert all(t.server == "good" for t in rt.visible_tools())
            assert await _echo(rt.manager, "good") == "hi"


async def test_crash_loop_backs_off_and_is_never_respawned_per_call(tmp_path):
    """Crash loop: exits 0.3 s after every handshake; delays grow; calls never trigger a spawn."""
    starts = tmp_path / "starts.txt"
    watch = StatusWatch()
    cfg = config({"loop": hostile(exit_after_list=0.3, starts_file=str(starts)), "good": hostile()},
                 backoff_max_seconds=60)
    with anyio.fail_after(40):
        async with ServerManager(cfg, data_dir=tmp_path, reconnect=True, on_status=watch) as m:
            conn = m.connections["loop"]
            delays: list[float] = []

            def third_backoff() -> bool:
                return sum(1 for n, s, _ in watch.history if n == "loop" and s == "connected") >= 3 and \
                    conn.status.state is ConnectionState.BACKING_OFF and conn.status.next_attempt_at is not None

            await watch.until(third_backoff, timeout=30)
            delays.append(conn.status.next_attempt_at - time.time())
            spawned = len(starts.read_text().splitlines())
            for _ in range(20):  # calls while backing off fail at once and spawn nothing
                with pytest.raises(UpstreamUnavailable):
                    await m.call_tool("loop", "echo", {"text": "x"}, timeout_seconds=10)
            assert len(starts.read_text().splitlines()) == spawned == 3
            assert conn.backoff.failures == 3  # 1 s, 2 s, then ~4 s: short sessions never reset it
            assert 2.4 < delays[0] <= 4.0  # third delay: 4 s minus up to 20 % jitter
            assert await _echo(m, "good") == "hi"


async def test_garbage_never_wedges_and_an_unparseable_reply_fails_at_once(tmp_path):
    """Non-JSON, non-UTF-8, wrong-shape and unknown-id lines are skipped and logged; a reply that
    cannot be parsed fails its call with upstream_error -32700 at once, not after the timeout."""
    cfg = config({"noisy": hostile(garbage=True), "good": hostile()})
    with anyio.fail_after(30):
        async with ServerManager(cfg, data_dir=tmp_path, reconnect=True) as m:
            assert m.connections["noisy"].status.state is ConnectionState.CONNECTED
            for i in range(20):
                assert await _echo(m, "noisy", f"n{i}") == f"n{i}"
            t0 = anyio.current_time()
            with pytest.raises(UpstreamError) as e:
                await m.call_tool("noisy", "broken", {}, timeout_seconds=30)
            assert anyio.current_time() - t0 < 2
            assert e.value.code == PARSE_ERROR_CODE
            assert e.value.error_message.startswith("the server's reply to tools/call could not be parsed (")
            assert await _echo(m, "noisy", "after") == "after"  # still connected, nothing wedged
            assert m.connections["noisy"].status.state is ConnectionState.CONNECTED
            assert await _echo(m, "good") == "hi"
    log = (tmp_path / "logs" / "noisy.stderr.log").read_text()
    assert "toolhost: malformed input skipped (ValidationError" in log
    assert "toolhost: reply to request id 987654, which is not in flight (late, duplicate or unknown)" in log
    assert "toolhost: unparseable reply to tools/call id" in log


async def test_death_mid_call_is_outcome_unknown_and_later_calls_not_sent(tmp_path):
    """Outcome unknown: a call running when its upstream dies may have run; later ones were not sent."""
    cfg = config({"dying": hostile(), "good": hostile()})
    with anyio.fail_after(30):
        async with HostRuntime(cfg, policy=AllowAll(), data_dir=tmp_path, reconnect=True) as rt:
            res = await rt.call("dying__die", {})
            assert res.status is ResultStatus.UPSTREAM_UNAVAILABLE
            assert res.error.details == {"server": "dying", "reason": "connection: the server process exited "
                                         "(its stdout closed)", "sent": True, "outcome": "unknown",
                                         "retry_safe": False}
            assert res.error.message == ("the call was sent to 'dying', then the connection was lost (connection: "
                                         "the server process exited (its stdout closed)); the outcome is unknown "
                                         "(it may have run); do not retry blindly: check whether it took effect "
                                         "first")
            res2 = await rt.call("dying__echo", {"text": "x"})
            assert res2.status is ResultStatus.UPSTREAM_UNAVAILABLE and res2.error.details["sent"] is False
            assert await _echo(rt.manager, "good") == "hi"


async def test_shutdown_mid_call_is_outcome_unknown(tmp_path):
    """Outcome unknown: ``serve`` stopping while a call runs: sent, outcome unknown — not "not sent"."""
    cfg = config({"slow": hostile()})
    outcome: list[BaseException] = []
    with anyio.fail_after(30):
        async with ServerManager(cfg, data_dir=tmp_path, reconnect=True) as m:
            started = anyio.Event()

            async def call() -> None:
                try:
                    started.set()
                    await m.call_tool("slow", "slow", {"seconds": 20}, timeout_seconds=30)
                except Exception as exc:  # noqa: BLE001 - the outcome is what is tested
                    outcome.append(exc)

            async with anyio.create_task_group() as tg:
                tg.start_soon(call)
                await started.wait()
                await anyio.wait_all_tasks_blocked()
                m.request_stop()
    assert len(outcome) == 1 and isinstance(outcome[0], CallOutcomeUnknown), outcome
    assert (outcome[0].server, outcome[0].tool) == ("slow", "slow")


async def test_hung_call_times_out_and_neighbours_keep_serving(tmp_path):
    """A hung call: a call the server never answers ends at its own timeout; the connection stays usable."""
    cfg = config({"hangs": hostile(), "good": hostile()})
    with anyio.fail_after(30):
        async with HostRuntime(cfg, policy=AllowAll(), data_dir=tmp_path, reconnect=True) as rt:
            with pytest.raises(CallTimeout) as e:
                await rt.manager.call_tool("hangs", "hang", {}, timeout_seconds=0.5)
            assert str(e.value) == "hangs/hang did not answer within 0.5 s (the request was cancelled)"
            assert await _echo(rt.manager, "hangs", "still") == "still"
            assert await _echo(rt.manager, "good") == "hi"


async def test_a_reply_over_the_line_limit_fails_its_call_at_once_and_the_server_keeps_serving(tmp_path):
    """An upstream reply of 2 MiB on one line with the server's limit at 1 MiB
    (``toolhost.max_message_mib``; default 16): dropped without being held whole; the call it
    answers fails at once whether its id comes first (the Python SDK's order) or last (the
    TypeScript SDK's); a request of the server reusing the call's id fails nothing (the call ends
    at its timeout); the connection keeps serving throughout."""
    cfg = config({"flood": hostile(flood_tool=True) | {"toolhost": {"max_message_mib": 1}}, "good": hostile()})
    message = ("the server's reply to tools/call could not be parsed (a message over toolhost's 1 MiB stdio limit "
               "(1,048,576 bytes); ask the tool for less output or raise toolhost.max_message_mib)")
    with anyio.fail_after(60):
        async with ServerManager(cfg, data_dir=tmp_path) as m:
            for order in ({}, {"id_last": True}):
                t0 = anyio.current_time()
                with pytest.raises(UpstreamError) as e:
                    await m.call_tool("flood", "flood", {"mib": 2, **order}, timeout_seconds=30)
                assert anyio.current_time() - t0 < 10
                assert (e.value.code, e.value.error_message) == (PARSE_ERROR_CODE, message)
                assert await _echo(m, "flood", "after") == "after"
            with pytest.raises(CallTimeout):
                await m.call_tool("flood", "flood", {"mib": 2, "as_request": True}, timeout_seconds=1)
            assert await _echo(m, "flood", "still") == "still"
            assert m.connections["flood"].status.state is ConnectionState.CONNECTED
            assert await _echo(m, "good") == "hi"
    log = (tmp_path / "logs" / "flood.stderr.log").read_text()
    assert "toolhost: malformed input skipped (LineTooLongError: a message over toolhost's 1 MiB stdio limit" in log
