"""Redaction recall and false positives (secrets in arguments and results masked before they are stored).

Runs :func:`registry.redaction.redact` over the made-up secret fixtures of
``tests/permissions/data/secret_shapes.json`` (each secret embedded in its context, passed as an
argument value under a neutral key, and in a result text) and over ordinary tool arguments, and
prints a table per contender: the redaction with the rule set only (no shape
detection) and now.

    .venv/bin/python bench/redaction_recall.py
"""

from __future__ import annotations

import json
import time
from pathlib import Path
from unittest import mock

from registry import redaction, secret_shapes

FIXTURES = Path(__file__).resolve().parent.parent / "tests" / "permissions" / "data" / "secret_shapes.json"


def _leaks(value, secret: str) -> bool:
    text = json.dumps(value, ensure_ascii=False)
    raw = json.dumps(secret, ensure_ascii=False)[1:-1]
    core = max(secret.splitlines(), key=len)
    return raw in text or (len(core) >= 8 and json.dumps(core)[1:-1] in text)


def measure() -> tuple[int, int, int, list[str], list[str], float]:
    data = json.loads(FIXTURES.read_text())
    caught = 0
    missed: list[str] = []
    for name, secret, context in data["secrets"]:
        value = {"note": context.replace("{s}", secret)}
        if _leaks(redaction.redact(value), secret):
            missed.append(name)
        else:
            caught += 1
    changed: list[str] = []
    for args in data["ordinary"]:
        if redaction.redact(args) != args:
            changed.append(json.dumps(args)[:60])
    started = time.perf_counter()
    rounds = 20
    for _ in range(rounds):
        for args in data["ordinary"]:
            redaction.redact(args)
    per_call_us = (time.perf_counter() - started) / (rounds * len(data["ordinary"])) * 1e6
    return caught, len(data["secrets"]), len(data["ordinary"]), missed, changed, per_call_us


def main() -> None:
    rows = []
    with mock.patch.object(redaction, "secret_spans", lambda text: []), mock.patch.object(
        redaction, "_SHAPE_HINT", secret_shapes.re.compile(r"(?!)")
    ), mock.patch.object(redaction, "_ANY_HINT", redaction._HINT):
        rows.append(("rules only (no shape detection)", *measure()))
    redaction._clean.clear()  # texts found clean without the shape rules must not pass as clean now
    redaction._plain.clear()
    rows.append(("rules + detect-secrets + shapes", *measure()))
    print(f"{'contender':34} {'recall':>14} {'false positives':>17} {'µs/argument':>12}")
    for name, caught, total, ordinary, _missed, changed, us in rows:
        print(f"{name:34} {caught:>3}/{total:<3} {caught / total:6.1%} {len(changed):>3}/{ordinary:<3} "
              f"{len(changed) / ordinary:6.1%} {us:12.1f}")
    for name, _c, _t, _o, missed, changed, _us in rows:
        print(f"\n{name}: missed {missed or '-'}; false positives {changed or '-'}")


if __name__ == "__main__":
    main()
