"""Secret redaction for logs and error excerpts. Pure: no I/O.

* Values under keys that name a secret (:data:`SECRET_KEY`: ``token``, ``secret``, ``password``,
  ``api_key``, ``authorization``, ``cookie``, ``private_key``…) become :data:`REDACTED`.
* Inside any string, bearer/basic credentials and well-known key formats (``sk-…``, ``ghp_…``,
  ``xoxb-…``, ``AKIA…``, toolhost's ``th_<id>_<secret>``) are masked, and so are
  ``password=…`` / ``api_key: …`` pairs in free text and ``"password": "…"`` pairs in JSON-looking text.

* Values that look like secrets wherever they appear (:func:`registry.secret_shapes.secret_spans`:
  the detectors of ``detect-secrets`` — JWTs, cloud keys, passwords in URLs, vendor tokens — plus
  private-key blocks, ``token VALUE`` in prose and high-entropy tokens next to secret words).

Used by the event log, the audit log and the approvals table, so one value is never masked in one
and kept in the other. ``bench/redaction_recall.py`` measures recall and false positives.
"""

from __future__ import annotations

import functools
import json
import re
from typing import Any

from registry.secret_shapes import _HINT as _SHAPE_HINT
from registry.secret_shapes import FoldedHint, secret_spans

__all__ = ["REDACTED", "SCAN_BUDGET_CHARS", "SECRET_KEY", "is_secret_key", "redact", "redact_text"]

REDACTED = "[REDACTED]"

SECRET_KEY = re.compile(
    r"(?:^|_)(?:access_?token|refresh_?token|id_?token|auth_?token|token|secret|client_?secret|password|passwd"
    r"|passphrase|api_?key|apikey|authorization|cookie|set_cookie|private_?key|session_?key|credentials?"
    r"|access_?key|secret_?key|secret_?access_?key|signing_?key|encryption_?key|master_?key|pwd|pass"
    r"|client_?assertion|sas_?token|connection_?string|account_?key)$",
    re.IGNORECASE,
)
"""Matches a normalized key (camelCase → snake_case, ``-`` → ``_``) whose value is a secret.

``max_tokens`` or ``token_count`` are *not* secrets; ``page_token`` or ``x-api-key`` are.
"""

_SECRET_VALUE = re.compile(
    r"(?i)(?<=authorization:\s)(bearer|basic)\s+[A-Za-z0-9._~+/=-]+"
    r"|(?i:\b(bearer|basic))\s+(?=[A-Za-z0-9._~+/=-]*[0-9])[A-Za-z0-9._~+/=-]{8,}"
    # Key formats start where no letter or digit precedes them (a ``_`` or ``-`` may: names such
    # as ``abc_sk-proj-…`` or ``nope__ghp_…`` carry a key too; ``\b`` missed those).
    r"|(?<![A-Za-z0-9])sk-(?:proj-|ant-)?[A-Za-z0-9_-]{16,}"
    r"|(?<![A-Za-z0-9])gh[pousr]_[A-Za-z0-9]{20,}"
    r"|(?<![A-Za-z0-9])xox[abprs]-[A-Za-z0-9-]{10,}"
    r"|(?<![A-Za-z0-9])AKIA[0-9A-Z]{16}(?![A-Za-z0-9])"
    r"|(?<![A-Za-z0-9])th_[0-9a-f]{12}_[A-Za-z0-9_-]{8,}"
)
_HINT = FoldedHint(
    r"token|secret|pass|pwd|api.?key|auth|cookie|private|session|credential|assertion|connection.?string"
    r"|access.?key|account.?key|signing.?key|encryption.?key|master.?key"
    r"|bearer|basic|sk-|gh[pousr]_|xox|akia|th_"
)
"""Cheap pre-check: a string without any of these cannot contain a secret we mask. Every key
:data:`SECRET_KEY` names is covered (a ``"pass": "..."`` pair inside a JSON string is masked)."""
_ANY_HINT = FoldedHint(f"{_HINT.lower.pattern}|{_SHAPE_HINT.lower.pattern}")
"""``_HINT`` or ``_SHAPE_HINT`` in one search (one lowering and one scan instead of two)."""
_MIN_HINT_CHARS = 3
"""No alternative of either hint matches fewer characters (``sk-``, ``th_``, ``xox``, ``pwd``, ``://``),
so a shorter string holds no secret any rule masks."""
_JSON_PAIR = re.compile(r'"([A-Za-z0-9_-]{1,64})"\s*:\s*"((?:[^"\\]|\\.)*)"?')
_TEXT_PAIR = re.compile(
    r"""\b([A-Za-z][A-Za-z0-9_-]{0,63})(['"]?\s*[:=]\s*)(?!(?:bearer|basic)\s)('[^']*'|"[^"]*"|[^\s,;'"}]+)"""
)
_MAX_DEPTH = 64


@functools.lru_cache(maxsize=4096)
def is_secret_key(key: str) -> bool:
    """Whether a mapping key names a secret (see :data:`SECRET_KEY`)."""
    norm = re.sub(r"(?<=[a-z0-9])([A-Z])", r"_\1", key).replace("-", "_").lower()
    return bool(SECRET_KEY.search(norm))


def _mask(match: re.Match[str]) -> str:
    scheme = match.group(1) or match.group(2)
    return f"{scheme} {REDACTED}" if scheme else REDACTED


