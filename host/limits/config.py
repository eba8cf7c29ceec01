"""The ``toolhost.rate_limits`` and ``toolhost.sessions`` config blocks.

Example (``config.json``)::

    "toolhost": {
      "rate_limits": {
        "per_user": {"calls": 120, "per_seconds": 60},
        "per_tool": {"calls": 30, "per_seconds": 60},
        "tools": {"orders__cancel_order": {"calls": 2, "per_seconds": 60}, "server:git": {"calls": 10, "per_seconds":
        60}},
        "users": {"batch-bot": {"calls": 600, "per_seconds": 60}}
      },
      "sessions": {"max_per_user": 32, "idle_seconds": 600}
    }
"""

from __future__ import annotations

import fnmatch

from pydantic import BaseModel, ConfigDict, Field

__all__ = ["RateLimitConfig", "RateRule", "SessionLimits"]


class RateRule(BaseModel):
    """A token bucket: up to ``calls`` calls at once, refilled at ``calls / per_seconds`` per second."""

    model_config = ConfigDict(extra="forbid", frozen=True)

    calls: int = Field(gt=0)
    per_seconds: float = Field(gt=0)

    @property
    def rate(self) -> float:
        """Tokens added per second."""
        return self.calls / self.per_seconds


class RateLimitConfig(BaseModel):
    """Rate limits; every call must pass each rule that applies (none configured: no limit).

    Attributes:
        per_user: every user's calls together (all tools).
        per_tool: each user's calls of each tool (the default for tools not in ``tools``).
        tools: per-tool rules by qualified name, glob (``orders__*``) or ``server:NAME``, for each user.
        users: per-user overrides of ``per_user`` by user name.
    """

    model_config = ConfigDict(extra="forbid", frozen=True)

    per_user: RateRule | None = None
    per_tool: RateRule | None = None
    tools: dict[str, RateRule] = Field(default_factory=dict)
    users: dict[str, RateRule] = Field(default_factory=dict)

    def user_rule(self, user: str) -> RateRule | None:
        return self.users.get(user, self.per_user)

    def tool_rule(self, tool: str, server: str) -> tuple[str, RateRule] | None:
        """``(the matching key, its rule)`` for ``tool``: an exact name first, then ``server:NAME``,
        then the first matching glob, else ``per_tool``."""
        if tool in self.tools:
            return tool, self.tools[tool]
        if f"server:{server}" in self.tools:
            return f"server:{server}", self.tools[f"server:{server}"]
        for pattern, rule in self.tools.items():
            if not pattern.startswith("server:") and fnmatch.fnmatchcase(tool, pattern):
                return pattern, rule
        return ("*", self.per_tool) if self.per_tool is not None else None


class SessionLimits(BaseModel):
    """Streamable-HTTP session limits of ``toolhost serve``.

    Attributes:
        max_per_user: open sessions one user (API key owner) may hold; the next one is refused
            with HTTP 429 while others keep working.
        idle_seconds: a session with no request for this long is closed.
        max_total: open sessions of all users together (the SDK's ``max_sessions``).
    """

    model_config = ConfigDict(extra="forbid", frozen=True)

    max_per_user: int = Field(default=32, gt=0)
    idle_seconds: float = Field(default=600.0, gt=0)
    max_total: int = Field(default=10_000, gt=0)
