"""A small stdio MCP server offering one of each thing a gateway serves (test peer).

Built on the SDK's low-level ``Server`` (both protocol eras):

* tools ``echo(text)`` → text ``echo: <text>`` and ``touch(uri)`` → announces that the resource
  ``uri`` changed (``notifications/resources/updated`` on a handshake-era session that
  subscribed, and a ``ResourceUpdated`` event on every 2026-07-28 ``subscriptions/listen`` stream);
  both read-only;
* prompt ``greet`` with the required argument ``name`` → one user message ``Hello, <name>!``;
* resources ``memo://readme`` (text :data:`README_TEXT`) and ``memo://logo`` (a 1x1 PNG,
  :data:`LOGO_PNG` base64); the template ``memo://notes/{id}`` → text ``note <id>``;
* completion: ``greet``'s ``name`` from :data:`NAMES`, the template's ``id`` from :data:`NOTE_IDS`
  (values starting with the typed prefix);
* ``resources/subscribe`` / ``unsubscribe`` and ``subscriptions/listen``.

``--journal FILE`` appends one JSON line per subscription request it receives
(``{"op": "subscribe"|"unsubscribe"|"listen", "uris": [...]}``), so a test can see which URIs a
gateway asked it to watch.

Run::

    python tests/peers/catalog_server.py --journal /tmp/journal.jsonl
"""

from __future__ import annotations

import argparse
import json
from pathlib import Path
from typing import Any

import anyio
from mcp import MCPError
from mcp.server import Server, ServerRequestContext
from mcp.server.stdio import stdio_server
from mcp.server.subscriptions import InMemorySubscriptionBus, ListenHandler
from mcp.shared.subscriptions import ResourceUpdated
from mcp.types import (
    INVALID_PARAMS,
    BlobResourceContents,
    CallToolRequestParams,
    CallToolResult,
    CompleteRequestParams,
    CompleteResult,
    EmptyResult,
    GetPromptRequestParams,
    GetPromptResult,
    ListPromptsResult,
    ListResourcesResult,
    ListResourceTemplatesResult,
    ListToolsResult,
    PaginatedRequestParams,
    Prompt,
    PromptArgument,
    PromptMessage,
    PromptReference,
    ReadResourceRequestParams,
    ReadResourceResult,
    Resource,
    ResourceTemplate,
    SubscribeRequestParams,
    SubscriptionsListenRequestParams,
    SubscriptionsListenResult,
    TextContent,
    TextResourceContents,
    Tool,
    ToolAnnotations,
    UnsubscribeRequestParams,
)

__all__ = ["LOGO_PNG", "NAMES", "NOTE_IDS", "README_TEXT", "build_server"]

README_TEXT = "toolhost matrix: every method under every access mode."
LOGO_PNG = "iVBORw0KGgoAAAANSUhEUgAAAAEAAAABCAYAAAAfFcSJAAAADUlEQVR42mP8z8DwHwAFBQIAX8jx0gAAAABJRU5ErkJggg=="
NAMES = ("Ada", "Alan", "Grace")
NOTE_IDS = ("7", "42", "420")

_READ_ONLY = ToolAnnotations(read_only_hint=True, open_world_hint=False)
TOOLS = [
    Tool(name="echo", description="Echoes the text back",
         input_schema={"type": "object", "properties": {"text": {"type": "string"}}, "required": ["text"]},
         annotations=_READ_ONLY),
    Tool(name="touch", description="Announces that a resource changed",
         input_schema={"type": "object", "properties": {"uri": {"type": "string"}}, "required": ["uri"]},
         annotations=_READ_ONLY),
]
PROMPTS = [
    Prompt(name="greet", description="Greets someone by name",
           arguments=[PromptArgument(name="name", description="Who to greet", required=True)]),
]
RESOURCES = [
    Resource(uri="memo://readme", name="readme", description="What this server is", mime_type="text/plain"),
    Resource(uri="memo://logo", name="logo", description="A 1x1 PNG", mime_type="image/png"),
]
TEMPLATES = [
    ResourceTemplate(uri_template="memo://notes/{id}", name="notes", description="A note by id",
                     mime_type="text/plain"),
]


