"""Redaction of long and hostile text stays bounded (a new user's 2 MB ``order_id`` held serve's
event loop for over ten minutes: detect-secrets' ``NpmDetector`` backtracks quadratically on runs
of ``/``, and the URL-password pattern on runs of letters)."""

from __future__ import annotations

import threading

import pytest

from registry.redaction import REDACTED, SCAN_BUDGET_CHARS, redact, redact_text
from registry.secret_shapes import DETECTOR_WINDOW, secret_spans

JWT = (
    "eyJhbGciOiJIUzI1NiIsInR5cCI6IkpXVCJ9."
    "eyJzdWIiOiIxMjM0NTY3ODkwIiwibmFtZSI6IkpvaG4gRG9lIiwiaWF0IjoxNTE2MjM5MDIyfQ."
    "SflKxwRJSMeKKF2QT4fwpMeJf36POk6yJV_adQssw5c"
)


def _finishes(fn, seconds: float = 60.0) -> object:
    """Run ``fn`` on a thread; fail (instead of hanging the run) when it is still busy after
    ``seconds``: this bounds a hang, it does not time anything."""
    out: list[object] = []
    worker = threading.Thread(target=lambda: out.append(fn()), daemon=True)
    worker.start()
    worker.join(seconds)
    assert not worker.is_alive(), f"redaction still running after {seconds} s"
    return out[0]


def test_a_two_megabyte_argument_is_scanned_up_to_the_budget_and_the_rest_is_not_recorded() -> None:
    for unit in ("/", "eyJ", "://", "a://b:", "A", "token "):
        value = (unit * 2_000_000)[:2_000_000]
        out = _finishes(lambda v=value: redact({"order_id": v, "more": [v]}))
        assert isinstance(out, dict)
        head = out["order_id"]
        assert head.endswith(f"{REDACTED[:-1]}: {2_000_000 - SCAN_BUDGET_CHARS} more characters not scanned]")
        # the budget is per call: the second copy is not scanned at all
        assert out["more"] == [f"{REDACTED[:-1]}: 2000000 more characters not scanned]"]


def test_text_within_the_budget_is_redacted_whole() -> None:
    value = "x" * 1000 + f" Authorization: Bearer {JWT} " + "y" * 1000
    out = redact({"note": value})
    assert out == {"note": "x" * 1000 + f" Authorization: Bearer {REDACTED} " + "y" * 1000}


def test_detectors_see_overlapping_windows_so_a_secret_on_a_window_edge_is_found() -> None:
    key = "AKIAIOSFODNN7EXAMPLE"
    for offset in (0, DETECTOR_WINDOW // 2 - 10, DETECTOR_WINDOW - 10, 3 * DETECTOR_WINDOW // 2 - 7):
        text = "-" * offset + key + " " + "-" * (2 * DETECTOR_WINDOW)
        assert secret_spans(text) == [(offset, offset + len(key))], offset


def test_a_jwt_longer_than_a_window_is_masked_whole() -> None:
    long_jwt = JWT.replace("eyJzdWIi", "eyJzdWIi" + "Q" * (2 * DETECTOR_WINDOW))
    text = "-" * 700 + " " + long_jwt + " done"
    assert redact_text(text) == "-" * 700 + f" {REDACTED} done"


def test_a_password_in_a_url_is_still_masked() -> None:
    assert redact_text("clone https://alice:s3cr3t-pw@example.com/repo.git") == (
        f"clone https://alice:{REDACTED}@example.com/repo.git"
    )


@pytest.mark.parametrize(("text", "masked"), [
    ("nope__sk-proj-AbCdEf0123456789AbCdEf0123456789AbCdEf0123456789", "nope__[REDACTED]"),
    ("abc_sk-proj-MnBvCx0123456789MnBvCx0123456789", "abc_[REDACTED]"),
    ("x_ghp_abcdefghijklmnopqrstuvwxyz0123", "x_[REDACTED]"),
    ("my_AKIAABCDEFGHIJKLMNOP_tool", "my_[REDACTED]_tool"),
    ("tool-xoxb-1234567890-abcdef", "tool-[REDACTED]"),
    ("task-force-planning-document-2024", "task-force-planning-document-2024"),  # letters before: a word
    ("desk-0123456789abcdef0123", "desk-0123456789abcdef0123"),
])
def test_key_formats_glued_to_a_name_by_underscore_or_dash_are_masked(text: str, masked: str) -> None:
    """Hostile-caller finding: ``abc_sk-proj-…`` in a tool name or argument reached the event log
    and the audit unmasked (``\\b`` needs a non-word character before the key; ``_`` is a word one)."""
    assert redact(text) == masked
