"""Runtime access control: the one object the registry server consults on every request.

:class:`AccessControl` wraps the permission store (:mod:`host.store`) and answers:

* who is calling: :meth:`~AccessControl.authenticate` (HTTP bearer API key) and
  :meth:`~AccessControl.principal_for_user` (stdio ``--user``);
* what they may do: it is a :class:`registry.policy.RequestPolicy`; :meth:`~AccessControl.for_request`
  gives one request's :class:`RequestAccess` view (grants + definition pins) that reflects the
  database: one integer (``meta.revision``) is read and the compiled policy is rebuilt only when it
  changed, so admin changes from the CLI take effect on the next request without a restart;
* what they may see: the view's ``visible`` (the predicate for ``tools/list`` and ``tool_search``,
  the same decision as for calls, so a hidden tool answers exactly like an unknown one);
* approvals: :meth:`~AccessControl.approval_hook` implements the pipeline's
  :class:`host.pipeline.prepare.ApprovalHook`;
* pins: :meth:`~AccessControl.observe` / :meth:`~AccessControl.watch` record served definitions
  (a changed definition is held until an admin accepts it);
* audit: :meth:`~AccessControl.audit`; the request path's :meth:`~AccessControl.audit_async` and
  :meth:`~AccessControl.audit_call_async` go through the batched write-behind
  (:mod:`host.access.audit_writer`).
"""

from __future__ import annotations

import logging
import os
import threading
from collections.abc import Callable
from dataclasses import dataclass
from typing import Any

import anyio.to_thread
from sqlalchemy.exc import SQLAlchemyError

from host.access.audit_writer import AuditWriter
from host.access.gate import ApprovalGate, ElicitApproval, approval_elicitation, approval_record
from host.pipeline.taint import TaintEvent
from host.store import (
    ApiKeys,
    Approvals,
    AuditLog,
    AuditRecord,
    Grants,
    NotFound,
    PinReport,
    Pins,
    Roles,
    Store,
    StoreError,
    UserDisabled,
    Users,
    UserStates,
    load_policy,
    parse_token,
)
from host.store.pin_safety import SavedScores
from host.store.pins import TrustDefault
from registry.permissions import PinnedPolicy
from registry.policy import Decision, Policy, Principal
from registry.safety import UnitScorer
from registry.store import ToolRegistry
from registry.tool import ToolRecord

__all__ = [
    "AccessControl",
    "ApprovalGate",
    "ElicitApproval",
    "RequestAccess",
    "approval_elicitation",
    "approval_record",
]

_log = logging.getLogger(__name__)

AUDIT_WAIT_SECONDS = 10.0
"""How long a request waits for its (non-call) audit row before it fails with ``AuditUnavailable``."""

@dataclass(frozen=True)
class RequestAccess:
    """What one request may do: the caller, the policy at this request's revision, and helpers.

    Attributes:
        principal: the caller.
        policy: grants + pins at ``revision`` (immutable; reuse it for the whole request).
        revision: the access revision the policy was built from.
    """

    principal: Principal
    policy: PinnedPolicy
    revision: int

    def evaluate(self, tool: ToolRecord) -> Decision:
        return self.policy.evaluate(self.principal, tool)

    def visible(self, tool: ToolRecord) -> bool:
        """The ``visible`` predicate for ``tools/list`` and ``SearchIndex.search``."""
        return self.policy.evaluate(self.principal, tool).visible

    def catalog_visible(self, item: ToolRecord) -> bool:
        """Prompts, resources and templates: the grants decide (pins hold tools only)."""
        return self.policy.catalog_decision(self.principal, item).visible

    @property
    def visible_key(self) -> tuple[str, tuple[str, ...], int]:
        """Hashable identity of :meth:`visible` for ``SearchIndex.search(visible_key=...)`` mask caching."""
        return (self.principal.user, self.principal.roles, self.revision)


