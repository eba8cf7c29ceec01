"""Drives one script through a checked-out pydantic-monty session, in a worker thread.

pydantic-monty's sync API (``Monty``/``MontySession.feed_start`` and snapshot ``resume``) runs the
script in a ``monty subprocess`` worker and stops at every host call (``FunctionSnapshot``), name
lookup (``NameLookupSnapshot``) and await of pending calls (``FutureSnapshot``). This module answers
those stops: tool calls are checked against the manifest and the call limit, answered with a
future (``resume({"future": ...})``), started as event-loop tasks when the script next awaits (so
``asyncio.gather`` in the script runs them concurrently) and settled as they finish; sleeps wait on
the event loop; other OS calls get monty's default refusal. The sync API is used from a thread because the async
one (``AsyncMonty``) aborted the interpreter at exit in about one run of four (pydantic-monty 1.4.0).

Source: pydantic-monty ``_monty.pyi`` (``MontySession.feed_start``, ``FunctionSnapshot.resume``,
``FutureSnapshot.resume``), https://github.com/pydantic/monty.
"""

from __future__ import annotations

import contextlib
import os
import signal
from collections.abc import Callable
from dataclasses import dataclass, field
from typing import Any

import anyio
import anyio.from_thread
import pydantic_monty as pm

from host.code_mode.bridge import PRELUDE, error_message
from host.code_mode.config import ScriptLimits
from host.code_mode.outcome import InnerCallRecord
from registry.code_mode import Manifest

__all__ = ["Aborted", "RunState", "drive"]

Queued = tuple[int, str, dict[str, Any], int]
"""A checked call not started yet: ``(monty call_id, qualified name, arguments, step)``."""


class Aborted(Exception):
    """The run was stopped by toolhost (a limit or the wall clock); :attr:`RunState.limit` says which."""


@dataclass
class PendingCall:
    """An inner call running on the event loop; ``answer`` is its monty settled result once ``done``."""

    record_index: int
    done: anyio.Event = field(default_factory=anyio.Event)
    answer: dict[str, Any] | None = None


@dataclass
class RunState:
    """Shared between the driving thread and the event loop for one run.

    Every method runs on the event loop, so :meth:`begin` and :meth:`halt` never interleave: a
    halt before the script began makes :meth:`begin` refuse it, a halt after kills its worker.
    """

    manifest: Manifest
    limits: ScriptLimits
    start_call: Callable[[str, dict[str, Any], int], PendingCall]
    start_sleep: Callable[[float], PendingCall]
    stop: anyio.Event = field(default_factory=anyio.Event)
    started: anyio.Event = field(default_factory=anyio.Event)
    crashed: bool = False
    finished: bool = False
    limit: str | None = None
    limit_message: str = ""
    worker_pid: int | None = None
    pidfd: int | None = None
    calls: list[InnerCallRecord] = field(default_factory=list)

    def begin(self, worker_pid: int | None) -> bool:
        """The script got its worker: watch it (a pidfd, which also rules out pid reuse) and start
        the wall clock; False when the run was already stopped (it must not start)."""
        if self.stop.is_set():
            return False
        self.worker_pid = worker_pid
        self.pidfd = os.pidfd_open(worker_pid) if worker_pid else None
        self.started.set()
        return True

    def worker_died(self) -> None:
        """The worker process exited mid-run."""
        if self.limit is None:
            self.crashed = True
        self.stop.set()

    def halt(self, limit: str, message: str) -> None:
        """Record the first limit hit, stop the run and kill its worker (the pool replaces it)."""
        if self.limit is None:
            self.limit, self.limit_message = limit, message
        self.stop.set()
        if self.pidfd is not None:
            with contextlib.suppress(ProcessLookupError):
                signal.pidfd_send_signal(self.pidfd, signal.SIGKILL)

    def close(self) -> None:
        """Release the pidfd (after the run)."""
        pidfd, self.pidfd = self.pidfd, None
        if pidfd is not None:
            os.close(pidfd)


