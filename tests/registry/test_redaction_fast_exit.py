"""Redaction's fast exits: strings shorter than any hint, short strings already found
without a hint (remembered), scalar leaves copied without a call, and one search for both hints.
Each exit returns exactly what the full path returns, and no text holding a secret is remembered."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from registry import redaction
from registry.redaction import REDACTED, redact

FIXTURES = Path(__file__).resolve().parent.parent / "permissions" / "data" / "secret_shapes.json"
KEY = "sk-proj-abcdefghijklmnopqrstuvwx"


def test_the_one_search_finds_what_either_hint_finds() -> None:
    data = json.loads(FIXTURES.read_text())
    texts = [context.replace("{s}", secret) for _name, secret, context in data["secrets"]]
    texts += [json.dumps(args) for args in data["ordinary"]]
    texts += ["x", "ok", "pwd", "PWD", "Passw", "ÄUTH token", "İ session", "a://b", "th_", "aaaa" * 6, "echo__echo"]
    for text in texts:
        either = bool(redaction._HINT.search(text) or redaction._SHAPE_HINT.search(text))
        assert bool(redaction._ANY_HINT.search(text)) is either, text


def test_short_and_remembered_plain_strings_come_back_unchanged_and_secrets_never_are_remembered() -> None:
    redaction._plain.clear()
    value = {"name": "echo__echo", "status": "ok", "n": 3, "f": 1.5, "b": True, "none": None, "s": "x"}
    assert redact(value) == value
    assert "echo__echo" in redaction._plain
    assert redact(value) == value  # from the memory
    for _ in range(2):
        assert redact({"note": f"use {KEY} here"}) == {"note": f"use {REDACTED} here"}
        assert redact({"token": "ab"}) == {"token": REDACTED}  # short, but under a secret key
        assert redact({"note": "pwd=ab"}) == {"note": f"pwd={REDACTED}"}
    assert not any(KEY in t or "pwd" in t for t in redaction._plain)
    long_plain = "plain words " * 30
    assert redact(long_plain) == long_plain and long_plain not in redaction._plain


def test_the_plain_memory_is_bounded() -> None:
    redaction._plain.clear()
    for i in range(redaction._PLAIN_MAX_ENTRIES + 10):
        redact(f"call {i}")
    assert 0 < len(redaction._plain) <= redaction._PLAIN_MAX_ENTRIES


def test_scalar_leaves_past_the_depth_limit_are_still_cut() -> None:
    def nest(leaf: object, levels: int) -> object:
        value: object = leaf
        for _ in range(levels):
            value = {"k": value}
        return value

    def leaf_of(value: object) -> object:
        while isinstance(value, dict):
            value = value["k"]
        return value

    too_deep = f"{REDACTED[:-1]}: too deep]"
    for leaf in (5, 1.5, True, None, "x"):
        assert leaf_of(redact(nest(leaf, 64))) == leaf
        assert leaf_of(redact(nest(leaf, 65))) == too_deep
    assert redact([[1, None, "ok"], (2.5,)]) == [[1, None, "ok"], [2.5]]


@pytest.mark.parametrize("key", ["pass", "pwd", "client_assertion", "connection_string", "account_key", "signing_key",
                                 "encryption_key", "master_key", "accessKey"])
def test_every_secret_key_is_masked_inside_a_json_string_too(key: str) -> None:
    """Review finding: the cheap pre-check lacked these words, so a JSON text passed as a string
    kept ``{"pass": "hunter2"}`` (the keys themselves were masked as dict keys all along)."""
    assert redact(f'{{"{key}": "hunter2", "user": "bob"}}') == f'{{"{key}": "[REDACTED]", "user": "bob"}}'
    assert redact({key: "hunter2"}) == {key: "[REDACTED]"}
