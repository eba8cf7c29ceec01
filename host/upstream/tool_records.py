"""From a server's ``tools/list`` answer to registry records, before they reach the registry.

* :func:`tool_definition`: one SDK ``Tool`` as a :class:`registry.ToolDefinition`;
* :func:`records_from_tools`: a listing with the server's ``toolhost`` block applied (enabled /
  disabled, overrides) and namespaced names (:func:`registry.assign_qualified_names`);
* :func:`unmatched_tool_names`: warnings for names in that block no listed tool has (typos);
* :class:`DefinitionPrescorer`: slow per-definition work the manager awaits before a listing
  reaches the registry (:class:`host.upstream.manager.ServerManager`'s ``prescorer``).
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import Protocol

from mcp.types import Tool

from host.config import HostConfig, ServerConfig
from registry import ToolAnnotations, ToolDefinition, ToolRecord, assign_qualified_names, build_record

__all__ = ["DefinitionPrescorer", "records_from_tools", "tool_definition", "unmatched_tool_names"]


class DefinitionPrescorer(Protocol):
    """Slow per-definition work (the learned definition scan) done before a listing reaches the
    registry, so the registry's synchronous listeners find it done (:class:`host.store.pin_safety.PinSafety`)."""

    def unscored(self, records: Sequence[ToolRecord]) -> list[ToolRecord]:
        """The records still needing :meth:`prescore` (``[]``: the listing may apply at once)."""
        ...

    async def prescore(self, records: Sequence[ToolRecord]) -> None:
        """Do the work for ``records`` without blocking the event loop (a worker thread)."""
        ...


def tool_definition(tool: Tool) -> ToolDefinition:
    """Convert an SDK ``Tool`` (a ``tools/list`` entry) into a registry :class:`ToolDefinition`."""
    ann = tool.annotations
    annotations = ToolAnnotations() if ann is None else ToolAnnotations(
        title=ann.title,
        read_only_hint=ann.read_only_hint,
        destructive_hint=ann.destructive_hint,
        idempotent_hint=ann.idempotent_hint,
        open_world_hint=ann.open_world_hint,
    )
    schema = dict(tool.input_schema or {})
    schema.setdefault("type", "object")
    return ToolDefinition(
        name=tool.name,
        title=tool.title,
        description=tool.description or "",
        input_schema=schema,
        output_schema=dict(tool.output_schema) if tool.output_schema else None,
        annotations=annotations,
    )


def records_from_tools(config: HostConfig, server: ServerConfig, tools: list[Tool]) -> list[ToolRecord]:
    """Apply the server's ``toolhost`` block to a listing and build namespaced records.

    Tools excluded by ``enabled``/``disabled`` are dropped; names are assigned with
    :func:`registry.assign_qualified_names` (stable, unique, provider-safe).
    """
    opts = server.toolhost
    kept = [t for t in tools if opts.includes(t.name)]
    names = assign_qualified_names(server.prefix, [t.name for t in kept], server=server.name)
    return [
        build_record(
            server=server.name,
            qualified_name=names[t.name],
            definition=tool_definition(t),
            overrides=opts.overrides_for(t.name),
            default_timeout_seconds=config.defaults.timeout_seconds,
            default_max_output_chars=config.defaults.max_output_chars,
        )
        for t in kept
    ]


def unmatched_tool_names(server: ServerConfig, tools: list[Tool]) -> list[str]:
    """Warnings for names in the server's ``toolhost`` block that match no listed tool (typos)."""
    listed = {t.name for t in tools}
    opts = server.toolhost
    lists = {
        "enabled": opts.enabled or [],
        "disabled": opts.disabled,
        "always_load": opts.always_load,
        "risk": list(opts.risk),
        "tools": list(opts.tools),
    }
    out = []
    for key, names in lists.items():
        for name in names:
            if name not in listed:
                out.append(f"toolhost.{key} names {name!r}, which {server.name!r} does not list")
    return out