def _mask_text_pairs(text: str) -> str:
    def pair(m: re.Match[str]) -> str:
        value = m.group(3)
        if is_secret_key(m.group(1)) and value.strip("'\"") != REDACTED and value.lower() not in ("bearer", "basic"):
            quote = value[0] if value[:1] in ("'", '"') else ""
            return f"{m.group(1)}{m.group(2)}{quote}{REDACTED}{quote}"
        return m.group(0)

    return _TEXT_PAIR.sub(pair, text)


_CLEAN_MAX_CHARS = 256
_CLEAN_MAX_ENTRIES = 4096
_clean: set[str] = set()
"""Short texts already found to hold no secret (``redact_text(t) == t``). Words such as
``authorize`` or ``session`` pass the cheap hint filter and then cost ~150 µs in the detectors
each time; the call path logs such words several times per call. Only clean texts are
remembered, never one that held a secret; bounded (cleared when full)."""


_PLAIN_MAX_ENTRIES = 4096
_plain: set[str] = set()
"""Short texts (at most ``_CLEAN_MAX_CHARS``) in which neither hint matched: :func:`redact` returns them
as they are. A set lookup (~50 ns) instead of the hint search (~1-3 µs); the call path sees the same
tool names, statuses and argument values on every call. Separate from ``_clean`` so the
per-call ids that fill it never evict the texts that cost a detector scan; cleared when full."""


def redact_text(text: str) -> str:
    """Mask credentials inside free text, including ``password=…`` pairs and ``"secret_key": "value"``
    pairs of broken JSON."""
    if text in _clean:
        return text
    out = _redact_text(text)
    if out == text and len(text) <= _CLEAN_MAX_CHARS:
        if len(_clean) >= _CLEAN_MAX_ENTRIES:
            _clean.clear()
        _clean.add(text)
    return out


def _redact_text(text: str) -> str:
    text = _mask_text_pairs(_SECRET_VALUE.sub(_mask, text))
    spans = secret_spans(text)
    if spans:
        parts, last = [], 0
        for start, end in spans:
            parts.append(text[last:start])
            parts.append(REDACTED)
            last = end
        parts.append(text[last:])
        text = "".join(parts)

    def pair(m: re.Match[str]) -> str:
        if is_secret_key(m.group(1)) and m.group(2):
            return f'"{m.group(1)}": "{REDACTED}"'
        return m.group(0)

    return _JSON_PAIR.sub(pair, text) if '"' in text else text


SCAN_BUDGET_CHARS = 32 * 1024
"""Characters of string values one :func:`redact` call scans for secret shapes (about 5 µs per
character at worst: ~0.2 s). Text past the budget is not scanned, so it is not recorded either:
it becomes ``"[REDACTED: N more characters not scanned]"`` (a 2 MB argument held the event loop
for minutes before the budget and the windowed detectors)."""


class _Budget:
    __slots__ = ("left",)

    def __init__(self, left: int) -> None:
        self.left = left


def _scan_within(value: str, budget: _Budget) -> str:
    if len(value) <= budget.left:
        budget.left -= len(value)
        return redact_text(value)
    head, rest = value[: budget.left], len(value) - budget.left
    budget.left = 0
    return (redact_text(head) if head else "") + f"{REDACTED[:-1]}: {rest} more characters not scanned]"


def redact(value: Any, _depth: int = 0, _budget: _Budget | None = None) -> Any:
    """A copy of a JSON value with secrets replaced (see module docstring).

    Values nested deeper than 64 levels are replaced by ``"[REDACTED: too deep]"`` (never an
    exception, whatever the input). At most :data:`SCAN_BUDGET_CHARS` characters of strings that
    look like they could hold a secret are scanned per call; the rest of such text is replaced by
    ``"[REDACTED: N more characters not scanned]"``.
    """
    budget = _Budget(SCAN_BUDGET_CHARS) if _budget is None else _budget
    if _depth > _MAX_DEPTH:
        return f"{REDACTED[:-1]}: too deep]"
    if isinstance(value, dict):
        out = {}
        leaf_ok = _depth < _MAX_DEPTH  # a leaf one level down is still within the depth limit
        for k, v in value.items():
            if isinstance(k, str) and is_secret_key(k) and v not in (None, "", [], {}):
                out[k] = REDACTED
            elif leaf_ok and (v is None or v.__class__ in _SCALARS):
                out[k] = v  # what redact(v) returns, without the call
            else:
                out[k] = redact(v, _depth + 1, budget)
        return out
    if isinstance(value, list | tuple):
        return [redact(v, _depth + 1, budget) for v in value]
    if isinstance(value, str):
        return _redact_string(value, _depth, budget)
    return value


_SCALARS = frozenset({bool, int, float})


def _redact_string(value: str, depth: int, budget: _Budget) -> str:
    if len(value) > budget.left:  # past the budget: not scanned, so not recorded
        return _scan_within(value, budget)
    if len(value) < _MIN_HINT_CHARS or value in _plain:
        return value
    if not _ANY_HINT.search(value):
        if len(value) <= _CLEAN_MAX_CHARS:
            if len(_plain) >= _PLAIN_MAX_ENTRIES:
                _plain.clear()
            _plain.add(value)
        return value
    stripped = value.lstrip()
    if stripped[:1] in ("{", "[") and '"' in value:
        try:
            parsed = json.loads(value)
        except (ValueError, RecursionError):
            return _scan_within(value, budget)
        cleaned = redact(parsed, depth + 1, budget)
        if cleaned != parsed:
            return json.dumps(cleaned, ensure_ascii=False)
        return value
    return _scan_within(value, budget)
