"""Session taint: which data-flow labels the results seen so far carried, and the trifecta rule.

Per session (an HTTP session, a stdio connection, a conversation id of the library loop, one
code-mode script), :class:`SessionTaint` records each result delivered to the caller with the
labels of the tool that produced it (:mod:`registry.safety.flow`). Before an *egress* call runs,
:meth:`SessionTaint.check` answers the rule: when the session has already seen both a
*private-source* result and an *untrusted-source* result (possibly the same result, e.g. an inbox),
the call gets the rule's decision — ``allow``, ``approve`` (the default: an approval naming the
labels and the calls behind them) or ``deny`` — with its reasons. Otherwise it is ``allow`` and
``triggered`` is false. Source: the "lethal trifecta" (https://simonwillison.net/2025/Jun/16/the-lethal-trifecta/).

State machine per session::

    clean ──private result──▶ private ──untrusted result──▶ tainted
      │                                                        ▲
      └──untrusted result──▶ untrusted ──private result────────┘
    (an egress call is decided by the rule only in ``tainted``; results never untaint a session)

A result is recorded when it is handed back (also an error result: its text reached the model).
Calls of one batch run in parallel, so an egress call may be checked before or after a sibling's
result is recorded; the check uses what has been recorded at that moment.

Memory: at most :data:`MAX_CALLS_KEPT` source calls are kept per label (the first ones; counts keep
growing); :class:`TaintTracker` keeps at most ``max_sessions`` sessions (least recently used go).
Pure: no I/O, no clock.
"""

from __future__ import annotations

import enum
from collections import OrderedDict
from collections.abc import Iterable
from dataclasses import dataclass, field

from pydantic import BaseModel, ConfigDict

from registry.safety.flow import FlowLabels, Label

__all__ = [
    "CONFIG_RULE",
    "MAX_CALLS_KEPT",
    "TAINT_MENTION",
    "SeenCall",
    "SessionTaint",
    "TaintDecision",
    "TaintRule",
    "TaintTracker",
    "TaintVerdict",
]

CONFIG_RULE = "config"
""":attr:`TaintVerdict.rule` when the config rule (``toolhost.taint``) decided, not a grant."""

TAINT_MENTION = "taint: "
"""What an approval's reason text starts its session-taint part with (``"<policy rule>; taint: <reasons>"``):
only an approval whose text holds it lifts a taint hold."""

MAX_CALLS_KEPT = 16
"""Source calls remembered per label and session (for the reasons); later ones are only counted."""


class TaintDecision(str, enum.Enum):
    """What happens to an egress call in a tainted session."""

    ALLOW = "allow"
    APPROVE = "approve"
    DENY = "deny"


class TaintRule(BaseModel):
    """The trifecta rule as configured (``{"decision": "approve"}``; the grant model holds it)."""

    model_config = ConfigDict(frozen=True, extra="forbid")

    decision: TaintDecision = TaintDecision.APPROVE


@dataclass(frozen=True)
class SeenCall:
    """A result the session has seen: call id, tool (qualified name), its labels, position (1-based)."""

    call_id: str
    tool: str
    labels: frozenset[Label]
    seq: int

    def describe(self) -> str:
        """``#2 fetch__fetch (call c2)``."""
        return f"#{self.seq} {self.tool} (call {self.call_id})"


@dataclass(frozen=True)
class TaintVerdict:
    """The rule's answer for one call.

    Attributes:
        decision: ``allow`` when the rule does not apply, else the configured decision.
        triggered: the call is egress and the session has seen private and untrusted results.
        private_calls, untrusted_calls: the recorded calls behind each label (first ones).
        reasons: one line each: which calls carried which labels and why the call is egress.
        rule: what set ``decision``: ``"config"`` (``toolhost.taint``) or the grant's rule id
            (``"allow:web__*@role:ops"``, see :mod:`registry.permissions`).
    """

    decision: TaintDecision
    triggered: bool
    private_calls: tuple[SeenCall, ...] = ()
    untrusted_calls: tuple[SeenCall, ...] = ()
    reasons: tuple[str, ...] = ()
    rule: str = CONFIG_RULE

    @property
    def decided_by(self) -> str:
        """``the config rule toolhost.taint`` or ``grant allow:web__*@role:ops``."""
        return "the config rule toolhost.taint" if self.rule == CONFIG_RULE else f"grant {self.rule}"

    def message(self, tool: str) -> str:
        """The model-facing text for a held or refused call (clear and actionable)."""
        if not self.triggered:
            return ""
        what = "needs an approval" if self.decision is TaintDecision.APPROVE else "was refused"
        return (f"The call to {tool} {what}: this session has read private data and untrusted content, and "
                f"{tool} can send data out. " + " ".join(self.reasons) + f" Decided by {self.decided_by}." +
                (" Ask the user to approve it, or continue without sending data out."
                 if self.decision is TaintDecision.APPROVE else
                 " Start a new session for tasks that send data out, or ask an admin to change the rule."))


