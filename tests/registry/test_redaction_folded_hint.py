"""The secret pre-checks answer exactly like their ignore-case regexes, ASCII or not (the
fast path lowercases ASCII text instead of matching with re.IGNORECASE)."""

from __future__ import annotations

import re

import pytest

from registry import redaction, secret_shapes
from registry.secret_shapes import FoldedHint

REDACTION_HINT = re.compile(
    r"(?i)token|secret|pass|pwd|api.?key|auth|cookie|private|session|credential|assertion|connection.?string"
    r"|access.?key|account.?key|signing.?key|encryption.?key|master.?key"
    r"|bearer|basic|sk-|gh[pousr]_|xox|AKIA|th_"
)
SHAPE_HINT = re.compile(
    r"(?i)token|secret|passw|pwd|passphrase|api.?key|access.?key|auth|cookie|private|session|credential|bearer|basic"
    r"|://|BEGIN|[A-Za-z0-9_\-+/=.:]{20}"
)
TEXTS = [
    "", "x", "echo__echo", "toolhost_single_17", "authorize", "AUTHORIZATION", "Bearer abc", "My-Api_Key",
    "apiKey", "API.KEY", "-----BEGIN RSA PRIVATE KEY-----", "https://user:pw@host/", "GHP_abc", "ghs_x", "XOXB-1",
    "akia1234", "path_th_x", "sk-proj", "a" * 19, "a" * 20, "abc/def+ghi=jkl.mno:pq", "Pwd", "pass word",
    "ſecret", "prıvate", "Kelvin \u212a token", "ÄÖÜ auth", "日本語のテキスト", "Session-Id", "no hint here at all",
    "ACCESS-KEY", "access key", "passPhrase", "cOoKiE", "credentials", "BASIC", "line\nbreak api\nkey",
]


@pytest.mark.parametrize("text", TEXTS)
def test_folded_hints_match_the_ignore_case_patterns(text):
    assert (redaction._HINT.search(text) is not None) == (REDACTION_HINT.search(text) is not None)
    assert (secret_shapes._HINT.search(text) is not None) == (SHAPE_HINT.search(text) is not None)


def test_ascii_matches_report_positions_in_the_original_text():
    m = FoldedHint(r"api.?key").search("my API-Key here")
    assert (m.start(), m.end()) == (3, 10)
    assert FoldedHint(r"api.?key").search("nothing") is None
