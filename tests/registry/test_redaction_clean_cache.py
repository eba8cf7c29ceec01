"""Redaction remembers short texts it found clean, and nothing else: a text holding a
secret is masked every time, never remembered, and the memory stays bounded."""

from __future__ import annotations

from registry import redaction
from registry.redaction import REDACTED, redact, redact_text

SECRET = "Authorization: Bearer abcdefghijklmnopqrstuvwxyz0123456789"


def test_clean_words_are_remembered_and_secrets_never_are() -> None:
    redaction._clean.clear()
    assert redact({"stage": "authorize", "note": "session ended"}) == {"stage": "authorize", "note": "session ended"}
    assert {"authorize", "session ended"} <= redaction._clean
    for _ in range(3):
        assert redact_text(SECRET) == f"Authorization: Bearer {REDACTED}"
    assert SECRET not in redaction._clean
    assert not any("abcdefghijklmnop" in t for t in redaction._clean)


def test_long_texts_are_not_remembered_and_the_memory_is_bounded() -> None:
    redaction._clean.clear()
    long_text = "authorize " * 40
    assert redact_text(long_text) == long_text
    assert long_text not in redaction._clean
    for i in range(redaction._CLEAN_MAX_ENTRIES + 10):
        redact_text(f"auth step {i}")
    assert 0 < len(redaction._clean) <= redaction._CLEAN_MAX_ENTRIES
    assert redact_text(SECRET) == f"Authorization: Bearer {REDACTED}"
