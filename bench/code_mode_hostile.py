"""Hostile scripts against a code-mode gateway, with bystander clients, for ``bench/code_mode_gateway.py``.

For each attack one client (or several at once) sends the script to ``execute`` while two other
clients, each its own HTTP session, keep calling every 50 ms until the attack's answer is in (at
least one second): one the gateway's tool-search meta tool (no sandbox involved), one ``execute``
of ``1 + 1`` (a script of its own, needing a sandbox worker). The row says what error the script
got, how long it took, how each bystander fared during it (calls answered / failed, p50 / max
latency), and whether the gateway process is still alive afterwards and still runs a script.
"""

from __future__ import annotations

import re
import statistics
import time
from collections.abc import Callable
from contextlib import AbstractAsyncContextManager
from dataclasses import dataclass, field
from typing import Any

import anyio

__all__ = ["ATTACKS", "AttackRow", "Samples", "result_text", "run_attack", "script_value"]

LOOP = "n = 0\nwhile True:\n    n += 1\n"
ATTACKS: list[tuple[str, str, int]] = [  # (label, script, how many clients send it at once)
    ("none (`1 + 1`, baseline)", "1 + 1\n", 1),
    ("memory bomb (1 MB strings forever)", "x = []\nwhile True:\n    x.append('a' * 1000000)\n", 1),
    ("infinite loop", LOOP, 1),
    ("4 infinite loops at once", LOOP, 4),
    ("deep recursion", "def f(n):\n    return f(n + 1) + 1\nf(0)\n", 1),
    ("output flood (30 MB result)", "'x' * 30000000\n", 1),
    ("print flood (120 MB printed)", "for i in range(1000000):\n    print('flood ' * 20)\n", 1),
]

BYSTANDER_WINDOW = 1.0
"""The bystanders keep calling for at least this long (s), however quickly the attack is answered."""

ClientFactory = Callable[[], AbstractAsyncContextManager[Any]]


@dataclass
class Samples:
    """One bystander's calls during an attack: latencies of the answered ones (s), and failures."""

    ok: list[float] = field(default_factory=list)
    failed: int = 0

    def cells(self) -> list[str]:
        if not self.ok:
            return [f"0/{self.failed}", "-"]
        return [f"{len(self.ok)}/{self.failed}", f"{statistics.median(self.ok) * 1e3:.0f} / {max(self.ok) * 1e3:.0f}"]


@dataclass
class AttackRow:
    gateway: str
    attack: str
    seconds: float = float("nan")
    answer: str = ""
    alive: bool = False
    scripts_after: bool = False
    search: Samples = field(default_factory=Samples)
    script: Samples = field(default_factory=Samples)

    def cells(self) -> list[str]:
        return [self.gateway, self.attack, f"{self.seconds:.1f}", self.answer, *self.search.cells(),
                *self.script.cells(), "yes" if self.alive else "NO",
                "yes" if self.scripts_after else "NO"]


def result_text(result: Any) -> str:
    """The text blocks of a ``CallToolResult``, joined."""
    return "".join(b.text for b in result.content if getattr(b, "text", None))


def script_value(result: Any) -> str:
    """An ``execute`` result's value as text (toolhost answers ``{"result", "printed", "calls"}``)."""
    return str((result.structured_content or {}).get("result", result_text(result).strip()))


def _answer(result: Any) -> str:
    text = re.sub(r"(\d+\.\d)\d+s\b", r"\1s", " ".join(result_text(result).split()))  # 5.0066s -> 5.0s
    if not result.is_error:
        return f"no error: {len(result_text(result)):,} chars returned"
    return text if len(text) <= 90 else text[:87] + "..."


async def _answered(c: Any, call: tuple[str, dict[str, Any]], within: float) -> bool:
    """Whether ``call`` is answered within ``within`` s without an error (a script: with the value 2)."""
    try:
        with anyio.fail_after(within):
            result = await c.call_tool(*call)
    except Exception:  # noqa: BLE001 - a failed call is what this reports
        return False
    return result.is_error is not True and (call[0] != "execute" or script_value(result) == "2")


async def _stand_by(client: ClientFactory, call: tuple[str, dict[str, Any]], done: anyio.Event, into: Samples) -> None:
    """Make ``call`` every 50 ms until ``done``; an error result or exception counts as failed."""
    async with client() as c:
        while not done.is_set():
            began = time.perf_counter()
            if await _answered(c, call, 30):
                into.ok.append(time.perf_counter() - began)
            else:
                into.failed += 1
            with anyio.move_on_after(0.05):
                await done.wait()


async def _attack(client: ClientFactory, code: str, give_up: float, answers: list[str]) -> None:
    try:
        with anyio.fail_after(give_up):
            async with client() as c:
                answers.append(_answer(await c.call_tool("execute", {"code": code})))
    except TimeoutError:
        answers.append(f"no answer: the client gave up after {give_up:.0f} s")
    except Exception as e:  # noqa: BLE001 - the row reports what the attacker saw
        answers.append(f"{type(e).__name__}: {e}"[:90])


async def run_attack(gateway: str, attack: str, code: str, copies: int, client: ClientFactory,
                     search: tuple[str, dict[str, Any]], alive: Callable[[], bool], *, give_up: float) -> AttackRow:
    """One attack (``copies`` clients sending ``code`` at once) against one gateway while two other
    clients keep calling: ``search`` (the gateway's search meta tool) and ``execute("1 + 1")``.
    ``give_up`` bounds each attacker's wait (s)."""
    row = AttackRow(gateway, attack)
    done = anyio.Event()
    answers: list[str] = []
    async with anyio.create_task_group() as tg:
        tg.start_soon(_stand_by, client, search, done, row.search)
        tg.start_soon(_stand_by, client, ("execute", {"code": "1 + 1"}), done, row.script)
        began = time.perf_counter()
        async with anyio.create_task_group() as attackers:
            for _ in range(copies):
                attackers.start_soon(_attack, client, code, give_up, answers)
        row.seconds = time.perf_counter() - began
        await anyio.sleep(max(0.0, BYSTANDER_WINDOW - row.seconds))  # a few bystander calls even for a quick answer
        done.set()
    distinct = sorted(set(answers), key=answers.index)
    row.answer = " | ".join(a if answers.count(a) == 1 else f"{answers.count(a)}x {a}" for a in distinct)
    row.alive = alive()
    if row.alive:
        try:
            async with client() as c:
                row.scripts_after = await _answered(c, ("execute", {"code": "1 + 1"}), 60)
        except Exception:  # noqa: BLE001 - a gateway that no longer connects runs no script
            row.scripts_after = False
    return row
