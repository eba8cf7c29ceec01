"""The session-taint stage of the call path: the trifecta rule after the policy allowed a call.

:class:`TaintStage` wraps a :class:`registry.safety.TaintCheck` (a
:class:`registry.safety.FlowGuard` in production) for the pipeline:

* authorize stage (:func:`host.pipeline.prepare.prepare_call`), after the policy allowed the call
  and its arguments validated: :meth:`TaintStage.check`. An *egress* call in a session that has
  seen a *private-source* and an *untrusted-source* result gets the rule's decision
  (the caller's grants' ``taint`` for that tool, see :mod:`registry.permissions`, else the config
  ``toolhost.taint``, default ``approve``): ``deny`` → a ``permission_denied`` result with
  :meth:`registry.safety.TaintVerdict.message` and the calls behind it in ``details``; ``approve`` →
  the pipeline's approval hook is asked with the reasons (no hook: ``approval_required``); ``allow``
  → the call runs. Every triggered verdict is a :class:`TaintEvent` handed to each listener (the
  audit row ``action="taint"``, the console event).
* execute stage: the result of every call that ran is recorded (:meth:`TaintStage.record_result`),
  also an error result (its text reached the model). Calls refused before running record nothing.
* a session that ends (its connection closed): :meth:`TaintStage.end_session`.

Session ids (:attr:`host.pipeline.CallContext.session_id`, else its ``conversation_id``): one per
HTTP session / stdio connection in the gateway, the conversation id in the library loop.
"""

from __future__ import annotations

import logging
from collections.abc import Awaitable, Callable, Iterable
from dataclasses import dataclass

from registry.policy import Decision, Principal
from registry.safety import FlowLabels, TaintCheck, TaintVerdict
from registry.safety.taint import TaintRule
from registry.tool import ToolRecord

__all__ = ["TaintEvent", "TaintListener", "TaintStage"]

_logger = logging.getLogger("toolhost.pipeline")

TaintListener = Callable[["TaintEvent"], Awaitable[None]]
"""``async listener(event)``: told of every triggered taint verdict (audit row, console event)."""


@dataclass(frozen=True)
class TaintEvent:
    """One triggered taint verdict and what became of the call.

    Attributes:
        principal: the caller.
        session_id: the taint session.
        call_id: the egress call.
        tool: the egress tool (registry record).
        verdict: the rule's verdict (decision, the calls behind it, reasons).
        outcome: ``allowed`` (rule ``allow``), ``denied`` (rule ``deny``), ``approval_required``
            (waiting for a human), ``approved`` (an approval let it run) or ``rejected`` (a human
            refused it).
        approval_id: the approval asked for (``approve`` only).
    """

    principal: Principal
    session_id: str
    call_id: str
    tool: ToolRecord
    verdict: TaintVerdict
    outcome: str
    approval_id: str | None = None

    def detail(self) -> str:
        """One line for the audit row / console: ``approval_required: Private data came from …``."""
        return f"{self.outcome}: " + " ".join(self.verdict.reasons)


class TaintStage:
    """The call path's view of session taint (module docstring).

    Args:
        guard: labels + per-session taint (:class:`registry.safety.FlowGuard`).
        listeners: told of every triggered verdict, in order; a failing listener is logged and
            never fails the call.
    """

    def __init__(self, guard: TaintCheck, listeners: Iterable[TaintListener] = ()) -> None:
        self.guard = guard
        self.listeners: list[TaintListener] = list(listeners)

    def subscribe(self, listener: TaintListener) -> Callable[[], None]:
        """Add ``listener``; returns a function that removes it."""
        self.listeners.append(listener)
        return lambda: self.listeners.remove(listener) if listener in self.listeners else None

    def check(self, session_id: str, call_id: str, record: ToolRecord, decision: Decision | None = None
              ) -> TaintVerdict:
        """The verdict for ``record`` now in ``session_id`` (O(1) after the first label derivation):
        the rule the caller's grants set (``decision.taint``, :mod:`registry.permissions`), else
        the config rule."""
        if decision is not None and decision.taint is not None:
            return self.guard.check(session_id, call_id, record, TaintRule(decision=decision.taint),
                                    decision.taint_rule or "grant")
        return self.guard.check(session_id, call_id, record)

    def labels(self, record: ToolRecord) -> FlowLabels:
        """The data-flow labels of ``record`` (:func:`registry.safety.derive_labels`, cached)."""
        return self.guard.labels(record)

    def record_result(self, session_id: str, call_id: str, record: ToolRecord) -> None:
        """The result of ``call_id`` reached the caller of ``session_id``."""
        self.guard.record_result(session_id, call_id, record)

    def end_session(self, session_id: str) -> None:
        """Forget ``session_id`` (its connection closed)."""
        self.guard.end_session(session_id)

    def end_sessions(self, prefix: str) -> list[str]:
        """Forget every session whose id starts with ``prefix`` (an admin's reset); their ids."""
        return self.guard.end_sessions(prefix)

    async def decided(self, event: TaintEvent) -> None:
        """Tell every listener about ``event``."""
        for listener in list(self.listeners):
            try:
                await listener(event)
            except Exception:  # an audit/console failure never decides a call
                _logger.exception("toolhost: a taint listener failed for call %s", event.call_id)
