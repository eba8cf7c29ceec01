"""Definition pinning (a definition that changes after approval, the "rug pull", is held).

The first definition seen of each tool is pinned (trust on first use) as its
:func:`registry.tool.definition_hash` plus the definition as JSON (for ``toolhost pins diff``).
Later, :meth:`Pins.observe` compares what a server serves now:

* same hash → nothing happens;
* different hash → the pin becomes ``changed`` (the new definition is kept as *pending*); the tool
  is invisible to search and refused at call until an admin runs ``toolhost pins accept``;
* back to the pinned hash → ``trusted`` again;
* a tool never seen before → ``trusted`` for a server seen for the first time (``first_seen``),
  and ``new_tools`` (``"held"`` by default, or ``"trusted"``; the config's ``toolhost.new_tools``)
  for a server that already has a pin of any status (a server whose only tool is ``changed`` or
  ``held`` is still a known server). A "rename" is a removal plus an addition, so the new name is
  held too.

Accepting is bound to what the admin reviewed: :meth:`Pins.review` gives the diff together with
the pending definition hash, and :meth:`Pins.accept` pins only when the pending hash still equals
that reviewed hash (a conditional UPDATE), so a server flipping v2 → v3 between ``pins diff`` and
``pins accept`` cannot get v3 accepted unseen (:class:`~host.store.errors.PinHashMismatch`).

Statuses: ``trusted``, ``changed``, ``held`` (a new tool waiting for acceptance).

Safety (:mod:`host.store.pin_safety`): every served definition is scanned for hidden instructions
(:func:`registry.safety.definition_hold`, once per definition hash). A suspicious new tool is
``held`` and a suspicious pinned one ``changed`` (also when its hash did not change: a pin made
before the scan existed), whatever ``new_tools`` says, with the findings stored; an admin accepting
it records the hash as scanned-ok. A changed definition is triaged against the pinned one
(:func:`registry.safety.triage`, stored as ``drift``); with ``auto_accept`` (the server's
``toolhost.auto_accept: "cosmetic"``) a change that is only cosmetic — no risk downgrade, no new URL,
no scanner finding — is pinned at once (``auto_accepted``).
"""

from __future__ import annotations

import difflib
import json
import time
from collections.abc import Iterable
from dataclasses import dataclass, field
from typing import Literal

from sqlalchemy import and_, insert, select, update

from host.store import schema as s
from host.store.db import Store, bump_revision
from host.store.errors import InvalidValue, NotFound, PinHashMismatch
from host.store.pin_safety import (
    DriftSummary,
    PinSafety,
    SavedScores,
    drift_json,
    findings_json,
    parse_drift,
    parse_findings,
)
from registry.safety import UnitScorer
from registry.tool import ToolRecord

__all__ = ["PinInfo", "PinReport", "PinReview", "Pins", "TrustDefault", "definition_json"]

TrustDefault = Literal["trusted", "held"]


def definition_json(record: ToolRecord) -> str:
    """The server-provided part of ``record`` as indented, key-sorted JSON (what the hash covers)."""
    doc = {
        "name": record.original_name,
        "title": record.title,
        "description": record.description,
        "inputSchema": record.input_schema,
        "outputSchema": record.output_schema,
        "annotations": record.annotations.to_wire(),
    }
    return json.dumps(doc, indent=2, sort_keys=True, ensure_ascii=False, default=str)


@dataclass(frozen=True)
class PinInfo:
    """A pin: tool (qualified name), server, status, definition_hash (pinned; None while held),
    pending_hash (served now, when it differs), pinned_at, updated_at (UNIX seconds)."""

    tool: str
    server: str
    status: str
    definition_hash: str | None
    pending_hash: str | None
    pinned_at: float | None
    updated_at: float
    drift_class: str | None = None
    """The drift class of the pending change (``cosmetic``, ``risk_downgrade, schema_widened`` …)."""
    held_reason: str | None = None
    """Why the tool is held or changed, for lists: the scanner's first finding, the drift class, or
    ``new tool``; ``None`` for a trusted pin."""


