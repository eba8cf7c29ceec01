"""The one seam through which a script's tool calls reach the host.

The sandbox driver (:mod:`host.code_mode.pool`) sends every inner call to an :class:`InnerCaller`;
the gateway implements it with the full call pipeline (validation, authorization, pins, budgets,
rate limits, output limits, redaction, audit naming the script and step). The driver has already
checked the name against the script's capability manifest and the inner-call limit; concurrency is
the implementation's decision (calls arrive as soon as the script starts them, e.g. under
``asyncio.gather``).
"""

from __future__ import annotations

from typing import Any, Protocol, runtime_checkable

from host.calls import ToolResult

__all__ = ["InnerCaller"]


@runtime_checkable
class InnerCaller(Protocol):
    """Runs one tool call a script made."""

    async def call(self, name: str, arguments: dict[str, Any], *, step: int) -> ToolResult:
        """Run tool ``name`` (a qualified name from the manifest) with ``arguments``.

        Args:
            name: qualified tool name, always one of the script's manifest.
            arguments: the keyword arguments the script passed (JSON-shaped values).
            step: 0-based index of this call in the script's run, in the order the script started them.

        Returns:
            The result; an error result (``status`` not ``ok``) becomes an exception in the script.
            Should not raise: an exception is reported to the script as ``upstream_error`` at ``code_mode.inner_call``.
        """
        ...
