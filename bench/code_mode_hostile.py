"""Hostile scripts against a code-mode gateway, with a bystander client, for ``bench/code_mode_gateway.py``.

For each attack one client sends the script to ``execute`` while a second client (its own HTTP
session) keeps making a simple call every 50 ms (the gateway's tool-search meta tool, no sandbox
involved) until the attack's answer is in (at least one second). The row says what error the script
got, how long it took, how the bystander fared during it (calls answered / failed, p50 and max
latency), and whether the gateway process is still alive afterwards and still runs a script
(``1 + 1`` through ``execute``).
"""

from __future__ import annotations

import statistics
import time
from collections.abc import Callable
from contextlib import AbstractAsyncContextManager
from dataclasses import dataclass, field
from typing import Any

import anyio

__all__ = ["ATTACKS", "AttackRow", "result_text", "run_attack"]

ATTACKS: list[tuple[str, str]] = [
    ("none (`1 + 1`, baseline)", "1 + 1\n"),
    ("memory bomb (1 MB strings forever)", "x = []\nwhile True:\n    x.append('a' * 1000000)\n"),
    ("infinite loop", "n = 0\nwhile True:\n    n += 1\n"),
    ("deep recursion", "def f(n):\n    return f(n + 1) + 1\nf(0)\n"),
    ("output flood (30 MB result)", "'x' * 30000000\n"),
    ("print flood (120 MB printed)", "for i in range(1000000):\n    print('flood ' * 20)\n"),
]

BYSTANDER_WINDOW = 1.0
"""The bystander keeps calling for at least this long (s), however quickly the attack is answered."""

ClientFactory = Callable[[], AbstractAsyncContextManager[Any]]


@dataclass
class AttackRow:
    gateway: str
    attack: str
    seconds: float = float("nan")
    answer: str = ""
    alive: bool = False
    scripts_after: bool = False
    bystander: list[float] = field(default_factory=list)
    bystander_failed: int = 0

    def cells(self) -> list[str]:
        by = self.bystander
        return [self.gateway, self.attack, f"{self.seconds:.1f}", self.answer,
                f"{len(by)}/{self.bystander_failed}",
                f"{statistics.median(by) * 1e3:.0f}" if by else "-", f"{max(by) * 1e3:.0f}" if by else "-",
                "yes" if self.alive else "NO", "yes" if self.scripts_after else "NO"]


def result_text(result: Any) -> str:
    """The text blocks of a ``CallToolResult``, joined."""
    return "".join(b.text for b in result.content if getattr(b, "text", None))


def _answer(result: Any) -> str:
    text = " ".join(result_text(result).split())
    if not result.is_error:
        return f"no error: {len(result_text(result)):,} chars returned"
    return text if len(text) <= 90 else text[:87] + "..."


async def _stand_by(client: ClientFactory, simple: tuple[str, dict[str, Any]], done: anyio.Event,
                    row: AttackRow) -> None:
    async with client() as c:
        while not done.is_set():
            began = time.perf_counter()
            try:
                with anyio.fail_after(30):
                    result = await c.call_tool(*simple)
                ok = result.is_error is not True
            except Exception:  # noqa: BLE001 - a failed bystander call is what this counts
                ok = False
            if ok:
                row.bystander.append(time.perf_counter() - began)
            else:
                row.bystander_failed += 1
            with anyio.move_on_after(0.05):
                await done.wait()


async def run_attack(gateway: str, attack: str, code: str, client: ClientFactory, simple: tuple[str, dict[str, Any]],
                     alive: Callable[[], bool], *, give_up: float) -> AttackRow:
    """One attack against one gateway; ``give_up`` bounds the attacker's wait (s)."""
    row = AttackRow(gateway, attack)
    done = anyio.Event()
    async with anyio.create_task_group() as tg:
        tg.start_soon(_stand_by, client, simple, done, row)
        began = time.perf_counter()
        try:
            with anyio.fail_after(give_up):
                async with client() as c:
                    row.answer = _answer(await c.call_tool("execute", {"code": code}))
        except TimeoutError:
            row.answer = f"no answer: the client gave up after {give_up:.0f} s"
        except Exception as e:  # noqa: BLE001 - the row reports what the attacker saw
            row.answer = f"{type(e).__name__}: {e}"[:90]
        row.seconds = time.perf_counter() - began
        await anyio.sleep(max(0.0, BYSTANDER_WINDOW - row.seconds))  # a few bystander calls even for a quick answer
        done.set()
    row.alive = alive()
    if row.alive:
        try:
            with anyio.fail_after(60):
                async with client() as c:
                    after = await c.call_tool("execute", {"code": "1 + 1"})
            value = (after.structured_content or {}).get("result", result_text(after).strip())  # toolhost: {"result"}
            row.scripts_after = after.is_error is not True and str(value) == "2"
        except Exception:  # noqa: BLE001 - "no" in the table
            row.scripts_after = False
    return row

