"""The result of one script run: what the gateway returns to the model and writes to the audit row."""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Any, Literal

__all__ = ["InnerCallRecord", "OutcomeStatus", "ScriptOutcome"]

OutcomeStatus = Literal["ok", "script_error", "limit_exceeded", "crashed", "rejected", "busy", "rate_limited"]
"""``ok``: a value; ``script_error``: an uncaught exception in the script; ``limit_exceeded``: a
:class:`~host.code_mode.config.ScriptLimits` limit (named in ``limit``); ``crashed``: the worker died
(it was replaced); ``rejected``: the script does not match its manifest; ``busy``: no worker free in time;
``rate_limited``: the caller is over its share of the pool or the queue is full (both with ``retry_after``)."""


@dataclass(frozen=True)
class InnerCallRecord:
    """One inner call: ``step`` (0-based), qualified ``name``, result ``status`` (a ResultStatus value,
    or ``not_in_manifest``/``limit_exceeded``/``not_executed`` when toolhost refused it before the
    InnerCaller, see :mod:`host.code_mode.refused`), ``seconds``; ``arguments``: what the script passed,
    kept only for a refused call (it has no pipeline audit row of its own, so its refusal row carries them;
    ``None`` otherwise)."""

    step: int
    name: str
    status: str
    seconds: float
    arguments: dict[str, Any] | None = None


@dataclass(frozen=True)
class ScriptOutcome:
    """How a script ended.

    Attributes:
        status: see :data:`OutcomeStatus`.
        script_sha256: hex sha256 of the script that ran.
        value: the script's trailing expression (JSON-shaped) when ``ok``.
        printed: ``print()`` output (at most ``max_print_bytes``).
        message: for every status but ``ok``: what happened and how to fix it.
        where: the stage, e.g. ``code_mode.sandbox``, ``code_mode.limit``, ``code_mode.manifest``.
        limit: the limit hit (``wall_clock``, ``cpu_time``, ``memory``, ``recursion``, ``inner_calls``,
            ``output``, ``print``; ``cancelled`` when the run was cancelled from outside) when ``limit_exceeded``.
        calls: every inner call, in start order.
        seconds: wall-clock time of the run.
        worker_pid: the worker process that ran it (diagnostics).
        retry_after: for ``busy`` and ``rate_limited``: seconds after which a retry may be admitted.
    """

    status: OutcomeStatus
    script_sha256: str
    value: Any = None
    printed: str = ""
    message: str = ""
    where: str = ""
    limit: str | None = None
    calls: tuple[InnerCallRecord, ...] = field(default_factory=tuple)
    seconds: float = 0.0
    worker_pid: int | None = None
    retry_after: float | None = None

    @property
    def ok(self) -> bool:
        """True when the script returned a value."""
        return self.status == "ok"
