"""Audit rows of a script's inner calls that toolhost refused before the pipeline saw them.

An inner call the pipeline ran has its own audit row from :meth:`host.runtime.HostRuntime.call`.
Three kinds never reach it, and :func:`audit_refused` gives each one a row of its own after the
script ends (tool = the name the script asked for, arguments = what the script passed, redacted like
every row's, ``detail`` = the step's
:meth:`host.code_mode.script_run.InnerStep.audit_detail` plus the reason):

=====================  ==================================================================
status                 when
=====================  ==================================================================
``not_in_manifest``    a name the manifest does not hold (e.g. built at run time for
                       ``call_tool``): refused with ``PermissionError``/``NameError``
``limit_exceeded``     the one call past ``toolhost.code_mode.limits.max_inner_calls``:
                       refused, and the run ends
``not_executed``       a call the script made but that never started because the run
                       ended first (a limit, a crash, a cancel)
=====================  ==================================================================

One row per refused call, so ``toolhost audit`` shows each attempt: a script can refuse at most
``max_inner_calls + 1`` of them (every call it starts counts towards the limit).
"""

from __future__ import annotations

import logging
from collections.abc import Iterable
from typing import TYPE_CHECKING

import anyio

from host.code_mode.outcome import InnerCallRecord
from host.code_mode.script_run import InnerStep, ScriptRun
from host.store import AuditUnavailable
from registry.policy import Principal

if TYPE_CHECKING:
    from host.runtime import HostRuntime

__all__ = ["REFUSED_REASONS", "audit_refused"]

REFUSED_REASONS = {
    "not_in_manifest": "refused: not in the script's capability manifest",
    "limit_exceeded": "refused: past toolhost.code_mode.limits.max_inner_calls",
    "not_executed": "not started: the script ended first",
}
"""``{status: the reason appended to the row's detail}`` (short: the audit keeps 200 characters)."""

_MAX_NAME = 200
_logger = logging.getLogger("toolhost.code_mode")


async def audit_refused(runtime: HostRuntime, principal: Principal, run: ScriptRun,
                        calls: Iterable[InnerCallRecord]) -> None:
    """One audit row per refused inner call of ``run`` (module doc); nothing without an auditor.

    Never raises for the audit log: a row it could not take in time stays queued (as for every
    call) and is logged; nothing ran, so the script's answer does not change.
    """
    if runtime.auditor is None:
        return
    snapshot = runtime.registry.snapshot()
    with anyio.CancelScope(shield=True):
        for call in calls:
            reason = REFUSED_REASONS.get(call.status)
            if reason is None:
                continue
            name = call.name[:_MAX_NAME]
            try:
                await runtime.auditor.audit_call_async(
                    principal, name, call.arguments or {}, timeout=runtime.config.defaults.audit_wait_seconds,
                    status=call.status, duration_seconds=0.0, tool=snapshot.get(name), decision=None,
                    detail=f"{InnerStep(run, call.step).audit_detail()}; {reason}",
                )
            except AuditUnavailable:
                _logger.warning("toolhost: the audit row of %s (refused inner call) is queued, not yet written",
                                InnerStep(run, call.step).call_id)
