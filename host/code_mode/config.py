"""Code mode's pool size, limits and timeouts (the config model; the config-file key is wired by the gateway).

Two clocks bound a script (pydantic-monty's execution clock stops while the guest awaits a host
call, https://github.com/pydantic/monty ``ResourceLimits``): :attr:`ScriptLimits.cpu_seconds` is
sandbox execution time, :attr:`ScriptLimits.wall_clock_seconds` is real time including inner calls.
"""

from __future__ import annotations

import os
from dataclasses import asdict, dataclass, field
from typing import Any

from host.code_mode.script_run import SCRIPT_TOOL

__all__ = ["CodeModeConfig", "PoolConfig", "ScriptLimits"]

_RAISE = "or ask an operator to raise the limit"
_EXPLAIN = {
    # limit: (field, what was exceeded, what to do)
    "wall_clock": ("wall_clock_seconds", "the script ran longer than {v:g} s of wall-clock time (counted from when"
                   " it got its sandbox worker, inner calls included)", "make fewer or faster tool calls per script"),
    "cpu_time": ("cpu_seconds", "the script used more than {v:g} s of CPU time in the sandbox",
                 "look for an endless loop and do heavy filtering in the tool call, not in the script"),
    "memory": ("max_memory_bytes", "the script needed more than {v} bytes of memory",
               "build smaller values: handle items one at a time and keep only what the result needs"),
    "print": ("max_print_bytes", "the script printed more than {v} bytes",
              "print less: return a summary as the script's result instead"),
    "recursion": ("max_recursion_depth", "the script recursed deeper than {v} calls",
                  "use a loop instead of recursion"),
    "inner_calls": ("max_inner_calls", "the script made more than {v} tool calls",
                    "batch the work: fewer items per script, or a tool that takes a list"),
    "output": ("max_output_bytes", "the script's result is {size} bytes, more than {v}",
               "return a summary, not the raw data"),
}


@dataclass(frozen=True)
class ScriptLimits:
    """What one script may use. Every limit, when hit, ends the run with ``status="limit_exceeded"``.

    Attributes:
        wall_clock_seconds: real time from start to result, inner calls included (s).
        cpu_seconds: sandbox execution time, waits on the host excluded (monty ``max_feed_duration_secs``).
        max_memory_bytes: sandbox heap (monty ``max_memory``); covers allocation bombs.
        max_recursion_depth: call-stack depth (monty ``max_recursion_depth``).
        max_inner_calls: tool calls per script (counted by toolhost; the next one is refused and the run ends).
        max_output_bytes: JSON size of the script's result value (bytes).
        max_print_bytes: ``print()`` output kept (bytes; monty ``CollectString``; more fails the run).
        gc_interval: run the sandbox's garbage collector every N allocations (monty ``gc_interval``; None: monty
        default).
    """

    wall_clock_seconds: float = 30.0
    cpu_seconds: float = 10.0
    max_memory_bytes: int = 64 * 1024 * 1024
    max_recursion_depth: int = 200
    max_inner_calls: int = 100
    max_output_bytes: int = 1024 * 1024
    max_print_bytes: int = 64 * 1024
    gc_interval: int | None = None

    def __post_init__(self) -> None:
        for name in (
            "wall_clock_seconds",
            "cpu_seconds",
            "max_memory_bytes",
            "max_recursion_depth",
            "max_inner_calls",
            "max_output_bytes",
            "max_print_bytes",
        ):
            if getattr(self, name) <= 0:
                raise ValueError(f"code mode limit {name} must be > 0, got {getattr(self, name)!r}")

    def explain(self, limit: str, *, size: int = 0, sandbox: str = "") -> str:
        """The error message for ``limit`` (a :data:`host.code_mode.outcome.ScriptOutcome.limit` name):
        what was exceeded, the config key and its value, and what to do; ``sandbox``: the sandbox's own
        text, appended for diagnosis; ``size``: the result size for ``output`` (bytes).

        Example: ``the script used more than 10 s of CPU time in the sandbox
        (toolhost.code_mode.limits.cpu_seconds = 10); look for an endless loop ...``.
        """
        key, what, fix = _EXPLAIN[limit]
        value = getattr(self, key)
        text = what.format(v=value, size=size)
        shown = f"{value:g}" if isinstance(value, float) else str(value)
        message = f"{text} (toolhost.code_mode.limits.{key} = {shown}); {fix}, {_RAISE}"
        return f"{message} [sandbox: {sandbox}]" if sandbox else message

    def monty_limits(self) -> dict[str, float | int | None]:
        """The pydantic-monty ``ResourceLimits`` dict for one checkout.

        ``max_suspensions`` (monty's own count of host calls, name lookups and future resolutions) is a
        backstop set well above :attr:`max_inner_calls`: toolhost counts the calls itself.
        """
        limits: dict[str, float | int | None] = {
            "max_feed_duration_secs": self.cpu_seconds,
            "max_memory": self.max_memory_bytes,
            "max_recursion_depth": self.max_recursion_depth,
            "max_suspensions": 4 * self.max_inner_calls + 100,
            "max_total_sleep_secs": self.wall_clock_seconds,
        }
        if self.gc_interval is not None:
            limits["gc_interval"] = self.gc_interval
        return limits


