"""The sandbox pool: runs scripts in pydantic-monty worker processes, with every limit enforced.

Usage::

    async with SandboxPool(PoolConfig(), ScriptLimits()) as pool:
        manifest = build_manifest(script, python_names(visible_tool_names))
        outcome = await pool.run(script, manifest, caller)   # caller: an InnerCaller

Workers are ``monty subprocess`` processes (the ``pydantic-monty-runtime`` binary) with an empty
environment, owned by one ``pydantic_monty.Monty`` pool. A worker that crashes, passes the turn
timeout or the script's wall clock is killed (SIGKILL) and the pool replaces it; the run ends with
``crashed`` or ``limit_exceeded`` and other scripts never notice. :meth:`SandboxPool.run` never raises
for a script's fault: every failure is a :class:`~host.code_mode.outcome.ScriptOutcome`.

Source: pydantic-monty ``Monty`` (``min_processes``, ``max_processes``, ``checkout_timeout``,
``request_timeout``, ``max_checkouts_per_worker``) and ``ResourceLimits``, https://github.com/pydantic/monty.
"""

from __future__ import annotations

import json
import time
from dataclasses import replace
from typing import Any, Self

import anyio
import anyio.to_thread
import pydantic_monty as pm

from host.calls import ErrorInfo, ResultStatus, TextBlock, ToolResult
from host.code_mode.admission import Admission, Refused
from host.code_mode.bridge import exception_data, sandbox_value
from host.code_mode.caller import InnerCaller
from host.code_mode.config import PoolConfig, ScriptLimits
from host.code_mode.driver import Aborted, PendingCall, RunState, drive
from host.code_mode.outcome import InnerCallRecord, ScriptOutcome
from host.code_mode.results import BUSY_RETRY_AFTER_SECONDS
from registry.code_mode import Manifest, script_sha256

__all__ = ["SandboxPool"]

_TRACEBACK_CHARS = 4000