@dataclass
class PinReport:
    """What :meth:`Pins.observe` did: qualified names per outcome."""

    pinned: list[str] = field(default_factory=list)
    held: list[str] = field(default_factory=list)
    changed: list[str] = field(default_factory=list)
    restored: list[str] = field(default_factory=list)
    suspicious: list[str] = field(default_factory=list)
    """Names held or changed because the scanner finds their served definition suspicious."""
    auto_accepted: list[str] = field(default_factory=list)
    """Names whose cosmetic-only change was pinned at once (``auto_accept``)."""
    findings: dict[str, list[str]] = field(default_factory=dict)
    """Scanner findings of each suspicious name."""
    drift: dict[str, str] = field(default_factory=dict)
    """Drift class label of each changed or auto-accepted name."""
    written: list[str] = field(default_factory=list)
    """Names whose pin row this observation created or changed (a relist that changes nothing
    writes nothing: no revision bump, no new audit rows)."""

    @property
    def blocked(self) -> set[str]:
        """Names that are now invisible and refused (held or changed)."""
        return set(self.held) | set(self.changed)


@dataclass(frozen=True)
class PinReview:
    """What ``toolhost pins diff`` shows: tool, status, pinned_hash (None while held), pending_hash
    (the served definition waiting for acceptance; None when nothing is pending) and the unified
    diff pinned → pending (``""`` when nothing is pending). Read in one snapshot, so the diff is
    exactly the definition ``pending_hash`` names."""

    tool: str
    status: str
    pinned_hash: str | None
    pending_hash: str | None
    diff: str
    drift: DriftSummary | None = None
    """The drift triage of the pending change (``None``: nothing pending or nothing pinned to compare)."""
    findings: tuple[str, ...] = ()
    """The scanner's findings on the pending (or served) definition, strong first."""


def _info(r) -> PinInfo:
    drift = parse_drift(r.drift)
    reason = None
    if r.status != "trusted":
        found = parse_findings(r.findings)
        if found:
            reason = f"definition scanner ({len(found)} finding(s)): {found[0]}"
        elif r.status == "held":
            reason = "new tool, held until accepted"
        else:
            reason = f"changed: {drift.label}" if drift else "changed"
    return PinInfo(r.tool, r.server, r.status, r.definition_hash, r.pending_hash, r.pinned_at, r.updated_at,
                   drift.label if drift else None, reason)