def drive(session: pm.MontySession, script: str, state: RunState, printed: pm.CollectString) -> Any:
    """Run ``script`` to its end in ``session`` (thread side); return its trailing value.

    Raises:
        Aborted: a toolhost limit stopped it (``state.limit``).
        pydantic_monty.MontyError: the script failed or the worker died (the caller classifies).
    """
    if not anyio.from_thread.run_sync(state.begin, session.worker_pid):  # stopped while it got its worker
        raise Aborted(state.limit_message)
    session.feed_run(PRELUDE, print_callback=printed)
    snap: Any = session.feed_start(script, print_callback=printed)
    pending: dict[int, PendingCall] = {}
    queued: list[Queued] = []
    try:
        return _loop(snap, state, pending, queued)
    finally:
        for _, name, arguments, step in queued:  # never awaited: never started
            state.calls[step] = InnerCallRecord(step, name, "not_executed", 0.0, arguments)


def _loop(snap: Any, state: RunState, pending: dict[int, PendingCall], queued: list[Queued]) -> Any:
    while not isinstance(snap, pm.MontyComplete):
        if state.stop.is_set():
            raise Aborted(state.limit_message)
        if isinstance(snap, pm.NameLookupSnapshot):
            name = snap.variable_name
            snap = (
                snap.resume(value=_tool_value(name))
                if state.manifest.resolve(name) or name == "call_tool"
                else snap.resume()
            )
        elif isinstance(snap, pm.FunctionSnapshot):
            if snap.is_os_function:
                snap = _os_call(snap, state, pending)
                continue
            snap = snap.resume(_start(snap, state, queued))
        elif isinstance(snap, pm.FutureSnapshot):
            ids = list(snap.pending_call_ids)
            anyio.from_thread.run(_start_then_wait, state, queued, pending, ids)
            if state.stop.is_set():
                raise Aborted(state.limit_message)
            results = {i: pending.pop(i).answer for i in ids if i in pending and pending[i].done.is_set()}
            snap = snap.resume(results)  # type: ignore[arg-type]
        else:  # pragma: no cover - monty added a snapshot kind
            raise TypeError(f"unexpected pydantic-monty snapshot {type(snap).__name__}")
    if state.stop.is_set():  # stopped during its last wait (e.g. a sleep cut short): the run did not end well
        raise Aborted(state.limit_message)
    return snap.output


def _start(snap: pm.FunctionSnapshot, state: RunState, queued: list[Queued]) -> dict[str, Any]:
    """Check one host-function call and queue it; the monty answer (a future or an exception).

    Queued calls start at the script's next await (:func:`_start_then_wait`), all in one hop to the
    event loop: gathered calls still run concurrently, and a call the script never awaits never runs."""
    fn = snap.function_name
    args, kwargs = tuple(snap.args), dict(snap.kwargs)
    if fn == "call_tool":
        name = args[0] if args else kwargs.pop("name", None)
        arguments = args[1] if len(args) > 1 else kwargs.pop("arguments", {})
        if kwargs or len(args) > 2 or not isinstance(arguments, dict):
            return _raise("TypeError", "invalid_arguments", "call_tool(name, arguments) takes a tool name and one dict")
    else:
        if args:
            return _raise(
                "TypeError", "invalid_arguments", f"{fn}() takes keyword arguments only, e.g. {fn}(key=value)"
            )
        name, arguments = fn, kwargs
    qualified = state.manifest.resolve(name) if isinstance(name, str) else None
    step = len(state.calls)
    if qualified is None:
        state.calls.append(InnerCallRecord(step, str(name), "not_in_manifest", 0.0, arguments))
        if fn == "call_tool":
            listed = ", ".join(state.manifest.qualified_names) or "none"
            return _raise(
                "PermissionError",
                "not_in_manifest",
                f"tool {name!r} is not in this script's capability manifest (tools named literally: {listed});"
                " name every tool literally so the manifest and its approval cover it",
                where="code_mode.manifest",
            )
        return _raise(
            "NameError",
            "unknown_tool",
            f"name {fn!r} is not defined (no tool of this name is in the script's capability manifest)",
            where="code_mode.manifest",
        )
    if step >= state.limits.max_inner_calls:
        state.calls.append(InnerCallRecord(step, qualified, "limit_exceeded", 0.0, arguments))
        message = state.limits.explain("inner_calls")
        anyio.from_thread.run_sync(state.halt, "inner_calls", message)
        raise Aborted(message)
    state.calls.append(InnerCallRecord(step, qualified, "running", 0.0))
    queued.append((snap.call_id, qualified, arguments, step))
    return {"future": ...}