class SandboxPool:
    """A pool of sandbox workers; an async context manager (spawns ``min_workers`` on enter)."""

    def __init__(self, config: PoolConfig | None = None, limits: ScriptLimits | None = None) -> None:
        self.config = config or PoolConfig()
        self.limits = limits or ScriptLimits()
        self._monty: pm.Monty | None = None
        self._threads = anyio.CapacityLimiter(self.config.max_workers * 2)
        self.admission = Admission(
            self.config.max_workers,
            self.config.max_scripts_per_caller,
            self.config.max_queued_scripts,
            self.config.checkout_timeout_seconds,
            self.limits.wall_clock_seconds,
            self.config.max_anonymous_scripts,
        )
        self._running: list[RunState] = []

    async def __aenter__(self) -> Self:
        cfg = self.config
        monty = pm.Monty(
            min_processes=cfg.min_workers,
            max_processes=cfg.max_workers,
            checkout_timeout=cfg.checkout_timeout_seconds,
            request_timeout=cfg.turn_timeout_seconds,
            max_checkouts_per_worker=cfg.max_scripts_per_worker,
        )
        await anyio.to_thread.run_sync(monty.__enter__)
        self._monty = monty
        return self

    async def __aexit__(self, *exc: object) -> None:
        monty, self._monty = self._monty, None
        if monty is not None:
            with anyio.CancelScope(shield=True):
                await anyio.to_thread.run_sync(monty.__exit__, None, None, None)

    def worker_pids_in_use(self) -> tuple[int, ...]:
        """Process ids of the workers running a script now, oldest run first (diagnostics)."""
        return tuple(s.worker_pid for s in self._running if s.worker_pid)

    async def run(
        self,
        script: str,
        manifest: Manifest,
        caller: InnerCaller,
        *,
        limits: ScriptLimits | None = None,
        owner: str = "user:anonymous",
    ) -> ScriptOutcome:
        """Run ``script`` (already parsed into ``manifest``) for ``owner``, sending its tool calls to ``caller``.

        ``owner`` is whose share of the pool the script counts against (:func:`host.code_mode.admission.owner_key`);
        a script over its share or finding the queue full ends ``rate_limited``, one that waited
        ``checkout_timeout_seconds`` for a worker ends ``busy``, both with ``retry_after``. The wall
        clock starts when the script has its worker.

        Returns ``rejected`` when ``script`` is not the script ``manifest`` was built from (its
        sha256 differs: changed after approval). Raises only ``RuntimeError`` when the pool is not open.
        """
        if self._monty is None:
            raise RuntimeError("SandboxPool.run needs an open pool (async with SandboxPool(...) as pool)")
        sha = script_sha256(script)
        if sha != manifest.script_sha256:
            return ScriptOutcome(
                "rejected",
                sha,
                where="code_mode.manifest",
                message="the script differs from the one its manifest (and approval) were made for;"
                " build a new manifest and ask again",
            )
        lim = limits or self.limits
        started = time.monotonic()
        try:
            async with self.admission.slot(owner):
                outcome, state = await self._run_admitted(script, manifest, caller, lim, sha)
        except Refused as refused:
            return ScriptOutcome(refused.status, sha, where="code_mode.pool",  # type: ignore[arg-type]
                                 message=refused.message, retry_after=refused.retry_after)
        calls = tuple(
            c if c.status != "running" else InnerCallRecord(c.step, c.name, "cancelled", c.seconds) for c in state.calls
        )
        return replace(outcome, calls=calls, seconds=time.monotonic() - started, worker_pid=state.worker_pid)

    async def _run_admitted(
        self, script: str, manifest: Manifest, caller: InnerCaller, lim: ScriptLimits, sha: str
    ) -> tuple[ScriptOutcome, RunState]:
        state: RunState | None = None
        try:
            async with anyio.create_task_group() as tg:
                state = RunState(
                    manifest,
                    lim,
                    start_call=lambda n, a, s: _start(tg, caller, state, n, a, s),
                    start_sleep=lambda seconds: _start_sleep(tg, seconds),
                )
                tg.start_soon(self._watch, state, lim)
                self._running.append(state)
                try:
                    outcome = await anyio.to_thread.run_sync(
                        self._drive, script, state, lim, sha, limiter=self._threads
                    )
                finally:
                    self._running.remove(state)
                    state.finished = True
                    tg.cancel_scope.cancel()
        finally:
            if state is not None:
                state.close()  # the worker's pidfd
        return outcome, state

    async def _watch(self, state: RunState, lim: ScriptLimits) -> None:
        """From the moment the script has its worker: end the run at its wall clock, or when the run is
        cancelled from outside (killing the worker, which may be busy computing; the pool replaces
        it), or as soon as its worker dies while the script waits on the host (its pidfd turns readable)."""
        try:
            await state.started.wait()
            with anyio.move_on_after(lim.wall_clock_seconds):
                async with anyio.create_task_group() as tg:
                    tg.start_soon(_cancel_when_set, state.stop, tg.cancel_scope)
                    if state.pidfd is None:
                        await anyio.sleep_forever()
                    await anyio.wait_readable(state.pidfd)
                    state.worker_died()
                    tg.cancel_scope.cancel()
                return
            state.halt("wall_clock", lim.explain("wall_clock"))
        except anyio.get_cancelled_exc_class():
            if not state.finished:  # cancelled from outside, not by run() after the script ended
                state.halt("cancelled", "the call that ran the script was cancelled")
            raise

    def _drive(self, script: str, state: RunState, lim: ScriptLimits, sha: str) -> ScriptOutcome:
        """Thread side: check out a worker, run, classify the ending."""
        assert self._monty is not None
        printed = pm.CollectString(max_bytes=lim.max_print_bytes)
        try:
            with self._monty.checkout(
                script_name="script.py",
                limits=lim.monty_limits(),  # type: ignore[arg-type]
                # sleeps come back to the driver, which waits on the event loop and ends them with the run;
                # a pool-side ("system") sleep is capped and then returns normally, so an hour-long sleep
                # would "succeed" at the cap if that came before the wall clock
                os_policy={"sleep": "call_host"},
            ) as session:
                value = drive(session, script, state, printed)
        except Aborted:
            if state.crashed:
                return _crashed(sha, printed.output, "it exited while the script waited on a tool call")
            return _limited(state, sha, printed.output)
        except TimeoutError:  # the pool's own backstop: admission keeps checkouts within the pool size
            return ScriptOutcome(
                "busy",
                sha,
                where="code_mode.pool",
                message=f"no sandbox worker came up within {self.config.checkout_timeout_seconds:g} s"
                " (toolhost.code_mode.pool.checkout_timeout_seconds); retry later",
                retry_after=BUSY_RETRY_AFTER_SECONDS,
            )
        except pm.MontyCrashedError as exc:
            if state.limit:
                return _limited(state, sha, printed.output)
            if exc.timed_out:
                t = self.config.turn_timeout_seconds
                return ScriptOutcome(
                    "limit_exceeded",
                    sha,
                    printed=printed.output,
                    limit="cpu_time",
                    where="code_mode.limit",
                    message=f"one sandbox turn (the script's work between two tool calls) ran past {t:g} s"
                    f" (toolhost.code_mode.pool.turn_timeout_seconds = {t:g}); the worker was replaced;"
                    " look for an endless loop, or ask an operator to raise the limit",
                )
            return _crashed(sha, printed.output, str(exc))
        except pm.MontySyntaxError as exc:
            return ScriptOutcome("rejected", sha, where="code_mode.parse", message=exc.display("type-msg"))
        except pm.MontyRuntimeError as exc:
            return _classify(exc, sha, printed.output, lim, state)
        except pm.MontyError as exc:
            return ScriptOutcome("script_error", sha, printed=printed.output, where="code_mode.sandbox",
                                 message=_sandbox_rejected(str(exc)) or str(exc))
        if state.limit:  # a limit hit at the very end: never report such a run as ok
            return _limited(state, sha, printed.output)
        return _finish(value, sha, printed.output, lim)


