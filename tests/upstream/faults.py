"""Randomized fault injection against real stdio upstreams (shared by the test and the bench script).

Each run: several clients call tools of two hostile stdio servers concurrently through the full
pipeline while an injector SIGKILLs the server processes at random moments; the tools
themselves hang, garble, answer with unparseable replies and exit mid-call. After every run the
invariants are checked:

* every call got exactly one result (none lost, none duplicated);
* no call ran past its timeout plus a small grace;
* every status is honest: ``ok`` carries exactly the caller's own nonce; ``upstream_unavailable``
  with ``sent: false`` really never reached the server (its nonce is absent from the server's
  call log); ``upstream_error`` only for the unparseable reply (-32700); ``timeout`` only for
  the tools that can be slow or hang.
"""

from __future__ import annotations

import json
import os
import random
import signal
import sys
import time
from collections import Counter
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import anyio

from host.config import parse_config
from host.runtime import HostRuntime
from host.upstream.status import ConnectionState
from registry import AllowAll  # the runtime's default is safe; these tests call tools freely

HOSTILE = str(Path(__file__).parent / "fakes" / "hostile_stdio.py")
TIMEOUT = 0.6
GRACE = 0.75
ALLOWED = {
    "echo": {"ok", "upstream_unavailable"},
    "garble_then_echo": {"ok", "upstream_unavailable"},
    "slow": {"ok", "upstream_unavailable", "timeout"},
    "hang": {"timeout", "upstream_unavailable"},
    "broken": {"upstream_error", "upstream_unavailable"},
    "die": {"upstream_unavailable"},
}


@dataclass
class FaultStats:
    runs: int = 0
    calls: int = 0
    results: int = 0
    lost: int = 0
    duplicated: int = 0
    hangs: int = 0
    dishonest: list[str] = field(default_factory=list)
    statuses: Counter = field(default_factory=Counter)
    kills: int = 0
    max_overrun_seconds: float = 0.0


def _config(tmp: Path) -> Any:
    servers = {}
    for name in ("a", "b"):
        flags = {"starts_file": str(tmp / f"{name}.pids"), "calls_file": str(tmp / f"{name}.calls"),
                 "garbage": name == "a"}
        servers[name] = {"command": sys.executable, "args": [HOSTILE, json.dumps(flags)],
                         "toolhost": {"timeout_seconds": TIMEOUT}}
    return parse_config({"toolhost": {"connect_timeout_seconds": 10, "backoff_max_seconds": 0.2,
                                      "healthy_after_seconds": 60}, "mcpServers": servers})


def _args(tool: str, nonce: str) -> dict[str, Any]:
    if tool in ("echo", "garble_then_echo"):
        return {"text": nonce}
    if tool == "slow":
        return {"nonce": nonce, "seconds": 0.05}
    return {"nonce": nonce}


def _check(stats: FaultStats, tool: str, nonce: str, res: Any, server_calls: set[str]) -> None:
    status = res.status.value
    if status == "upstream_unavailable":
        stats.statuses["upstream_unavailable, sent (outcome unknown)" if res.error.details.get("sent")
                       else "upstream_unavailable, not sent"] += 1
    else:
        stats.statuses[status] += 1
    problem = None
    if status not in ALLOWED[tool]:
        problem = f"{tool}: status {status}"
    elif status == "ok" and res.content[0].text != nonce:
        problem = f"{tool}: answer {res.content[0].text!r} is not the caller's nonce {nonce!r}"
    elif status == "upstream_unavailable":
        sent = res.error.details.get("sent")
        if sent is False and nonce in server_calls:
            problem = f"{tool}: reported not sent, but the server received {nonce}"
        if sent is True and "outcome is unknown" not in res.error.message:
            problem = f"{tool}: sent but the text does not say the outcome is unknown"
    elif status == "upstream_error" and res.error.details.get("mcp_code") != -32700:
        problem = f"{tool}: upstream_error {res.error.details}"
    if problem:
        stats.dishonest.append(problem)


async def run_faults(runs: int, tmp: Path, *, seed: int = 0, clients: int = 3, calls_per_client: int = 6) -> FaultStats:
    """Run ``runs`` randomized rounds; returns the figures (see module docstring)."""
    stats = FaultStats()
    rng = random.Random(seed)
    cfg = _config(tmp)
    async with HostRuntime(cfg, policy=AllowAll(), data_dir=tmp / "data", reconnect=True) as rt:
        conns = rt.manager.connections
        for run in range(runs):
            with anyio.fail_after(30):  # every server back before the next round
                while not all(c.status.state is ConnectionState.CONNECTED for c in conns.values()):
                    await anyio.sleep(0.02)
            issued: dict[str, int] = {}
            outcomes: list[tuple[str, str, Any]] = []

            async def client(
                cid: int, run: int = run, issued: dict[str, int] = issued, outcomes: list = outcomes
            ) -> None:  # this round's state, bound now (the tasks end inside the round)
                for k in range(calls_per_client):
                    server = rng.choice("ab")
                    tool = rng.choices(list(ALLOWED), weights=[6, 2, 2, 1, 1, 1])[0]
                    nonce = f"r{run}c{cid}k{k}"
                    issued[nonce] = issued.get(nonce, 0) + 1
                    t0 = time.perf_counter()
                    res = await rt.call(f"{server}__{tool}", _args(tool, nonce), call_id=nonce)
                    elapsed = time.perf_counter() - t0
                    stats.max_overrun_seconds = max(stats.max_overrun_seconds, elapsed - TIMEOUT)
                    if elapsed > TIMEOUT + GRACE:
                        stats.hangs += 1
                    outcomes.append((server, tool, nonce, res))  # type: ignore[arg-type]

            async def injector() -> None:
                for _ in range(rng.randint(0, 2)):
                    await anyio.sleep(rng.uniform(0.0, 0.4))
                    name = rng.choice("ab")
                    pids = (tmp / f"{name}.pids").read_text().split()
                    try:
                        os.kill(int(pids[-1]), signal.SIGKILL)
                        stats.kills += 1
                    except (ProcessLookupError, IndexError):
                        pass

            async with anyio.create_task_group() as tg:
                for cid in range(clients):
                    tg.start_soon(client, cid)
                tg.start_soon(injector)
            server_calls = {n: set((tmp / f"{n}.calls").read_text().split()) if (tmp / f"{n}.calls").exists()
                            else set() for n in "ab"}
            seen = Counter(res.call_id for *_, res in outcomes)  # type: ignore[misc]
            stats.runs += 1
            stats.calls += sum(issued.values())
            stats.results += len(outcomes)
            stats.lost += sum(1 for n in issued if seen[n] == 0)
            stats.duplicated += sum(c - 1 for c in seen.values() if c > 1)
            for server, tool, nonce, res in outcomes:  # type: ignore[misc]
                _check(stats, tool, nonce, res, server_calls[server])
    return stats


def table(stats: FaultStats) -> str:
    rows = [("runs", stats.runs), ("calls", stats.calls), ("results", stats.results), ("lost", stats.lost),
            ("duplicated", stats.duplicated), ("hangs past timeout", stats.hangs),
            ("dishonest statuses", len(stats.dishonest)), ("SIGKILLs injected", stats.kills),
            ("max time past the timeout (s)", f"{max(0.0, stats.max_overrun_seconds):.3f}")]
    rows += [(f"status {k}", v) for k, v in sorted(stats.statuses.items())]
    width = max(len(k) for k, _ in rows)
    return "\n".join(f"{k:<{width}}  {v}" for k, v in rows)