@dataclass(frozen=True)
class PoolConfig:
    """The worker processes (pydantic-monty's ``monty subprocess`` workers, an empty environment each).

    Attributes:
        min_workers: kept warm (spawned at start).
        max_workers: most live workers, the pool size; more scripts wait (default: CPU count, at most 4).
        max_scripts_per_caller: most scripts one caller (API key; an anonymous caller's session,
            else the user) has running or waiting; one more is refused ``rate_limited`` (default:
            half the pool, at least 1).
        max_queued_scripts: most scripts waiting for a worker; one more is refused ``rate_limited``
            (default: twice the pool).
        max_anonymous_scripts: most scripts all anonymous sessions have running or waiting together;
            one more is refused ``rate_limited`` (default: the pool size plus ``max_queued_scripts``).
        checkout_timeout_seconds: how long a queued script waits for a worker before it fails (s);
            a script's wall clock starts only when it has its worker.
        turn_timeout_seconds: parent-side deadline of one sandbox turn (between host calls); a worker
            past it is killed (monty ``request_timeout``; a backstop above ``cpu_seconds``).
        max_scripts_per_worker: recycle a worker after this many scripts.
    """

    min_workers: int = 1
    max_workers: int = field(default_factory=lambda: max(1, min(4, os.cpu_count() or 1)))
    max_scripts_per_caller: int = 0
    max_queued_scripts: int = 0
    max_anonymous_scripts: int = 0
    checkout_timeout_seconds: float = 10.0
    turn_timeout_seconds: float = 15.0
    max_scripts_per_worker: int = 200

    def __post_init__(self) -> None:
        if not 0 <= self.min_workers <= self.max_workers or self.max_workers < 1:
            raise ValueError(
                f"code mode pool needs 0 <= min_workers <= max_workers >= 1, got {self.min_workers}, {self.max_workers}"
            )
        if min(self.max_scripts_per_caller, self.max_queued_scripts, self.max_anonymous_scripts) < 0:
            raise ValueError("code mode pool: max_scripts_per_caller, max_queued_scripts and max_anonymous_scripts "
                             "must be >= 0 (0: default)")
        if not self.max_scripts_per_caller:  # 0: the default, resolved so the config views show the value
            object.__setattr__(self, "max_scripts_per_caller", max(1, self.max_workers // 2))
        if not self.max_queued_scripts:
            object.__setattr__(self, "max_queued_scripts", 2 * self.max_workers)
        if not self.max_anonymous_scripts:
            object.__setattr__(self, "max_anonymous_scripts", self.max_workers + self.max_queued_scripts)


@dataclass(frozen=True)
class CodeModeConfig:
    """Code mode as a whole: ``enabled`` (off until the gateway wiring lands), the pool and the limits."""

    enabled: bool = False
    pool: PoolConfig = field(default_factory=PoolConfig)
    limits: ScriptLimits = field(default_factory=ScriptLimits)

    def describe(self, *, running: int = 0, queued: int = 0) -> dict[str, Any]:
        """``{"tool": "execute", "pool": {...}, "limits": {...}, "running": n, "queued": n}``: the admin
        API's and ``toolhost servers``' view (pool and limits as in effect; ``running``/``queued``:
        scripts holding/waiting for a worker now)."""
        return {"tool": SCRIPT_TOOL, "pool": asdict(self.pool), "limits": asdict(self.limits),
                "running": running, "queued": queued}