def _limited(state: RunState, sha: str, printed: str) -> ScriptOutcome:
    return ScriptOutcome(
        "limit_exceeded", sha, printed=printed, limit=state.limit, message=state.limit_message, where="code_mode.limit"
    )


def _start(
    tg: anyio.abc.TaskGroup, caller: InnerCaller, state: RunState, name: str, arguments: dict[str, Any], step: int
) -> PendingCall:
    """Event-loop side: start one inner call as a task of the run."""
    call = PendingCall(record_index=step)

    async def run() -> None:
        began = time.monotonic()
        try:
            result = await caller.call(name, arguments, step=step)
        except Exception as exc:  # noqa: BLE001 - the InnerCaller should not raise; tell the script, keep the run
            message = f"{type(exc).__name__}: {exc}"
            result = ToolResult(
                call_id=f"step-{step}",
                name=name,
                status=ResultStatus.UPSTREAM_ERROR,
                content=[TextBlock(text=message)],
                error=ErrorInfo(code="upstream_error", message=message, where="code_mode.inner_call"),
            )
        call.answer = exception_data(result) if result.is_error else {"return_value": sandbox_value(result)}
        state.calls[step] = InnerCallRecord(step, name, result.status.value, time.monotonic() - began)
        call.done.set()

    tg.start_soon(run)
    return call


async def _cancel_when_set(event: anyio.Event, scope: anyio.CancelScope) -> None:
    await event.wait()
    scope.cancel()


def _crashed(sha: str, printed: str, why: str) -> ScriptOutcome:
    return ScriptOutcome(
        "crashed",
        sha,
        printed=printed,
        where="code_mode.sandbox",
        message=f"the sandbox worker died ({why}); it was replaced, the script may be retried",
    )


def _start_sleep(tg: anyio.abc.TaskGroup, seconds: float) -> PendingCall:
    """Event-loop side: an ``asyncio.sleep`` of the script (bounded by the run's wall clock)."""
    call = PendingCall(record_index=-1)

    async def run() -> None:
        await anyio.sleep(max(0.0, seconds))
        call.answer = {"return_value": None}
        call.done.set()

    tg.start_soon(run)
    return call


def _classify(exc: pm.MontyRuntimeError, sha: str, printed: str, lim: ScriptLimits, state: RunState) -> ScriptOutcome:
    if state.limit:
        return _limited(state, sha, printed)
    inner = exc.exception()
    text = str(inner)
    kind = type(inner).__name__
    limit = None
    if kind == "MemoryError" and "limit exceeded" in text:
        limit = "print" if text.endswith(f"> {lim.max_print_bytes} bytes") else "memory"
    elif kind == "RecursionError":
        limit = "recursion"
    elif kind == "TimeoutError" and text.startswith("feed time limit exceeded"):
        limit = "cpu_time"
    elif kind == "RuntimeError" and text.startswith("suspension limit"):
        limit = "inner_calls"
    if limit:
        return ScriptOutcome(
            "limit_exceeded",
            sha,
            printed=printed,
            limit=limit,
            where="code_mode.limit",
            message=lim.explain(limit, sandbox=f"{kind}: {text}"),
        )
    return ScriptOutcome(
        "script_error",
        sha,
        printed=printed,
        where="code_mode.sandbox",
        message=_sandbox_rejected(text) or exc.display("traceback")[-_TRACEBACK_CHARS:],
    )


_INTERNAL = "Internal error in monty: "


def _sandbox_rejected(text: str) -> str | None:
    """A clean script error for pydantic-monty's internal errors (a construct the sandbox does not
    support, e.g. ``raise ValueError(open)``), without the interpreter's internals; else ``None``."""
    at = text.find(_INTERNAL)
    if at < 0:
        return None
    rest = text[at + len(_INTERNAL):].strip()
    why = rest.splitlines()[0] if rest else "a construct it does not support"
    return f"the sandbox rejected the script: {why}; the sandbox runs a subset of Python, so rewrite that statement"


def _finish(value: Any, sha: str, printed: str, lim: ScriptLimits) -> ScriptOutcome:
    try:
        size = len(json.dumps(value, default=repr, ensure_ascii=False).encode())
    except (TypeError, ValueError) as exc:
        return ScriptOutcome(
            "script_error",
            sha,
            printed=printed,
            where="code_mode.output",
            message=f"the script's result is not JSON-shaped ({exc}); return dicts, lists, strings and numbers",
        )
    if size > lim.max_output_bytes:
        return ScriptOutcome(
            "limit_exceeded",
            sha,
            printed=printed,
            limit="output",
            where="code_mode.limit",
            message=lim.explain("output", size=size),
        )
    return ScriptOutcome("ok", sha, value=value, printed=printed)
