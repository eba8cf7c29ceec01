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
* ``resources/read`` / ``prompts/get`` content that reached the caller: :meth:`TaintStage.record_content`
  with :meth:`TaintStage.catalog_labels` (:mod:`registry.safety.catalog_flow`).
* a ``sampling/createMessage`` an upstream makes during a call (:meth:`TaintStage.sampling_gate`):
  the model's answer goes to that upstream, so it is egress. In a tainted session the rule decides
  as for an egress call: ``allow`` lets it through; ``deny`` and ``approve`` refuse it with the
  reasons (a sampling request cannot wait for an approval: the upstream's call is waiting on it).
  Triggered verdicts are :class:`TaintEvent` s with outcome ``sampling_allowed`` / ``sampling_refused``
  (:meth:`TaintStage.sampling_verdict` for a request that is not a tool call, e.g. ``prompts/get``).
* a tainted session dropped to bound memory (:class:`registry.safety.TaintTracker`): logged, and
  every drop listener (:meth:`TaintStage.subscribe_drops`, the audit) is told.

Session ids (:attr:`host.pipeline.CallContext.session_id`, else its ``conversation_id``): one per
HTTP session / stdio connection in the gateway, the conversation id in the library loop.
"""

from __future__ import annotations

import logging
from collections.abc import Awaitable, Callable, Iterable
from dataclasses import dataclass

from host.upstream.relay import SampleGate
from registry.policy import Decision, Principal
from registry.safety import DropListener, FlowLabels, Label, SessionTaint, TaintCheck, TaintDecision, TaintVerdict
from registry.safety.taint import CONFIG_RULE, TaintRule
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
            (waiting for a human), ``approved`` (an approval let it run), ``rejected`` (a human
            refused it), ``sampling_allowed`` / ``sampling_refused`` (a sampling request the
            upstream of call ``call_id`` made).
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
        self.drop_listeners: list[DropListener] = []
        guard.watch_drops(self._dropped)

    def subscribe_drops(self, listener: DropListener) -> None:
        """Tell ``listener(state, reason)`` of every tainted session dropped to bound memory."""
        self.drop_listeners.append(listener)

    def _dropped(self, state: SessionTaint, reason: str) -> None:
        _logger.warning("toolhost: taint session %s (%s) was dropped: %s; its next call starts clean",
                        state.session_id, state.state, reason)
        for listener in list(self.drop_listeners):
            try:
                listener(state, reason)
            except Exception:  # an audit failure never decides a call
                _logger.exception("toolhost: a taint drop listener failed for session %s", state.session_id)

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

    def catalog_labels(self, server: str, kind: str, uri: str | None, tools: Iterable[ToolRecord]) -> FlowLabels:
        """The labels of a ``resources/read`` (``kind`` ``resource``, ``uri`` upstream) or
        ``prompts/get`` (``prompt``) of ``server``; ``tools``: the registry's records."""
        return self.guard.catalog_labels(server, kind, uri, tools)

    def record_content(self, session_id: str, request_id: str, name: str, labels: FlowLabels) -> None:
        """Content ``name`` (an exposed resource URI or prompt name) carrying ``labels`` reached the
        caller of ``session_id``."""
        self.guard.record_content(session_id, request_id, name, labels)

    def sampling_verdict(self, session_id: str, request_id: str, server: str, decision: Decision | None = None
                         ) -> tuple[TaintVerdict, str | None]:
        """The rule's verdict on a ``sampling/createMessage`` ``server`` makes while serving request
        ``request_id`` in ``session_id`` (the grant's rule, ``decision.taint``, else the config rule),
        and the refusal text (``None``: it may go through)."""
        rule, source = ((TaintRule(decision=decision.taint), decision.taint_rule or "grant")
                        if decision is not None and decision.taint is not None else (None, CONFIG_RULE))
        why = (f"a sampling request server {server!r} made during call {request_id} would send the "
               "model's answer to that server")
        labels = FlowLabels(False, False, True, {Label.EGRESS: why})
        verdict = self.guard.check_labels(session_id, request_id, f"sampling/createMessage by {server}", labels,
                                          rule, source)
        if not verdict.triggered or verdict.decision is TaintDecision.ALLOW:
            return verdict, None
        return verdict, (
            f"toolhost: sampling refused: this session has read private data and untrusted content, and {why}. "
            + " ".join(verdict.reasons[:2]) + f" Decided by {verdict.decided_by} ({verdict.decision.value}; a "
            "sampling request cannot wait for an approval). Continue without sampling, start a new session, or "
            "ask an admin to set the rule to allow.")

    def sampling_gate(self, principal: Principal, session_id: str, call_id: str, record: ToolRecord,
                      decision: Decision | None = None) -> SampleGate:
        """The :data:`host.upstream.relay.SampleGate` of call ``call_id`` (of ``record``) in
        ``session_id``: :meth:`sampling_verdict`, each triggered one a :class:`TaintEvent`."""

        async def gate(server: str) -> str | None:
            verdict, refusal = self.sampling_verdict(session_id, call_id, server, decision)
            if verdict.triggered:
                await self.decided(TaintEvent(principal, session_id, call_id, record, verdict,
                                              "sampling_refused" if refusal else "sampling_allowed"))
            return refusal

        return gate

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