async def _start_then_wait(
    state: RunState, queued: list[Queued], pending: dict[int, PendingCall], ids: list[int]
) -> None:
    """Event-loop side: start the queued calls, then wait until one of ``ids`` is done or the run stops."""
    for call_id, name, arguments, step in queued:
        pending[call_id] = state.start_call(name, arguments, step)
    queued.clear()
    await _wait_any([pending[i] for i in ids if i in pending], state.stop)


_SYNC_SLEEPS = frozenset({"time.sleep", "system.sleep"})
_ASYNC_SLEEPS = frozenset({"asyncio.sleep", "system.async_sleep"})


def _os_call(snap: pm.FunctionSnapshot, state: RunState, pending: dict[int, PendingCall]) -> Any:
    """Sleeps wait on the event loop (stopped by the wall clock); every other OS call is monty's default
    refusal (``PermissionError``/``RuntimeError``: no filesystem, environment or clock access)."""
    name = snap.function_name
    if name not in _SYNC_SLEEPS and name not in _ASYNC_SLEEPS:
        return snap.resume_not_handled()
    seconds = snap.args[0] if snap.args else snap.kwargs.get("seconds", snap.kwargs.get("delay", 0))
    if isinstance(seconds, bool) or not isinstance(seconds, int | float):
        return snap.resume(_raise("TypeError", "invalid_arguments", f"{name}() needs a number of seconds"))  # type: ignore[arg-type]
    if name in _SYNC_SLEEPS:
        anyio.from_thread.run(_sleep, float(seconds), state.stop)
        if state.stop.is_set():  # cut short by the wall clock: never let the script carry on
            raise Aborted(state.limit_message)
        return snap.resume({"return_value": None})
    pending[snap.call_id] = anyio.from_thread.run_sync(state.start_sleep, float(seconds))
    return snap.resume({"future": ...})


async def _sleep(seconds: float, stop: anyio.Event) -> None:
    with anyio.move_on_after(max(0.0, seconds)):
        await stop.wait()


def _raise(exc_type: str, status: str, message: str, *, where: str = "code_mode.inner_call") -> dict[str, Any]:
    return {"exc_type": exc_type, "message": error_message(status, where, message)}


def _tool_value(name: str) -> Callable[..., None]:
    """A host-function placeholder the sandbox calls by ``name`` (calls come back as ``FunctionSnapshot``)."""

    def placeholder(*_args: Any, **_kwargs: Any) -> None:  # pragma: no cover - never called on the host
        raise AssertionError("inner calls are answered through snapshots")

    placeholder.__name__ = placeholder.__qualname__ = name
    return placeholder


async def _wait_any(calls: list[PendingCall], stop: anyio.Event) -> bool:
    """Wait until one of ``calls`` is done or the run is stopped; True when one is done."""
    if any(c.done.is_set() for c in calls):
        return True
    async with anyio.create_task_group() as tg:

        async def watch(event: anyio.Event) -> None:
            await event.wait()
            tg.cancel_scope.cancel()

        for c in calls:
            tg.start_soon(watch, c.done)
        tg.start_soon(watch, stop)
    return any(c.done.is_set() for c in calls)
