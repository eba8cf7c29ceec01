"""Approvals decided by approvers (the caller's own client answering "accept" is not an approval).

* :class:`ApprovalGate` is the pipeline's approval hook. An approval is bound to the caller, the
  tool, the argument digest and the served definition hash: a call runs only with an approved,
  unused approval for exactly that, and a pin change voids pending approvals
  (:meth:`host.store.Approvals.void_tool`).
* The caller's own client never decides by default: elicitation goes to the caller only when an
  admin enabled self-approval on the allow grant that decides the call
  (``toolhost grants self-approval USER PATTERN --enable``; for single-user desktops), and such a
  decision is recorded as ``self-elicitation``. Otherwise the call stays pending until a user with
  the :data:`APPROVER_ROLE` role (other than the caller) or the local admin decides it
  (``toolhost approvals approve ID [--as NAME]``).
* Every decision is an audit row (:func:`decide`): action ``approval``, the requester in ``user``,
  the decider in ``approver``, how in ``detail``, and the approval id, argument digest and
  definition hash of the call.
* :func:`approval_record` lets the request that runs a call learn which approval let it run (and
  who approved it) for that call's audit row.
"""

from __future__ import annotations

from collections.abc import Awaitable, Callable, Iterator
from contextlib import contextmanager
from contextvars import ContextVar
from dataclasses import dataclass
from functools import partial
from typing import TYPE_CHECKING, Any

import anyio.to_thread

from host.pipeline.prepare import ApprovalOutcome
from host.store import ApprovalInfo, ApprovalNotPending, AuditRecord, NotFound, StoreError
from host.store.approvals import call_issuers
from host.store.users import self_approval_enabled
from registry.policy import Principal
from registry.safety.taint import TAINT_MENTION
from registry.tool import ToolRecord

if TYPE_CHECKING:
    from host.access.control import AccessControl

__all__ = [
    "APPROVER_ROLE",
    "ApprovalGate",
    "ApprovalRecord",
    "ElicitApproval",
    "NotAnApprover",
    "approval_elicitation",
    "approval_record",
    "call_issuers",
    "current_elicitation",
    "decide",
]

APPROVER_ROLE = "approver"
"""Members of this role may decide other users' approvals (``toolhost roles add approver``)."""

APPROVER_ROLES = (APPROVER_ROLE, "admin")
"""Roles that carry the approver right: ``approver``, and ``admin`` (the web console's operators)."""

ElicitApproval = Callable[[ApprovalInfo, ToolRecord], Awaitable[bool | None]]
"""``async elicit(approval, tool) -> True (approve) | False (deny) | None (no answer)``: asks the
connected user through MCP elicitation when the client supports it."""

_ELICIT: ContextVar[ElicitApproval | None] = ContextVar("toolhost_approval_elicit", default=None)


@dataclass
class ApprovalRecord:
    """Which approval let the current request's call run: ``approval_id`` and ``approver``."""

    approval_id: str | None = None
    approver: str | None = None


_RECORD: ContextVar[ApprovalRecord | None] = ContextVar("toolhost_approval_record", default=None)


@contextmanager
def approval_elicitation(elicit: ElicitApproval | None) -> Iterator[None]:
    """Within this block, :class:`ApprovalGate` may ask through ``elicit`` (per request; ``None``: never).

    The pipeline's approval hook is shared by all requests, while elicitation needs the current
    request's session; a context variable carries it (child tasks inherit it). The asked client is
    the caller's own: it is used only where self-approval is enabled.
    """
    token = _ELICIT.set(elicit)
    try:
        yield
    finally:
        _ELICIT.reset(token)


def current_elicitation() -> ElicitApproval | None:
    """The current request's elicitation (set by :func:`approval_elicitation`), or ``None`` when this
    request may not ask its client (no session, a client without elicitation, the 2026-07-28 era).
    Who may self-approve is the asker's decision: only where self-approval is enabled."""
    return _ELICIT.get()