class Pins:
    """Pin store. ``first_seen`` / ``new_tools``: see module docstring."""

    def __init__(
        self, store: Store, *, new_tools: TrustDefault = "held", first_seen: TrustDefault = "trusted",
        scorer: UnitScorer | None = None, saved_scores: SavedScores | None = None,
    ) -> None:
        for name, value in (("new_tools", new_tools), ("first_seen", first_seen)):
            if value not in ("trusted", "held"):
                raise InvalidValue(name, value, "expected trusted or held")
        self.store = store
        self.new_tools = new_tools
        self.first_seen = first_seen
        self.safety = PinSafety(scorer=scorer, saved=saved_scores)

    def observe(self, server: str, records: Iterable[ToolRecord], *, auto_accept: bool = False) -> PinReport:
        """Compare the tools ``server`` serves now with their pins and update them (one transaction).

        ``auto_accept``: pin a cosmetic-only change at once (module docstring)."""
        records = list(records)
        report = PinReport()
        if not records:
            return report
        now = time.time()
        with self.store.write() as conn:
            existing = {
                r.tool: r
                for r in conn.execute(select(s.pins).where(s.pins.c.tool.in_([x.qualified_name for x in records])))
            }
            # any pin counts (trusted, changed or held): otherwise a server whose only tool is
            # `changed` would count as new and its new tools would be pinned trusted (new_tools bypass)
            any_pin = conn.execute(select(s.pins.c.tool).where(s.pins.c.server == server).limit(1)).first()
            known_server = any_pin is not None
            default = self.new_tools if known_server else self.first_seen
            for rec in records:
                qn, h = rec.qualified_name, rec.definition_hash
                row = existing.get(qn)
                scan = self.safety.suspicious(rec)
                if scan is not None and (row is None or row.scan_ok_hash != h):
                    report.suspicious.append(qn)
                    report.findings[qn] = parse_findings(findings_json(scan))
                else:
                    scan = None
                found = findings_json(scan)
                if row is None:
                    if default == "trusted" and scan is None:
                        conn.execute(
                            insert(s.pins).values(
                                tool=qn,
                                server=server,
                                definition_hash=h,
                                definition_json=definition_json(rec),
                                status="trusted",
                                pinned_at=now,
                                updated_at=now,
                            )
                        )
                        report.pinned.append(qn)
                        report.written.append(qn)
                    else:
                        conn.execute(
                            insert(s.pins).values(
                                tool=qn,
                                server=server,
                                status="held",
                                pending_hash=h,
                                pending_json=definition_json(rec),
                                findings=found,
                                updated_at=now,
                            )
                        )
                        report.held.append(qn)
                        report.written.append(qn)
                    continue
                if row.status == "held":
                    if row.pending_hash != h or row.findings != found:
                        conn.execute(
                            update(s.pins)
                            .where(s.pins.c.tool == qn)
                            .values(pending_hash=h, pending_json=definition_json(rec), findings=found, updated_at=now)
                        )
                        report.written.append(qn)
                    report.held.append(qn)
                elif row.definition_hash == h and scan is not None:
                    # pinned, but suspicious (pinned before the scan existed, or the scan got stricter)
                    if row.status != "changed" or row.pending_hash != h or row.findings != found:
                        conn.execute(
                            update(s.pins)
                            .where(s.pins.c.tool == qn)
                            .values(status="changed", pending_hash=h, pending_json=definition_json(rec),
                                    findings=found, drift=None, updated_at=now)
                        )
                        report.written.append(qn)
                    report.changed.append(qn)
                elif row.definition_hash == h:
                    if row.status != "trusted":
                        conn.execute(
                            update(s.pins)
                            .where(s.pins.c.tool == qn)
                            .values(status="trusted", pending_hash=None, pending_json=None, findings=None,
                                    drift=None, updated_at=now)
                        )
                        report.restored.append(qn)
                        report.written.append(qn)
                else:
                    if row.status == "changed" and row.pending_hash == h and row.findings == found:
                        report.changed.append(qn)  # already held for exactly this definition
                        if row.drift:
                            report.drift[qn] = parse_drift(row.drift).label  # type: ignore[union-attr]
                        continue
                    drift = self.safety.drift(row.definition_json, rec)
                    if drift is not None:
                        report.drift[qn] = drift.label
                    if auto_accept and scan is None and drift is not None and drift.auto_acceptable:
                        conn.execute(
                            update(s.pins)
                            .where(s.pins.c.tool == qn)
                            .values(status="trusted", definition_hash=h, definition_json=definition_json(rec),
                                    pending_hash=None, pending_json=None, findings=None, drift=None,
                                    pinned_at=now, updated_at=now)
                        )
                        report.auto_accepted.append(qn)
                        report.written.append(qn)
                        continue
                    conn.execute(
                        update(s.pins)
                        .where(s.pins.c.tool == qn)
                        .values(status="changed", pending_hash=h, pending_json=definition_json(rec), findings=found,
                                drift=drift_json(drift), updated_at=now)
                    )
                    report.written.append(qn)
                    report.changed.append(qn)
            if report.written:
                bump_revision(conn)
        return report

    def states(self) -> dict[str, tuple[str, str | None]]:
        """``{tool: (status, pinned hash)}`` for every pin (what the visibility check needs)."""
        with self.store.read() as conn:
            return {
                r.tool: (r.status, r.definition_hash)
                for r in conn.execute(select(s.pins.c.tool, s.pins.c.status, s.pins.c.definition_hash))
            }

    def list(self, *, status: str | None = None, server: str | None = None) -> list[PinInfo]:
        """Pins sorted by tool name, optionally filtered."""
        q = select(s.pins).order_by(s.pins.c.tool)
        if status is not None:
            q = q.where(s.pins.c.status == status)
        if server is not None:
            q = q.where(s.pins.c.server == server)
        with self.store.read() as conn:
            return [_info(r) for r in conn.execute(q)]

    def review(self, tool: str) -> PinReview:
        """The pending change of ``tool`` with its hash (pass that hash to :meth:`accept`).

        Raises:
            NotFound: no pin for ``tool``.
        """
        with self.store.read() as conn:
            row = conn.execute(select(s.pins).where(s.pins.c.tool == tool)).first()
        if row is None:
            raise NotFound("pin", tool)
        text = ""
        if row.pending_json is not None:
            old = (row.definition_json or "").splitlines(keepends=True)
            new = row.pending_json.splitlines(keepends=True)
            text = "".join(difflib.unified_diff(old, new, fromfile=f"{tool} (pinned)", tofile=f"{tool} (served now)"))
        return PinReview(tool, row.status, row.definition_hash, row.pending_hash, text, parse_drift(row.drift),
                         tuple(parse_findings(row.findings)))

    def diff(self, tool: str) -> str:
        """Unified diff from the pinned to the pending definition (``""`` when nothing is pending).

        Raises:
            NotFound: no pin for ``tool``.
        """
        return self.review(tool).diff

    def accept(self, tool: str, reviewed_hash: str) -> PinInfo:
        """Pin the pending definition of ``tool``, but only if its hash is ``reviewed_hash`` (the
        ``pending_hash`` of the :meth:`review` the admin read); returns the new pin.

        Raises:
            NotFound: no pin for ``tool``, or nothing pending.
            PinHashMismatch: the pending definition is not the reviewed one (the server changed it
                again since): review it again.
        """
        now = time.time()
        with self.store.write() as conn:
            res = conn.execute(
                update(s.pins)
                .where(
                    and_(
                        s.pins.c.tool == tool,
                        s.pins.c.status.in_(("changed", "held")),
                        s.pins.c.pending_hash == reviewed_hash,
                    )
                )
                .values(
                    status="trusted",
                    definition_hash=s.pins.c.pending_hash,
                    definition_json=s.pins.c.pending_json,
                    scan_ok_hash=s.pins.c.pending_hash,  # reviewed with its findings: not held for them again
                    pending_hash=None,
                    pending_json=None,
                    findings=None,
                    drift=None,
                    pinned_at=now,
                    updated_at=now,
                )
            )
            row = conn.execute(select(s.pins).where(s.pins.c.tool == tool)).first()
            if res.rowcount != 1:
                if row is None:
                    raise NotFound("pin", tool)
                if row.status not in ("changed", "held") or row.pending_hash is None:
                    raise NotFound(
                        "pending change", tool, "nothing to accept; see `toolhost pins list --status changed`"
                    )
                raise PinHashMismatch(tool, reviewed_hash, row.pending_hash)
            bump_revision(conn)
        return _info(row)

    def accept_server(self, server: str) -> list[tuple[str, str]]:
        """Pin whatever every changed/held tool of ``server`` serves now, unreviewed (the admin
        asked for it in bulk); returns ``[(tool, accepted hash)]`` sorted by tool.

        Raises:
            NotFound: ``server`` has nothing pending.
        """
        now = time.time()
        with self.store.write() as conn:
            q = select(s.pins).where(and_(s.pins.c.server == server, s.pins.c.status.in_(("changed", "held"))))
            rows = conn.execute(q.order_by(s.pins.c.tool)).all()
            if not rows:
                raise NotFound(
                    "pending change", server, f"server {server!r} has nothing to accept; see `toolhost pins list`"
                )
            for r in rows:
                conn.execute(
                    update(s.pins)
                    .where(and_(s.pins.c.tool == r.tool, s.pins.c.pending_hash == r.pending_hash))
                    .values(
                        status="trusted",
                        definition_hash=r.pending_hash,
                        definition_json=r.pending_json,
                        scan_ok_hash=r.pending_hash,
                        pending_hash=None,
                        pending_json=None,
                        findings=None,
                        drift=None,
                        pinned_at=now,
                        updated_at=now,
                    )
                )
            bump_revision(conn)
        return [(r.tool, r.pending_hash) for r in rows]
