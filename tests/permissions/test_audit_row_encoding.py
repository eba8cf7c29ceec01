"""An audit row's stored arguments and digest are the same whether the arguments text is encoded
once for both (nothing masked or cut) or twice: checked against the formulas written out."""

from __future__ import annotations

import datetime as dt
import hashlib
import json

import pytest

from host.store.audit import _row_values, redact
from host.store.audit_chain import GENESIS, row_hash


def _expected(arguments: object) -> tuple[str, str]:
    stored = json.dumps(redact(arguments), ensure_ascii=False, sort_keys=True, separators=(",", ":"))
    canonical = json.dumps(arguments or {}, sort_keys=True, separators=(",", ":"), ensure_ascii=False, default=str)
    return stored, hashlib.sha256(canonical.encode("utf-8", "surrogatepass")).hexdigest()


@pytest.mark.parametrize("arguments", [
    {"text": "x"},
    {"b": 1, "a": [1, 2.5, True, None], "c": {"z": "é", "y": "ü"}},
    {},
    [],
    {"password": "hunter22", "text": "x"},
    {"note": "use sk-proj-abcdefghijklmnopqrstuvwx here"},
    {"long": "y" * 500},
    {"t": (1, 2)},
    {"when": dt.date(2026, 12, 1)},
    {1: "a"},
    {"s": "\ud800 lone"},
    {"n": float("nan")},
])
def test_stored_arguments_and_digest_match_the_formulas(arguments: object) -> None:
    row = _row_values({"action": "call", "arguments": arguments, "at": 1.0})
    stored, digest = _expected(arguments)
    assert row["arguments_digest"] == digest
    assert row["arguments"] == stored.encode("utf-8", "backslashreplace").decode("utf-8")


def test_a_given_digest_is_kept_and_the_row_hash_is_the_canonical_one() -> None:
    row = _row_values({"action": "call", "arguments": {"text": "x"}, "arguments_digest": "d" * 64, "at": 2.0})
    assert (row["arguments_digest"], row["arguments"]) == ("d" * 64, '{"text":"x"}')
    body = {"prev": GENESIS, **{k: row.get(k) for k in row}}
    body["at"] = 2.0
    text = json.dumps(body, sort_keys=True, separators=(",", ":"), ensure_ascii=False)
    assert row_hash(GENESIS, row) == hashlib.sha256(text.encode("utf-8")).hexdigest()