class _Peer:
    """The handlers, with the listen bus and the journal (see module docstring)."""

    def __init__(self, journal: Path | None) -> None:
        self.journal = journal
        self.bus = InMemorySubscriptionBus()
        self.listen = ListenHandler(self.bus)

    def _record(self, op: str, uris: list[str]) -> None:
        if self.journal is not None:
            with self.journal.open("a") as f:
                f.write(json.dumps({"op": op, "uris": uris}) + "\n")

    async def list_tools(self, ctx: Any, params: PaginatedRequestParams | None) -> ListToolsResult:
        return ListToolsResult(tools=TOOLS)

    async def call_tool(self, ctx: ServerRequestContext[Any, Any], params: CallToolRequestParams) -> CallToolResult:
        args = params.arguments or {}
        if params.name == "echo":
            return CallToolResult(content=[TextContent(type="text", text=f"echo: {args.get('text')}")])
        if params.name == "touch":
            uri = str(args.get("uri"))
            await self.bus.publish(ResourceUpdated(uri=uri))
            if ctx.protocol_version < "2026":
                await ctx.session.send_resource_updated(uri)
            return CallToolResult(content=[TextContent(type="text", text=f"touched {uri}")])
        return CallToolResult(content=[TextContent(type="text", text=f"Unknown tool: {params.name}")], is_error=True)

    async def list_prompts(self, ctx: Any, params: PaginatedRequestParams | None) -> ListPromptsResult:
        return ListPromptsResult(prompts=PROMPTS)

    async def get_prompt(self, ctx: Any, params: GetPromptRequestParams) -> GetPromptResult:
        if params.name != "greet":
            raise MCPError(INVALID_PARAMS, f"Unknown prompt: {params.name}")
        name = (params.arguments or {}).get("name", "")
        return GetPromptResult(messages=[PromptMessage(role="user", content=TextContent(type="text",
                                                                                       text=f"Hello, {name}!"))])

    async def list_resources(self, ctx: Any, params: PaginatedRequestParams | None) -> ListResourcesResult:
        return ListResourcesResult(resources=RESOURCES)

    async def list_templates(self, ctx: Any, params: PaginatedRequestParams | None) -> ListResourceTemplatesResult:
        return ListResourceTemplatesResult(resource_templates=TEMPLATES)

    async def read_resource(self, ctx: Any, params: ReadResourceRequestParams) -> ReadResourceResult:
        uri = str(params.uri)
        if uri == "memo://readme":
            text = TextResourceContents(uri=uri, mime_type="text/plain", text=README_TEXT)
            return ReadResourceResult(contents=[text])
        if uri == "memo://logo":
            return ReadResourceResult(contents=[BlobResourceContents(uri=uri, mime_type="image/png", blob=LOGO_PNG)])
        if uri.startswith("memo://notes/"):
            note = uri.removeprefix("memo://notes/")
            return ReadResourceResult(contents=[TextResourceContents(uri=uri, mime_type="text/plain",
                                                                     text=f"note {note}")])
        raise MCPError(-32002, f"Resource not found: {uri}", {"uri": uri})

    async def complete(self, ctx: Any, params: CompleteRequestParams) -> CompleteResult:
        options = NAMES if isinstance(params.ref, PromptReference) else NOTE_IDS
        values = [v for v in options if v.startswith(params.argument.value)]
        return CompleteResult(completion={"values": values, "total": len(values), "hasMore": False})

    async def subscribe(self, ctx: Any, params: SubscribeRequestParams) -> EmptyResult:
        self._record("subscribe", [str(params.uri)])
        return EmptyResult()

    async def unsubscribe(self, ctx: Any, params: UnsubscribeRequestParams) -> EmptyResult:
        self._record("unsubscribe", [str(params.uri)])
        return EmptyResult()

    async def subscriptions_listen(
        self, ctx: ServerRequestContext[Any, Any], params: SubscriptionsListenRequestParams
    ) -> SubscriptionsListenResult:
        self._record("listen", list(params.notifications.resource_subscriptions or ()))
        return await self.listen(ctx, params)


def build_server(journal: Path | None = None) -> Server[Any]:
    """The peer server (see module docstring); ``journal``: where subscription requests are recorded."""
    peer = _Peer(journal)
    return Server(
        "catalog-peer",
        version="1.0.0",
        on_list_tools=peer.list_tools,
        on_call_tool=peer.call_tool,
        on_list_prompts=peer.list_prompts,
        on_get_prompt=peer.get_prompt,
        on_list_resources=peer.list_resources,
        on_list_resource_templates=peer.list_templates,
        on_read_resource=peer.read_resource,
        on_subscribe_resource=peer.subscribe,
        on_unsubscribe_resource=peer.unsubscribe,
        on_completion=peer.complete,
        on_subscriptions_listen=peer.subscriptions_listen,
    )


async def _serve(journal: Path | None) -> None:
    server = build_server(journal)
    async with stdio_server() as (read, write):
        await server.run(read, write, server.create_initialization_options())


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--journal", type=Path, default=None, help="append subscription requests here (JSON lines)")
    anyio.run(_serve, parser.parse_args().journal)


if __name__ == "__main__":
    main()