@contextmanager
def approval_record() -> Iterator[ApprovalRecord]:
    """Collect the approval used by calls made within this block (for their audit row)."""
    rec = ApprovalRecord()
    token = _RECORD.set(rec)
    try:
        yield rec
    finally:
        _RECORD.reset(token)


class NotAnApprover(StoreError):
    """``who`` may not decide ``approval_id``. Attributes: approval_id, who, reason."""

    def __init__(self, approval_id: str, who: str, reason: str) -> None:
        self.approval_id = approval_id
        self.who = who
        self.reason = reason
        super().__init__(f"{who} may not decide approval {approval_id}: {reason}")


def _note(approval_id: str, approver: str | None) -> None:
    """Record ``approval_id`` (and who approved it, for a used approval) for the current call's audit row."""
    rec = _RECORD.get()
    if rec is not None:
        rec.approval_id, rec.approver = approval_id, approver


def decide(
    access: AccessControl,
    approval_id: str,
    *,
    approve: bool,
    by: str,
    how: str,
    approver_user: str | None = None,
) -> ApprovalInfo:
    """Approve or deny a pending approval and write its audit row.

    Args:
        access: the access control.
        approval_id: the approval.
        approve: ``True`` approve, ``False`` deny.
        by: who decides, as recorded (``bob``, ``local:alice`` for the local admin's CLI).
        how: ``cli``, ``admin``, ``elicitation`` (an approver's client) or ``self-elicitation``.
        approver_user: when a toolhost user decides, their name: they must exist, hold the
            :data:`APPROVER_ROLE` role and not be the requester.

    Raises:
        NotFound: unknown approval or approver.
        NotAnApprover: ``approver_user`` lacks the right or is the requester.
        ApprovalNotPending: already decided, used or expired.
        UserDisabled: the requester (either of ``"root as bob"``) or ``approver_user`` is disabled.
    """
    current = access.approvals.get(approval_id)
    for user in (*call_issuers(current.user), *(() if approver_user is None else (approver_user,))):
        access.user_states.check_enabled(user, refused=f"approval {approval_id} cannot be decided")
    if approver_user is not None:
        if not access.users.exists(approver_user):
            raise NotFound("user", approver_user)
        if not set(APPROVER_ROLES) & set(access.users.roles_of(approver_user)):
            raise NotAnApprover(
                approval_id, approver_user,
                f"not in role {APPROVER_ROLE!r} (`toolhost roles assign {APPROVER_ROLE} {approver_user}`)",
            )
        if approver_user in call_issuers(current.user):
            raise NotAnApprover(approval_id, approver_user, "it is their own call; another approver must decide")
    method = access.approvals.approve if approve else access.approvals.deny
    info = method(approval_id, by=by, how=how)
    access.audit_log.record(AuditRecord(
        "approval", user=info.user, key_id=info.key_id, tool=info.tool, decision="allow" if approve else "deny",
        rule=info.rule, status=info.status, detail=f"{how}: {info.status} by {by}",
        definition_hash=info.definition_hash, approval_id=info.id, arguments_digest=info.arguments_hash, approver=by,
    ))
    return info


