"""Helpers for the upstream-failure tests: fake server entries and a status watcher."""

from __future__ import annotations

import json
import sys
from collections.abc import Callable
from pathlib import Path
from typing import Any

import anyio

from host.config import parse_config
from host.upstream.status import ServerStatus

PY = sys.executable
FAKES = Path(__file__).parent / "fakes"
HOSTILE = str(FAKES / "hostile_stdio.py")


def hostile(**flags: Any) -> dict[str, Any]:
    """A server entry running the hostile stdio fake with ``flags``."""
    return {"command": PY, "args": [HOSTILE, json.dumps(flags)]}


def config(servers: dict[str, Any], **defaults: Any) -> Any:
    """A parsed config with fast lifecycle defaults for tests (overridable)."""
    block = {"connect_timeout_seconds": 20, "backoff_max_seconds": 4, "healthy_after_seconds": 60,
             "relist_min_interval_seconds": 0.2, "ping_interval_seconds": 0.5} | defaults
    return parse_config({"toolhost": block, "mcpServers": servers})


class StatusWatch:
    """An ``on_status`` listener that lets a test await a condition on the statuses."""

    def __init__(self) -> None:
        self.history: list[tuple[str, str, str | None]] = []
        self._event = anyio.Event()

    def __call__(self, status: ServerStatus) -> None:
        self.history.append((status.name, status.state.value, status.error))
        self._event.set()
        self._event = anyio.Event()

    async def until(self, predicate: Callable[[], bool], timeout: float) -> None:
        with anyio.fail_after(timeout):
            while not predicate():
                await self._event.wait()

    def states(self, name: str) -> list[str]:
        out: list[str] = []
        for n, state, _ in self.history:
            if n == name and (not out or out[-1] != state):
                out.append(state)
        return out
