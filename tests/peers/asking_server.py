"""A handshake-era stdio MCP server whose tools and prompt ask the client mid-call (test peer).

Tools: ``ask_name`` (one ``elicitation/create``), ``ask_twice`` (two in a row: name, then
colour), ``list_roots`` (``roots/list``), ``ask_model`` (``sampling/createMessage``); prompt
``greeting`` (elicits the name, then greets). Every answer changes the result, so a test sees
that it reached this server. Run as a toolhost upstream with ``"toolhost": {"protocol": "legacy"}``.
"""

from __future__ import annotations

from typing import Any

import anyio
from mcp.server import Server, ServerRequestContext
from mcp.server.stdio import stdio_server
from mcp.shared.message import ServerMessageMetadata
from mcp.types import (
    CallToolRequestParams,
    CallToolResult,
    CreateMessageRequest,
    CreateMessageRequestParams,
    CreateMessageResult,
    ElicitRequest,
    ElicitRequestFormParams,
    ElicitResult,
    GetPromptRequestParams,
    GetPromptResult,
    ListPromptsResult,
    ListRootsRequest,
    ListRootsResult,
    ListToolsResult,
    Prompt,
    PromptMessage,
    SamplingMessage,
    TextContent,
    Tool,
)

_OBJ = {"type": "object"}
TOOLS = [Tool(name=n, description=d, input_schema=_OBJ) for n, d in (
    ("ask_name", "Asks the user's name"), ("ask_twice", "Asks name then colour"),
    ("list_roots", "Lists the client's roots"), ("ask_model", "Asks the client's model"))]


async def _ask(ctx: ServerRequestContext[Any, Any], message: str, field: str) -> ElicitResult:
    schema = {"type": "object", "properties": {field: {"type": "string"}}, "required": [field]}
    return await ctx.session.send_request(
        ElicitRequest(params=ElicitRequestFormParams(message=message, requested_schema=schema)), ElicitResult,
        metadata=ServerMessageMetadata(related_request_id=ctx.request_id))


def _said(r: ElicitResult, field: str) -> str:
    return f"{r.action}:{(r.content or {}).get(field, '-')}"


def _text(text: str) -> CallToolResult:
    return CallToolResult(content=[TextContent(type="text", text=text)])


async def call_tool(ctx: ServerRequestContext[Any, Any], params: CallToolRequestParams) -> CallToolResult:
    meta = ServerMessageMetadata(related_request_id=ctx.request_id)
    if params.name == "ask_name":
        return _text("name=" + _said(await _ask(ctx, "Your name?", "name"), "name"))
    if params.name == "ask_twice":
        name = _said(await _ask(ctx, "Your name?", "name"), "name")
        colour = _said(await _ask(ctx, "Your colour?", "colour"), "colour")
        return _text(f"name={name} colour={colour}")
    if params.name == "list_roots":
        roots = await ctx.session.send_request(ListRootsRequest(), ListRootsResult, metadata=meta)
        return _text("roots=" + ",".join(str(r.uri) for r in roots.roots))
    if params.name == "ask_model":
        r = await ctx.session.send_request(CreateMessageRequest(params=CreateMessageRequestParams(
            messages=[SamplingMessage(role="user", content=TextContent(type="text", text="6*7?"))], max_tokens=10)),
            CreateMessageResult, metadata=meta)
        return _text(f"model said {r.content.text}")  # type: ignore[union-attr]
    return CallToolResult(content=[TextContent(type="text", text=f"unknown tool {params.name}")], is_error=True)


async def list_tools(ctx: Any, params: Any) -> ListToolsResult:
    return ListToolsResult(tools=TOOLS)


async def list_prompts(ctx: Any, params: Any) -> ListPromptsResult:
    return ListPromptsResult(prompts=[Prompt(name="greeting", description="Greets the user by name")])


async def get_prompt(ctx: ServerRequestContext[Any, Any], params: GetPromptRequestParams) -> GetPromptResult:
    name = _said(await _ask(ctx, "Your name?", "name"), "name")
    return GetPromptResult(
        messages=[PromptMessage(role="user", content=TextContent(type="text", text=f"Hello {name}"))]
    )


async def main() -> None:
    server = Server(
        "asking",
        version="1.0.0",
        on_list_tools=list_tools,
        on_call_tool=call_tool,
        on_list_prompts=list_prompts,
        on_get_prompt=get_prompt,
    )
    async with stdio_server() as (read, write):
        await server.run(read, write, server.create_initialization_options())


if __name__ == "__main__":
    anyio.run(main)