class ApprovalGate:
    """The pipeline's approval hook backed by the store (see module docstring).

    ``check``: an approved, unexpired, unused approval for the same user, tool, arguments and
    definition is consumed (the call runs, once). Otherwise a pending approval is created (or the
    existing one reused); where self-approval is enabled, the caller is asked at once through
    ``elicit`` and their answer decides it. A pending request gives ``approved=False`` with the
    approval id and the command that resolves it; a denied one gives ``rejected=True``.
    """

    def __init__(self, access: AccessControl, elicit: ElicitApproval | None = None) -> None:
        self.access = access
        self.elicit = elicit  # fixed asker; else the one set by approval_elicitation() for the request

    async def _used(self, used: ApprovalInfo) -> ApprovalOutcome:
        _note(used.id, used.decided_by)
        return ApprovalOutcome(True, used.id, f"approved by {used.decided_by}")

    async def check(self, principal: Principal, tool: ToolRecord, arguments: dict[str, Any], *,
                    reason: str | None = None) -> ApprovalOutcome:
        """``reason`` (a session-taint hold, ``"taint: …"``) is stored after the deciding rule in the
        request's ``rule`` text, so ``toolhost approvals list`` and the console show why it waits; only
        an approval whose text names it lifts the hold (one given for the policy alone does not).

        Every outcome naming an approval (pending, denied, used) records its id for the call's audit
        row (:func:`approval_record`), so the row of an ``approval_required`` or ``permission_denied``
        answer carries the ``ap_…`` id the caller was given."""
        outcome = await self._check(principal, tool, arguments, reason=reason)
        if outcome.approval_id is not None and not outcome.approved:
            _note(outcome.approval_id, None)
        return outcome

    async def _check(self, principal: Principal, tool: ToolRecord, arguments: dict[str, Any], *,
                     reason: str | None) -> ApprovalOutcome:
        approvals = self.access.approvals
        name = tool.qualified_name
        dh = tool.definition_hash
        mention = None if reason is None else TAINT_MENTION
        consume = partial(approvals.consume, principal.recorded, name, arguments, definition_hash=dh,
                          must_mention=mention)
        used = await anyio.to_thread.run_sync(consume)
        if used is not None:
            return await self._used(used)
        rule = self.access.evaluate(principal, tool).rule
        req = await anyio.to_thread.run_sync(
            partial(approvals.request, principal.recorded, name, arguments, key_id=principal.key_id,
                    rule=rule if reason is None else f"{rule}; {reason}" if rule else reason, definition_hash=dh,
                    must_mention=mention)
        )
        if req.status == "denied":
            return ApprovalOutcome(False, req.id, f"approval {req.id} was denied by {req.decided_by}", rejected=True)
        elicit = self.elicit or _ELICIT.get()
        if elicit is not None and await anyio.to_thread.run_sync(self_approval_enabled, self.access.store, rule):
            answer = await elicit(req, tool)
            by = f"{principal.user} (self-approval)"
            if answer is not None:
                try:
                    await anyio.to_thread.run_sync(
                        partial(decide, self.access, req.id, approve=answer is True, by=by, how="self-elicitation")
                    )
                except (ApprovalNotPending, NotFound):
                    pass  # decided meanwhile (e.g. an identical concurrent call shared this request)
            if answer is True:
                used = await anyio.to_thread.run_sync(consume)
                if used is not None:
                    await self._used(used)
                    return ApprovalOutcome(True, used.id, "approved by the user (self-approval)")
                return await self._settled(req)
            if answer is False:
                return ApprovalOutcome(False, req.id, "the user declined", rejected=True)
        return ApprovalOutcome(
            False,
            req.id,
            f"approval {req.id} is pending; an approver runs `toolhost approvals approve {req.id}`, "
            "then the same call can run once",
        )

    async def _settled(self, req: ApprovalInfo) -> ApprovalOutcome:
        """The outcome for a call the user approved whose approval could not be used: report what
        happened to ``req`` (never an exception, never a permission denial for an approved call)."""
        try:
            now = await anyio.to_thread.run_sync(self.access.approvals.get, req.id)
        except NotFound:
            return ApprovalOutcome(
                False,
                req.id,
                f"approval {req.id} no longer exists (its user was removed); call again to be asked again",
            )
        if now.status == "denied":
            return ApprovalOutcome(False, now.id, f"approval {now.id} was denied by {now.decided_by}", rejected=True)
        if now.status == "used":
            return ApprovalOutcome(
                False,
                now.id,
                f"approval {now.id} was approved and already used by an identical concurrent call (an approval "
                "runs one call); call again to be asked again",
            )
        return ApprovalOutcome(False, now.id, f"approval {now.id} is {now.status}; call again to be asked again")
