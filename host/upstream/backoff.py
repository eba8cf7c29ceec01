"""Reconnect backoff that learns: grows while sessions stay short, resets only after a sustained
healthy period (a crash loop: a server that exits 0.3 s after each handshake settles into
slow retries instead of being respawned on every call).

Delay of attempt *n* (0-based) after a failure: ``min(max_seconds, base_seconds * factor**n)``
with "full jitter" on the upper ``jitter`` fraction (``delay * (1 - jitter * U[0,1))``), so many
servers that fail together do not retry in lockstep. A session that stayed connected for at
least ``reset_after_seconds`` resets *n* to 0; a shorter one keeps growing it.
"""

from __future__ import annotations

import random
from dataclasses import dataclass, field

__all__ = ["Backoff"]


@dataclass
class Backoff:
    """Exponential reconnect delays with jitter (module docstring). Units: seconds.

    Attributes:
        base_seconds: first delay.
        factor: growth per consecutive short-lived attempt.
        max_seconds: cap of a delay.
        jitter: fraction of a delay that is randomized (0 = none, 1 = full jitter).
        reset_after_seconds: uptime after which a session counts as healthy.
        failures: consecutive attempts that did not reach a healthy period.
    """

    base_seconds: float = 1.0
    factor: float = 2.0
    max_seconds: float = 60.0
    jitter: float = 0.2
    reset_after_seconds: float = 60.0
    failures: int = 0
    rng: random.Random = field(default_factory=random.Random, repr=False)

    def next_delay(self, uptime_seconds: float | None) -> float:
        """The delay before the next attempt, given how long the last session was connected
        (``None``: it never connected)."""
        if uptime_seconds is not None and uptime_seconds >= self.reset_after_seconds:
            self.failures = 0
        delay = min(self.max_seconds, self.base_seconds * self.factor ** min(self.failures, 60))
        self.failures += 1
        return delay * (1.0 - self.jitter * self.rng.random())
