"""Who a script's inner calls belong to: the script run (id, sha256, parent call id) and each step.

Every inner call's audit row carries :meth:`InnerStep.audit_detail`::

    script sc_5f2a9c1d0e3b4a77 sha256:<64 hex> parent:call_8c1f2e3d4a5b step:3

(fixed order, space separated, at most ~140 characters, so it survives the audit log's 200-character
cut of ``detail``); the script's own row carries :meth:`ScriptRun.audit_detail` with the same id,
hash and parent plus its counts and outcome. ``toolhost audit`` filters and exports show both.
"""

from __future__ import annotations

import re
import secrets
from collections import Counter
from collections.abc import Iterable
from dataclasses import dataclass
from typing import Protocol

__all__ = ["SCRIPT_TOOL", "AuditedStep", "InnerStep", "ScriptRun", "parse_inner_detail"]

SCRIPT_TOOL = "execute"
"""The code-mode meta tool's name (FastMCP's and Cloudflare's name for "run this program"); also the
``tool`` of a script's audit row and of its approval."""

_DETAIL = re.compile(
    r"^script (?P<script_id>sc_[0-9a-f]{16}) sha256:(?P<sha256>[0-9a-f]{64}) parent:(?P<parent>\S+)"
    r"(?: step:(?P<step>\d+))?"
)


@dataclass(frozen=True)
class ScriptRun:
    """One run of one script.

    Attributes:
        script_id: ``sc_`` + 16 hex digits, new for every run.
        script_sha256: hex sha256 of the script text (what an approval binds to).
        parent_call_id: the call id of the ``execute`` call that ran it.
    """

    script_id: str
    script_sha256: str
    parent_call_id: str

    @classmethod
    def new(cls, script_sha256: str, parent_call_id: str | None = None) -> ScriptRun:
        """A run with a fresh script id (and a fresh parent call id when none is given)."""
        return cls("sc_" + secrets.token_hex(8), script_sha256, parent_call_id or "call_" + secrets.token_hex(6))

    def inner_call_id(self, step: int) -> str:
        """The call id of inner call ``step``: ``<parent>.<step>``."""
        return f"{self.parent_call_id}.{step}"

    def audit_detail(self, *, outcome: str, statuses: Iterable[str] = (), tools: int = 0) -> str:
        """The script row's detail: id, hash, parent, tools in the manifest, inner calls per status, outcome."""
        counts = Counter(statuses)
        per = ",".join(f"{k}={v}" for k, v in sorted(counts.items()))
        return (
            f"script {self.script_id} sha256:{self.script_sha256} parent:{self.parent_call_id} "
            f"tools:{tools} calls:{sum(counts.values())}{' (' + per + ')' if per else ''} outcome:{outcome}"
        )


class AuditedStep(Protocol):
    """A call made by a program rather than directly by the model: its audit row's ``detail`` names
    the program (:class:`InnerStep` for a code-mode script, ``host.agent.programmatic.ProgramStep``
    for a provider's programmatic tool calling)."""

    def audit_detail(self) -> str:
        """One line naming the program and this call's place in it."""
        ...


@dataclass(frozen=True)
class InnerStep:
    """One inner call of a :class:`ScriptRun`: its 0-based ``step`` (start order)."""

    run: ScriptRun
    step: int

    @property
    def call_id(self) -> str:
        return self.run.inner_call_id(self.step)

    def audit_detail(self) -> str:
        """``script <id> sha256:<hash> parent:<call id> step:<n>`` (module doc)."""
        r = self.run
        return f"script {r.script_id} sha256:{r.script_sha256} parent:{r.parent_call_id} step:{self.step}"


def parse_inner_detail(detail: str | None) -> dict[str, str | int] | None:
    """``{"script_id", "sha256", "parent", "step"}`` of an audit detail written by
    :meth:`InnerStep.audit_detail` (or without ``step``: :meth:`ScriptRun.audit_detail`, the script's
    own row), else ``None``."""
    m = _DETAIL.match(detail or "")
    if m is None:
        return None
    out: dict[str, str | int] = {"script_id": m["script_id"], "sha256": m["sha256"], "parent": m["parent"]}
    if m["step"] is not None:
        out["step"] = int(m["step"])
    return out