class AccessControl:
    """Per-request authentication, authorization, approvals, pins and audit over one :class:`Store`.

    Args:
        store: an open, migrated store.
        new_tools: pin default for new tools of an already pinned server (``held``, the default:
            refused until ``toolhost pins accept``; or ``trusted``).
        approved_ttl_seconds: how long an approved call may be run (once).
        pending_ttl_seconds: how long an approval request waits for a decision.
        definition_scorer: the learned poisoned-definition signal beside the scanner's rules
            (:func:`host.safety.load_definition_scorer`); ``None``: the rules alone.
        definition_scores: its scores kept across restarts (:class:`host.safety.ScoreCache`).

    Thread-safe: the cached policy is swapped under a lock; database calls are short transactions.
    """

    def __init__(
        self,
        store: Store,
        *,
        new_tools: TrustDefault = "held",
        approved_ttl_seconds: float = 600.0,
        pending_ttl_seconds: float = 3600.0,
        definition_scorer: UnitScorer | None = None,
        definition_scores: SavedScores | None = None,
    ) -> None:
        self.store = store
        self.users = Users(store)
        self.user_states = UserStates(store)
        self.roles = Roles(store)
        self.grants = Grants(store)
        self.keys = ApiKeys(store)
        self.approvals = Approvals(
            store, approved_ttl_seconds=approved_ttl_seconds, pending_ttl_seconds=pending_ttl_seconds
        )
        self.pins = Pins(store, new_tools=new_tools, scorer=definition_scorer, saved_scores=definition_scores)
        self.audit_log = AuditLog(store)
        # imported here: host.pipeline.store_outage_log itself imports host.access (outage_reason)
        from host.pipeline.store_outage_log import STORE_OUTAGE_LOG

        self.audit_writer = AuditWriter(self.audit_log, outage_log=STORE_OUTAGE_LOG)
        self._lock = threading.Lock()
        self._cached: tuple[int, PinnedPolicy] | None = None

    @classmethod
    def open(
        cls, data_dir: str | os.PathLike[str] | None = None, *, url: str | None = None, **kwargs: Any
    ) -> AccessControl:
        """Open ``url`` (default ``sqlite:///<data_dir>/toolhost.db``), migrating it; see class args."""
        from host.paths import data_dir as resolve
        from host.store.sealed import ArgumentSeal

        store = Store.open(url, data_dir=data_dir)
        access = cls(store, **kwargs)
        access.approvals.seal = ArgumentSeal.for_data_dir(resolve(data_dir))
        return access

    def close(self) -> None:
        """Write every queued audit row (:meth:`AuditWriter.close`), then close the store."""
        try:
            self.audit_writer.close()
        finally:
            self.store.close()

    # -- who --------------------------------------------------------------------------------
    def authenticate(self, token: str | None) -> Principal | None:
        """The principal of an API key (``th_<key_id>_<secret>``), or ``None`` (missing, malformed,
        unknown, revoked, wrong). Updates the key's ``last_used_at``. Never raises for bad tokens.

        Raises:
            host.store.UserDisabled: the key is right but its user is disabled
                (:mod:`host.store.user_state`); checked after the secret, so only the key's holder
                learns the state. Audited as an aggregated ``auth`` row (:meth:`audit_auth_failure`).
        """
        if not token:
            return None
        info = self.keys.verify(token)
        if info is None:
            return None
        try:
            self.user_states.check_enabled(info.user)
        except UserDisabled as e:
            self.audit_log.record_auth_failure(info.key_id, reason=f"user {info.user} is disabled", user=info.user,
                                               rule="user-disabled")
            raise e from None
        return Principal(user=info.user, roles=self._roles_of(info.user), key_id=info.key_id)

    def audit_auth_failure(self, token: str | None) -> int:
        """Audit a rejected credential, aggregated (:meth:`host.store.AuditLog.record_auth_failure`):
        at most one ``auth``/``invalid_key`` row per minute for a known key id (revoked or wrong
        secret) and one for all unknown or malformed keys together, so attacker-chosen key ids
        cannot grow the log either. The token itself is never stored. Returns the row id."""
        parsed = parse_token(token or "")
        key_id = parsed[0] if parsed and self.keys.exists(parsed[0]) else None
        reason = (
            f"revoked API key or wrong secret for key id {key_id}"
            if key_id
            else "missing, malformed or unknown API key"
        )
        return self.audit_log.record_auth_failure(key_id, reason=reason, user="<unauthenticated>")

    async def audit_auth_failure_async(self, token: str | None) -> int:
        """:meth:`audit_auth_failure` on a worker thread."""
        return await anyio.to_thread.run_sync(self.audit_auth_failure, token)

    def principal_for_user(self, user: str) -> Principal:
        """The principal for a trusted local caller (stdio ``--user``).

        Raises:
            host.store.NotFound: unknown user (``toolhost users add NAME`` creates one).
            host.store.UserDisabled: the user is disabled (a session already running loses its
                grants at its next request instead: :func:`host.store.load_policy`).
        """
        if not self.users.exists(user):
            raise NotFound("user", user, "create it with `toolhost users add " + user + "`")
        self.user_states.check_enabled(user)
        return Principal(user=user, roles=self._roles_of(user))

    def _roles_of(self, user: str) -> tuple[str, ...]:
        return self.users.roles_of(user)

    # -- what -------------------------------------------------------------------------------
    def policy(self) -> PinnedPolicy:
        """The current policy (grants + pins). Costs one revision read when nothing changed."""
        return self._current()[1]

    @property
    def revision(self) -> int:
        """The current access revision (changes with every grant/role/user/key/pin change); a
        search mask cached under ``(principal, revision)`` is therefore never stale."""
        return self.store.revision()

    @property
    def per_user(self) -> bool:
        """Always ``True``: grants are per user (:class:`registry.policy.RequestPolicy`)."""
        return True

    def for_request(self, principal: Principal) -> RequestAccess:
        """The caller's view for one request (one revision read; then pure evaluations)."""
        rev, policy = self._current()
        return RequestAccess(principal, policy, rev)

    def _current(self) -> tuple[int, PinnedPolicy]:
        rev = self.store.revision()
        cached = self._cached
        if cached is not None and cached[0] == rev:
            return cached
        with self._lock:
            cached = self._cached
            if cached is not None and cached[0] == rev:
                return cached
            with self.store.read() as conn:
                grants = load_policy(conn)
            # pins are read in their own snapshot: a pin change in between bumps the revision
            # again, so the next request rebuilds; never a stale-but-cached mix.
            self._cached = (rev, PinnedPolicy(grants, self.pins.states()))
            return self._cached

    def evaluate(self, principal: Principal, tool: ToolRecord) -> Decision:
        """``policy().evaluate(principal, tool)``: makes AccessControl itself a live
        :class:`registry.policy.Policy` (each evaluation re-checks the revision, ~3 µs on SQLite), so it
        can be handed to anything that keeps one policy object (e.g. ``HostRuntime(policy=access)``)."""
        return self.policy().evaluate(principal, tool)

    def visible(self, principal: Principal, policy: Policy | None = None) -> Callable[[ToolRecord], bool]:
        """Predicate for listings and search: the tool is allowed or needs approval, and its pin holds.

        Pass the ``policy`` already fetched for this request to avoid a second revision check.
        """
        pol = policy or self.policy()
        return lambda tool: pol.evaluate(principal, tool).visible

    # -- approvals --------------------------------------------------------------------------
    def approval_hook(self, elicit: ElicitApproval | None = None) -> ApprovalGate:
        """An :class:`host.pipeline.prepare.ApprovalHook` (optionally asking the user via ``elicit``)."""
        return ApprovalGate(self, elicit)

    # -- pins -------------------------------------------------------------------------------
    def observe(self, server: str, records: tuple[ToolRecord, ...] | list[ToolRecord], *,
                auto_accept: bool = False) -> PinReport:
        """Record the definitions ``server`` serves now (pins new tools, holds changed and suspicious
        ones; ``auto_accept``: pins a cosmetic-only change, see :class:`host.store.Pins`).

        Audit rows (action ``pin``): ``pin:suspicious`` (the scanner's findings in ``detail``),
        ``pin:changed`` (with the drift class), ``pin:held``, ``pin:auto-accepted``."""
        report = self.pins.observe(server, records, auto_accept=auto_accept)
        fresh = set(report.written)
        suspicious = set(report.suspicious)
        for name in (n for n in report.suspicious if n in fresh):
            found = report.findings.get(name, [])
            self.audit(action="pin", tool=name, decision="deny", rule="pin:suspicious",
                       status="held" if name in report.held else "changed",
                       detail=f"held by the definition scanner ({len(found)} finding(s); `toolhost pins diff {name}`, "
                       f"then `toolhost pins accept {name} --hash HASH` or fix the server): " + "; ".join(found[:5]))
        for name in (n for n in report.auto_accepted if n in fresh):
            self.audit(action="pin", tool=name, decision="allow", rule="pin:auto-accepted", status="trusted",
                       detail=f"{server}: cosmetic change pinned at once (toolhost.auto_accept cosmetic; drift "
                       f"{report.drift.get(name, 'cosmetic')})")
        for name in report.changed:
            # what was approved is no longer what would run: void pending and approved requests
            for voided in self.approvals.void_tool(name):
                self.audit(action="approval", tool=name, decision="deny", rule="pin:changed", status="expired",
                           detail=f"approval {voided} voided: the served definition changed")
        for name in (n for n in report.changed if n in fresh and n not in suspicious):
            self.audit(
                action="pin",
                tool=name,
                decision="deny",
                rule="pin:changed",
                status="changed",
                detail=f"served definition of {server} changed ({report.drift.get(name, 'not triaged')}); held "
                "until an admin reviews "
                f"`toolhost pins diff {name}` and runs `toolhost pins accept {name} --hash HASH`",
            )
        for name in (n for n in report.held if n in fresh and n not in suspicious):
            self.audit(action="pin", tool=name, decision="deny", rule="pin:held", status="held")
        return report

    def watch(self, registry: ToolRegistry, *, auto_accept: Callable[[str], bool] | None = None
              ) -> Callable[[], None]:
        """Observe every server already in ``registry`` and each later change; returns unsubscribe.

        ``auto_accept(server)``: whether a cosmetic-only change of ``server`` is pinned at once (its
        ``toolhost.auto_accept`` is ``"cosmetic"``; asked on every observation, so a config reload applies).

        The listener runs synchronously inside ``registry.replace_server`` (on the event loop, in
        the connection task) and writes one short transaction (~1 ms on WAL SQLite). **Blocking:**
        while another process holds the database write lock the write waits up to the busy timeout
        (:data:`host.store.engine.BUSY_TIMEOUT_SECONDS`, 30 s), stalling that event loop. It is
        deliberately not deferred to a thread: until a new tool is recorded it has no pin, and an
        unpinned tool is allowed, so a deferred write would let a new tool of a ``held`` server be
        called in between. The listener never raises: a store or database error is logged (once
        per failure streak) and the failed server is observed again, with what the registry then
        serves, on the next registry change. Security does not depend on the write: a changed
        definition is refused at once because :class:`registry.permissions.PinnedPolicy` compares
        the served hash with the pinned one.
        """
        failed: set[str] = set()

        def observe_safely(server: str, records: Any) -> None:
            try:
                self.observe(server, records, auto_accept=auto_accept is not None and auto_accept(server))
            except (StoreError, SQLAlchemyError, OSError) as e:
                if not failed:
                    _log.warning(
                        "could not record the tool definitions of %s in the permission store (%s: %s); "
                        "retrying on the next tool list change",
                        server,
                        type(e).__name__,
                        e,
                    )
                failed.add(server)
                return
            failed.discard(server)

        def listener(server: str, _old: Any, new: Any) -> None:
            for retry in sorted(failed - {server}):
                observe_safely(retry, registry.by_server(retry))
            if new:
                observe_safely(server, new)
            else:
                failed.discard(server)

        for server in registry.servers():
            observe_safely(server, registry.by_server(server))
        return registry.subscribe(listener)

    # -- audit ------------------------------------------------------------------------------
    def audit(self, **fields: Any) -> int:
        """Append the entry :meth:`AuditRecord.of(**fields) <host.store.AuditRecord.of>` (arguments
        are redacted, their digest kept); returns its id.

        ``decision`` may be a :class:`Decision` (its effect and rule are stored) or an effect string;
        ``principal`` gives the user and key id; ``duration_seconds`` the duration.
        ``action``: ``call``, ``list``, ``search``, ``auth``, ``approval``, ``pin`` or ``admin``.

        Raises:
            TypeError: an unknown field.
        """
        return self.audit_log.record(AuditRecord.of(**fields))

    def call_record(
        self,
        principal: Principal,
        name: str,
        arguments: Any,
        *,
        status: str,
        tool: ToolRecord | None = None,
        decision: Decision | None = None,
        **other: Any,
    ) -> AuditRecord:
        """The audit entry of one finished ``tools/call`` (see :meth:`audit_call`); ``other``:
        ``duration_seconds``, ``detail``, ``approval_id``, ``approver``."""
        verdict: Decision | str
        if tool is None:
            verdict = "deny"
            rule: str | None = "unknown-tool"
        else:
            verdict = decision if decision is not None else self.evaluate(principal, tool)
            rule = verdict.rule
        return AuditRecord.of("call", principal=principal, tool=name, decision=verdict, rule=rule, status=status,
                              arguments=arguments, definition_hash=None if tool is None else tool.definition_hash,
                              **other)

    def audit_call(self, principal: Principal, name: str, arguments: Any, **outcome: Any) -> int:
        """Audit one ``tools/call`` after it finished (:meth:`call_record`: with the served
        definition hash, the approval that let it run and its approver, and ``decision``: the
        verdict of the policy that really decided, default this store's): the decision and rule are
        re-derived from the current policy (``tool`` is the registry record, ``None`` when the name
        is unknown, which is recorded as ``deny`` with rule ``unknown-tool``), so denied names the
        caller was told are "unknown" still show their real deciding rule here. ``status`` is the
        result status (``ok``, ``unknown_tool``, ``approval_required``, ...); ``duration_seconds``,
        ``detail``, ``approval_id`` and ``approver`` are optional; arguments are redacted."""
        return self.audit_log.record(self.call_record(principal, name, arguments, **outcome))

    async def audit_call_async(
        self, principal: Principal, name: str, arguments: Any, *, timeout: float | None = None, **outcome: Any
    ) -> int | None:
        """:meth:`audit_call` through the write-behind (:attr:`audit_writer`, batched, off the event
        loop): returns the row id once committed (``commit`` durability) or ``None`` (``interval``).

        Raises:
            host.store.AuditUnavailable: not committed (within ``timeout`` seconds); the row stays queued.
        """
        return await self.audit_writer.write(self.call_record(principal, name, arguments, **outcome), timeout=timeout)

    async def ensure_auditable(self) -> None:
        """Prove the audit log writable before a call is sent (:meth:`AuditWriter.ensure_writable`).

        Raises:
            host.store.AuditUnavailable: it cannot be written now.
        """
        await self.audit_writer.ensure_writable()

    async def audit_async(self, *, timeout: float | None = AUDIT_WAIT_SECONDS, **fields: Any) -> int | None:
        """:meth:`audit` through the write-behind (see :meth:`audit_call_async`).

        Raises:
            host.store.AuditUnavailable: not committed within ``timeout`` seconds (the row stays
                queued), so a listing or search is not held for minutes by a locked database.
        """
        return await self.audit_writer.write(AuditRecord.of(**fields), timeout=timeout)
    async def audit_taint(self, event: TaintEvent) -> None:
        """The audit row of a call the session-taint rule decided (a :class:`host.pipeline.TaintListener`):
        action ``taint``, rule ``taint:<what decided>`` (``taint:config`` for ``toolhost.taint``,
        ``taint:allow:web__*@role:ops`` for a grant's ``taint``), decision the rule's (``allow``/``approve``/``deny``),
        status what became of the call (``allowed``, ``denied``, ``approval_required``, ``approved``,
        ``rejected``), detail the calls that brought private data and untrusted content."""
        await self.audit_async(
            action="taint", principal=event.principal, tool=event.tool.qualified_name,
            decision=event.verdict.decision.value, rule=f"taint:{event.verdict.rule}", status=event.outcome,
            detail=f"session {event.session_id}, call {event.call_id}: {event.detail()}",
            definition_hash=event.tool.definition_hash, approval_id=event.approval_id,
        )
