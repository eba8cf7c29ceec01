"""What an approver sees of a call: its exact arguments, never a redacted copy.

Redaction belongs in logs; a decision needs the real values. :func:`approval_view` turns an
approval row into ``arguments`` (the exact JSON values the tool would receive) unless a string
is longer than :data:`REVEAL_CHARS`: such a string is replaced by a marker and listed under
``hidden`` with its path, length (characters) and sha256 (of its UTF-8 bytes), and ``complete``
is ``False``. Approving a call with hidden parts needs an explicit reveal
(:class:`HiddenArguments` otherwise). A row whose exact arguments are gone (decided, used, expired,
or written before they were kept) shows its redacted copy, ``complete`` ``False`` and
``source`` ``"redacted"``.

:func:`printable` writes control and bidi characters as ``\\uXXXX`` so nothing can hide or reorder
the rest of the arguments on a terminal or a page.
"""

from __future__ import annotations

import hashlib
import json
import unicodedata
from typing import Any

from host.store.audit_chain import arguments_digest

__all__ = ["REVEAL_CHARS", "HiddenArguments", "approval_view", "arguments_state", "hidden_marker", "printable"]

REVEAL_CHARS = 2000
"""Strings longer than this (characters) are hidden behind a marker until the approver reveals them."""


class HiddenArguments(ValueError):
    """Approving needs an explicit reveal: parts of the arguments were not shown (too long)."""

    def __init__(self, approval_id: str, hidden: list[dict[str, Any]], *, source: str) -> None:
        self.approval_id, self.hidden = approval_id, hidden
        if source == "redacted":
            what = "its exact arguments are no longer stored; only a redacted copy was shown"
        else:
            what = "; ".join(f"{h['path']}: {h['length']} characters, sha256 {h['sha256']}" for h in hidden)
            what = f"{len(hidden)} argument value(s) were hidden ({what})"
        super().__init__(f"approval {approval_id}: {what}; review them with reveal "
                         f"(`toolhost approvals show {approval_id} --reveal`, the console's Reveal link, "
                         f"GET /admin/api/approvals/{approval_id}?reveal=1) and approve with reveal "
                         f"(`--reveal`, or {{\"reveal\": true}})")


def hidden_marker(length: int, digest: str) -> str:
    """The text shown in place of a hidden string."""
    return f"[hidden: {length} characters, sha256 {digest}; reveal to see]"


def _walk(value: Any, path: str, reveal: bool, hidden: list[dict[str, Any]]) -> Any:
    if isinstance(value, dict):
        return {k: _walk(v, f"{path}.{k}" if k.isidentifier() else f"{path}[{json.dumps(k)}]", reveal, hidden)
                for k, v in value.items()}
    if isinstance(value, list):
        return [_walk(v, f"{path}[{i}]", reveal, hidden) for i, v in enumerate(value)]
    if isinstance(value, str) and len(value) > REVEAL_CHARS and not reveal:
        digest = hashlib.sha256(value.encode("utf-8", "surrogatepass")).hexdigest()
        hidden.append({"path": path, "length": len(value), "sha256": digest})
        return hidden_marker(len(value), digest)
    return value


def approval_view(row: dict[str, Any], *, reveal: bool = False) -> dict[str, Any]:
    """``{"arguments", "hidden", "complete", "source", "revealed"}`` for an approval row (a dict with
    ``arguments_json`` and ``arguments_redacted``); ``source`` is ``"exact"`` or ``"redacted"``.
    ``complete`` is ``True`` only when ``arguments`` are the exact arguments with nothing hidden."""
    exact = row.get("arguments_json")
    hidden: list[dict[str, Any]] = []
    if exact is not None:
        arguments = _walk(json.loads(exact), "$", reveal, hidden)
        return {"arguments": arguments, "hidden": hidden, "complete": not hidden, "source": "exact",
                "revealed": reveal}
    try:
        arguments = json.loads(row["arguments_redacted"])
    except ValueError:
        arguments = row["arguments_redacted"]
    else:
        if row.get("arguments_hash") is not None and arguments_digest(arguments) == row["arguments_hash"]:
            # redaction changed nothing (the digest of the copy is the call's): it is the exact call, e.g.
            # on a replica with another data folder, which cannot open the sealed exact arguments
            hidden = []
            arguments = _walk(arguments, "$", reveal, hidden)
            return {"arguments": arguments, "hidden": hidden, "complete": not hidden, "source": "exact",
                    "revealed": reveal}
    return {"arguments": arguments, "hidden": [], "complete": False, "source": "redacted", "revealed": reveal}


def arguments_state(r: dict[str, Any]) -> str:
    """How much of the arguments a view shows, in words (never "complete" unless it is)."""
    if r["source"] == "redacted":
        return "a redacted copy: the exact arguments are no longer stored"
    if r["hidden"]:
        return (f"exact, {len(r['hidden'])} value(s) hidden as too long; `toolhost approvals show {r['id']} "
                "--reveal` shows them, approving needs --reveal")
    return "exact and complete: what the tool receives"


def printable(text: str) -> str:
    """``text`` with control, format (bidi overrides, zero-width) and separator characters written as
    ``\\uXXXX``: inside JSON strings that is the same value, and nothing can hide or reorder the rest
    of the arguments on a terminal."""
    out = []
    for ch in text:
        if unicodedata.category(ch) in ("Cc", "Cf", "Co", "Cs", "Zl", "Zp") and ch != "\n":
            out.append("".join(f"\\u{u:04x}" for u in _utf16(ch)))
        else:
            out.append(ch)
    return "".join(out)


def _utf16(ch: str) -> list[int]:
    data = ch.encode("utf-16-be", "surrogatepass")
    return [int.from_bytes(data[i : i + 2], "big") for i in range(0, len(data), 2)]