def _labels(labels: FlowLabels | Iterable[Label]) -> frozenset[Label]:
    return labels.labels if isinstance(labels, FlowLabels) else frozenset(labels)


@dataclass
class SessionTaint:
    """The taint state of one session (module docstring)."""

    session_id: str
    seen: int = 0
    private_count: int = 0
    untrusted_count: int = 0
    private_calls: list[SeenCall] = field(default_factory=list)
    untrusted_calls: list[SeenCall] = field(default_factory=list)

    @property
    def state(self) -> str:
        """``clean``, ``private``, ``untrusted`` or ``tainted``."""
        if self.private_count and self.untrusted_count:
            return "tainted"
        return "private" if self.private_count else "untrusted" if self.untrusted_count else "clean"

    def record_result(self, call_id: str, tool: str, labels: FlowLabels | Iterable[Label]) -> SeenCall:
        """Record that the result of ``call_id`` (tool ``tool``, carrying ``labels``) was handed back."""
        self.seen += 1
        call = SeenCall(call_id, tool, _labels(labels), self.seen)
        if Label.PRIVATE_SOURCE in call.labels:
            self.private_count += 1
            if len(self.private_calls) < MAX_CALLS_KEPT:
                self.private_calls.append(call)
        if Label.UNTRUSTED_SOURCE in call.labels:
            self.untrusted_count += 1
            if len(self.untrusted_calls) < MAX_CALLS_KEPT:
                self.untrusted_calls.append(call)
        return call

    def check(self, call_id: str, tool: str, labels: FlowLabels | Iterable[Label], rule: TaintRule | None = None,
              source: str = CONFIG_RULE) -> TaintVerdict:
        """The rule's verdict for calling ``tool`` now (``labels``: that tool's labels; ``source``:
        what set ``rule``, :attr:`TaintVerdict.rule`)."""
        rule = rule or TaintRule()
        mine = _labels(labels)
        if Label.EGRESS not in mine or self.state != "tainted":
            return TaintVerdict(TaintDecision.ALLOW, False)
        why_egress = labels.reasons.get(Label.EGRESS) if isinstance(labels, FlowLabels) else None

        def listed(calls: list[SeenCall], count: int) -> str:
            more = f" and {count - len(calls)} more" if count > len(calls) else ""
            return ", ".join(c.describe() for c in calls) + more

        reasons = (
            f"Private data came from {listed(self.private_calls, self.private_count)}.",
            f"Untrusted content came from {listed(self.untrusted_calls, self.untrusted_count)}.",
            f"{tool} (call {call_id}) is egress" + (f" ({why_egress})." if why_egress else "."),
        )
        return TaintVerdict(rule.decision, True, tuple(self.private_calls), tuple(self.untrusted_calls), reasons,
                            source)


class TaintTracker:
    """Taint states by session id, at most ``max_sessions`` (least recently used dropped first)."""

    def __init__(self, max_sessions: int = 10_000) -> None:
        if max_sessions < 1:
            raise ValueError(f"max_sessions must be at least 1, got {max_sessions}")
        self.max_sessions = max_sessions
        self._sessions: OrderedDict[str, SessionTaint] = OrderedDict()

    def session(self, session_id: str) -> SessionTaint:
        """The state of ``session_id`` (created clean on first use)."""
        state = self._sessions.get(session_id)
        if state is None:
            state = self._sessions[session_id] = SessionTaint(session_id)
            while len(self._sessions) > self.max_sessions:
                self._sessions.popitem(last=False)
        else:
            self._sessions.move_to_end(session_id)
        return state

    def end(self, session_id: str) -> None:
        """Forget a session (it ended)."""
        self._sessions.pop(session_id, None)

    def end_matching(self, prefix: str) -> list[str]:
        """Forget every session whose id starts with ``prefix``; their ids."""
        ended = [sid for sid in self._sessions if sid.startswith(prefix)]
        for sid in ended:
            del self._sessions[sid]
        return ended

    def __len__(self) -> int:
        return len(self._sessions)
