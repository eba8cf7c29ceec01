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
growing); :class:`TaintTracker` keeps at most ``max_per_owner`` sessions per caller and
``max_sessions`` in all, dropping clean ones first and reporting every tainted one it drops.
Pure: no I/O, no clock.
"""

from __future__ import annotations

import enum
from collections import OrderedDict
from collections.abc import Callable, Iterable
from dataclasses import dataclass, field

from pydantic import BaseModel, ConfigDict

from registry.safety.flow import FlowLabels, Label

__all__ = [
    "CONFIG_RULE",
    "MAX_CALLS_KEPT",
    "DropListener",
    "TAINT_MENTION",
    "SeenCall",
    "SessionTaint",
    "TaintDecision",
    "TaintRule",
    "TaintTracker",
    "TaintVerdict",
    "owner_of",
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


DropListener = Callable[[SessionTaint, str], None]
"""``listener(state, reason)``: told of every session :class:`TaintTracker` drops that was not clean."""


def owner_of(session_id: str) -> str:
    """Whose session ``session_id`` is, for the per-owner bound: a gateway's stateless session
    ``caller:<user>:<key id>[:<conversation>]`` belongs to ``caller:<user>:<key id>``; any other
    id (a connection, a conversation of the library loop) to itself."""
    if session_id.startswith("caller:"):
        return ":".join(session_id.split(":", 3)[:3])
    return session_id


class TaintTracker:
    """Taint states by session id, bounded per owner and in total, never losing a taint silently.

    * at most ``max_per_owner`` sessions per owner (:func:`owner_of`): a caller that opens more
      (e.g. a new ``_meta["toolhost/session"]`` per request) loses its **own** least recently used
      session, a clean one first; other callers' sessions are never touched by its flood;
    * at most ``max_sessions`` in total: the least recently used *clean* session goes first (a
      clean session is the same as a new one: nothing is lost); when the oldest have all seen a
      source, the owner holding the most sessions loses its least recently used one (when every
      owner holds one, the least recently used session goes).

    Every dropped session that was not clean is told to each drop listener
    (:meth:`watch_drops`) with the reason, so it is logged and audited, never silent.

    Raises:
        ValueError: a bound below 1.
    """

    def __init__(self, max_sessions: int = 10_000, *, max_per_owner: int = 256) -> None:
        if max_sessions < 1:
            raise ValueError(f"max_sessions must be at least 1, got {max_sessions}")
        if max_per_owner < 1:
            raise ValueError(f"max_per_owner must be at least 1, got {max_per_owner}")
        self.max_sessions = max_sessions
        self.max_per_owner = max_per_owner
        self._sessions: OrderedDict[str, SessionTaint] = OrderedDict()
        self._owners: dict[str, OrderedDict[str, None]] = {}
        self._listeners: list[DropListener] = []

    def watch_drops(self, listener: DropListener) -> None:
        """Tell ``listener`` of every session dropped for room that had seen a source."""
        self._listeners.append(listener)

    def session(self, session_id: str) -> SessionTaint:
        """The state of ``session_id`` (created clean on first use; may drop another, see class)."""
        state = self._sessions.get(session_id)
        owner = owner_of(session_id)
        if state is not None:
            self._sessions.move_to_end(session_id)
            self._owners[owner].move_to_end(session_id)
            return state
        state = self._sessions[session_id] = SessionTaint(session_id)
        mine = self._owners.setdefault(owner, OrderedDict())
        mine[session_id] = None
        if len(mine) > self.max_per_owner:
            self._drop(self._oldest(mine, keep=session_id),
                       f"its caller {owner} opened more than {self.max_per_owner} taint sessions")
        if len(self._sessions) > self.max_sessions:
            victim = self._oldest_clean(keep=session_id)
            if victim is None:
                biggest = max(self._owners.values(), key=len)
                victim = self._oldest(biggest if len(biggest) > 1 else self._order(), keep=session_id)
            self._drop(victim, f"toolhost keeps at most {self.max_sessions} taint sessions")
        return state

    def _order(self) -> OrderedDict[str, None]:
        return OrderedDict.fromkeys(self._sessions)

    def _oldest(self, ids: OrderedDict[str, None], *, keep: str) -> str:
        """The least recently used clean id of ``ids`` (else the least recently used), never ``keep``."""
        first = None
        for sid in ids:
            if sid == keep:
                continue
            if self._sessions[sid].state == "clean":
                return sid
            first = first or sid
        assert first is not None
        return first

    def _oldest_clean(self, *, keep: str, scan: int = 256) -> str | None:
        for i, (sid, state) in enumerate(self._sessions.items()):
            if i >= scan:
                return None
            if sid != keep and state.state == "clean":
                return sid
        return None

    def _drop(self, session_id: str, reason: str) -> None:
        state = self._forget(session_id)
        if state is not None and state.state != "clean":
            for listener in list(self._listeners):
                listener(state, reason)

    def _forget(self, session_id: str) -> SessionTaint | None:
        state = self._sessions.pop(session_id, None)
        owner = owner_of(session_id)
        mine = self._owners.get(owner)
        if mine is not None:
            mine.pop(session_id, None)
            if not mine:
                del self._owners[owner]
        return state

    def end(self, session_id: str) -> None:
        """Forget a session (it ended)."""
        self._forget(session_id)

    def end_matching(self, prefix: str) -> list[str]:
        """Forget every session whose id starts with ``prefix``; their ids."""
        ended = [sid for sid in self._sessions if sid.startswith(prefix)]
        for sid in ended:
            self._forget(sid)
        return ended

    def __len__(self) -> int:
        return len(self._sessions)
