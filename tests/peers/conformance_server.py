"""toolhost's fixture server for the official MCP conformance suite (server scenarios).

Written from the scenario expectations of ``@modelcontextprotocol/conformance`` (tools,
resources and prompts named ``test_*`` / ``test://...``); the python-sdk's everything-server is
the reference. Built on the SDK's low-level ``Server`` so every definition (raw JSON Schemas,
content blocks) is exactly what the suite checks.

Run::

    python tests/peers/conformance_server.py --port 3002     # streamable HTTP on /mcp (the anchor)
    python tests/peers/conformance_server.py --stdio         # stdio (as a toolhost upstream)
"""

from __future__ import annotations

import argparse
import json
import warnings
from typing import Any

import anyio
from mcp import MCPError
from mcp.server import Server, ServerRequestContext
from mcp.server.stdio import stdio_server
from mcp.types import (
    INVALID_PARAMS,
    AudioContent,
    BlobResourceContents,
    CallToolRequestParams,
    CallToolResult,
    CompleteRequestParams,
    CompleteResult,
    CreateMessageRequest,
    CreateMessageRequestParams,
    CreateMessageResult,
    ElicitRequest,
    ElicitRequestFormParams,
    ElicitResult,
    EmbeddedResource,
    EmptyResult,
    GetPromptRequestParams,
    GetPromptResult,
    ImageContent,
    ListPromptsResult,
    ListResourcesResult,
    ListResourceTemplatesResult,
    ListToolsResult,
    PaginatedRequestParams,
    Prompt,
    PromptArgument,
    PromptMessage,
    ReadResourceRequestParams,
    ReadResourceResult,
    Resource,
    ResourceTemplate,
    SamplingMessage,
    SetLevelRequestParams,
    SubscribeRequestParams,
    TextContent,
    TextResourceContents,
    Tool,
    UnsubscribeRequestParams,
)
from mcp.shared.message import ServerMessageMetadata

IMAGE_PNG = "iVBORw0KGgoAAAANSUhEUgAAAAEAAAABCAYAAAAfFcSJAAAADUlEQVR42mP8z8DwHwAFBQIAX8jx0gAAAABJRU5ErkJggg=="
AUDIO_WAV = "UklGRiYAAABXQVZFZm10IBAAAAABAAEAQB8AAAB9AAACABAAZGF0YQIAAAA="
EMPTY: dict[str, Any] = {"type": "object", "properties": {}}

TOOLS = [
    Tool(name="test_simple_text", description="Returns one text block", input_schema=EMPTY),
    Tool(name="test_image_content", description="Returns one PNG image block", input_schema=EMPTY),
    Tool(name="test_audio_content", description="Returns one WAV audio block", input_schema=EMPTY),
    Tool(name="test_embedded_resource", description="Returns an embedded text resource", input_schema=EMPTY),
    Tool(name="test_multiple_content_types", description="Returns text, image and resource", input_schema=EMPTY),
    Tool(name="test_tool_with_logging", description="Sends three info log messages", input_schema=EMPTY),
    Tool(name="test_tool_with_progress", description="Reports progress 0, 50, 100 of 100", input_schema=EMPTY),
    Tool(name="test_error_handling", description="Always fails (isError)", input_schema=EMPTY),
    Tool(name="test_sampling", description="Asks the client's model (sampling/createMessage)",
         input_schema={"type": "object", "properties": {"prompt": {"type": "string"}}, "required": ["prompt"]}),
    Tool(name="test_elicitation", description="Asks the user (elicitation/create)",
         input_schema={"type": "object", "properties": {"message": {"type": "string"}}, "required": ["message"]}),
    Tool(name="test_elicitation_sep1034_defaults", description="Elicitation with defaults (SEP-1034)", input_schema=EMPTY),
    Tool(name="test_elicitation_sep1330_enums", description="Elicitation with enum variants (SEP-1330)", input_schema=EMPTY),
    Tool(name="json_schema_2020_12_tool", description="Input schema using JSON Schema 2020-12 keywords",
         input_schema={
             "$schema": "https://json-schema.org/draft/2020-12/schema",
             "type": "object",
             "$defs": {"address": {"type": "object", "properties": {"street": {"type": "string"},
                                                                     "city": {"type": "string"}}}},
             "properties": {"name": {"type": "string"}, "address": {"$ref": "#/$defs/address"}},
             "additionalProperties": False,
         }),
]

SEP1034_SCHEMA: dict[str, Any] = {
    "type": "object",
    "properties": {
        "name": {"type": "string", "description": "User name", "default": "John Doe"},
        "age": {"type": "integer", "description": "User age", "default": 30},
        "score": {"type": "number", "description": "User score", "default": 95.5},
        "status": {"type": "string", "description": "User status", "enum": ["active", "inactive", "pending"],
                   "default": "active"},
        "verified": {"type": "boolean", "description": "Verification status", "default": True},
    },
}
SEP1330_SCHEMA: dict[str, Any] = {
    "type": "object",
    "properties": {
        "untitledSingle": {"type": "string", "description": "Simple enum without titles",
                           "enum": ["active", "inactive", "pending"]},
        "titledSingle": {"type": "string", "description": "Enum with titled options (oneOf)",
                         "oneOf": [{"const": "low", "title": "Low Priority"},
                                   {"const": "medium", "title": "Medium Priority"},
                                   {"const": "high", "title": "High Priority"}]},
        "untitledMulti": {"type": "array", "description": "Multi-select without titles",
                          "items": {"type": "string", "enum": ["read", "write", "execute"]}},
        "titledMulti": {"type": "array", "description": "Multi-select with titled options",
                        "items": {"anyOf": [{"const": "feature", "title": "New Feature"},
                                            {"const": "bug", "title": "Bug Fix"},
                                            {"const": "docs", "title": "Documentation"}]}},
        "legacyEnum": {"type": "string", "description": "Legacy enum with enumNames",
                       "enum": ["small", "medium", "large"], "enumNames": ["Small Size", "Medium Size", "Large Size"]},
    },
    "required": ["untitledSingle", "titledSingle", "untitledMulti", "titledMulti", "legacyEnum"],
}

RESOURCES = [
    Resource(uri="test://static-text", name="static-text", description="A static text resource", mime_type="text/plain"),
    Resource(uri="test://static-binary", name="static-binary", description="A static PNG image", mime_type="image/png"),
    Resource(uri="test://watched-resource", name="watched-resource", description="Subscribable", mime_type="text/plain"),
]
TEMPLATES = [
    ResourceTemplate(uri_template="test://template/{id}/data", name="template-data",
                     description="Data for an id", mime_type="application/json"),
]
PROMPTS = [
    Prompt(name="test_simple_prompt", description="A prompt without arguments"),
    Prompt(name="test_prompt_with_arguments", description="A prompt with two required arguments",
           arguments=[PromptArgument(name="arg1", description="First", required=True),
                      PromptArgument(name="arg2", description="Second", required=True)]),
    Prompt(name="test_prompt_with_embedded_resource", description="A prompt embedding a resource",
           arguments=[PromptArgument(name="resourceUri", description="URI to embed", required=True)]),
    Prompt(name="test_prompt_with_image", description="A prompt with an image"),
]


def _text(text: str, *, error: bool = False) -> CallToolResult:
    return CallToolResult(content=[TextContent(type="text", text=text)], is_error=error)


async def _log(ctx: ServerRequestContext[Any, Any], text: str) -> None:
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        await ctx.session.send_log_message("info", text, "conformance", related_request_id=ctx.request_id)


async def _elicit(ctx: ServerRequestContext[Any, Any], message: str, schema: dict[str, Any]) -> ElicitResult:
    return await ctx.session.send_request(
        ElicitRequest(params=ElicitRequestFormParams(message=message, requested_schema=schema)),
        ElicitResult, metadata=ServerMessageMetadata(related_request_id=ctx.request_id))


async def call_tool(ctx: ServerRequestContext[Any, Any], params: CallToolRequestParams) -> CallToolResult:
    name, args = params.name, params.arguments or {}
    if name == "test_simple_text":
        return _text("This is a simple text response for testing.")
    if name == "test_image_content":
        return CallToolResult(content=[ImageContent(type="image", data=IMAGE_PNG, mime_type="image/png")])
    if name == "test_audio_content":
        return CallToolResult(content=[AudioContent(type="audio", data=AUDIO_WAV, mime_type="audio/wav")])
    if name == "test_embedded_resource":
        return CallToolResult(content=[EmbeddedResource(type="resource", resource=TextResourceContents(
            uri="test://embedded-resource", mime_type="text/plain", text="This is an embedded resource content."))])
    if name == "test_multiple_content_types":
        return CallToolResult(content=[
            TextContent(type="text", text="Multiple content types test:"),
            ImageContent(type="image", data=IMAGE_PNG, mime_type="image/png"),
            EmbeddedResource(type="resource", resource=TextResourceContents(
                uri="test://mixed-content-resource", mime_type="application/json", text='{"test": "data", "value": 123}')),
        ])
    if name == "test_tool_with_logging":
        for step in ("Tool execution started", "Tool processing data", "Tool execution completed"):
            await _log(ctx, step)
            await anyio.sleep(0.02)
        return _text("Tool with logging executed successfully")
    if name == "test_tool_with_progress":
        for done in (0, 50, 100):
            await ctx.session.report_progress(done, 100, f"Completed step {done} of 100")
        token = ctx.meta.get("progress_token") if isinstance(ctx.meta, dict) else getattr(ctx.meta, "progress_token", None)
        return _text(str(token if token is not None else 0))
    if name == "test_error_handling":
        return _text("This tool intentionally returns an error for testing", error=True)
    if name == "test_sampling":
        result = await ctx.session.send_request(
            CreateMessageRequest(params=CreateMessageRequestParams(
                messages=[SamplingMessage(role="user", content=TextContent(type="text", text=str(args.get("prompt", ""))))],
                max_tokens=100)),
            CreateMessageResult, metadata=ServerMessageMetadata(related_request_id=ctx.request_id))
        content = result.content
        text = content.text if isinstance(content, TextContent) else "No response"
        return _text(f"LLM response: {text}")
    if name == "test_elicitation":
        schema = {"type": "object", "properties": {"response": {"type": "string", "description": "User's response"}},
                  "required": ["response"]}
        r = await _elicit(ctx, str(args.get("message", "")), schema)
        return _text(f"User response: action={r.action}, content={json.dumps(r.content or {})}")
    if name == "test_elicitation_sep1034_defaults":
        r = await _elicit(ctx, "Please provide user information", SEP1034_SCHEMA)
        return _text(f"Elicitation result: action={r.action}, content={json.dumps(r.content or {})}")
    if name == "test_elicitation_sep1330_enums":
        r = await _elicit(ctx, "Please select values using different enum schema types", SEP1330_SCHEMA)
        return _text(f"Elicitation completed: action={r.action}, content={json.dumps(r.content or {})}")
    if name == "json_schema_2020_12_tool":
        return _text(f"Received: {json.dumps(args)}")
    return _text(f"Unknown tool: {name}", error=True)


async def list_tools(ctx: Any, params: PaginatedRequestParams | None) -> ListToolsResult:
    return ListToolsResult(tools=TOOLS)


async def list_resources(ctx: Any, params: PaginatedRequestParams | None) -> ListResourcesResult:
    return ListResourcesResult(resources=RESOURCES)


async def list_templates(ctx: Any, params: PaginatedRequestParams | None) -> ListResourceTemplatesResult:
    return ListResourceTemplatesResult(resource_templates=TEMPLATES)


async def read_resource(ctx: Any, params: ReadResourceRequestParams) -> ReadResourceResult:
    uri = str(params.uri)
    if uri == "test://static-text":
        return ReadResourceResult(contents=[TextResourceContents(
            uri=uri, mime_type="text/plain", text="This is the content of the static text resource.")])
    if uri == "test://static-binary":
        return ReadResourceResult(contents=[BlobResourceContents(uri=uri, mime_type="image/png", blob=IMAGE_PNG)])
    if uri == "test://watched-resource":
        return ReadResourceResult(contents=[TextResourceContents(uri=uri, mime_type="text/plain",
                                                                 text="Watched resource content")])
    if uri.startswith("test://template/") and uri.endswith("/data"):
        ident = uri[len("test://template/"):-len("/data")]
        body = json.dumps({"id": ident, "templateTest": True, "data": f"Data for ID: {ident}"})
        return ReadResourceResult(contents=[TextResourceContents(uri=uri, mime_type="application/json", text=body)])
    raise MCPError(-32002, f"Resource not found: {uri}", {"uri": uri})


async def list_prompts(ctx: Any, params: PaginatedRequestParams | None) -> ListPromptsResult:
    return ListPromptsResult(prompts=PROMPTS)


async def get_prompt(ctx: Any, params: GetPromptRequestParams) -> GetPromptResult:
    args = params.arguments or {}
    if params.name == "test_simple_prompt":
        msgs = [PromptMessage(role="user", content=TextContent(type="text", text="This is a simple prompt for testing."))]
    elif params.name == "test_prompt_with_arguments":
        text = f"Prompt with arguments: arg1='{args.get('arg1', '')}', arg2='{args.get('arg2', '')}'"
        msgs = [PromptMessage(role="user", content=TextContent(type="text", text=text))]
    elif params.name == "test_prompt_with_embedded_resource":
        msgs = [
            PromptMessage(role="user", content=EmbeddedResource(type="resource", resource=TextResourceContents(
                uri=args.get("resourceUri", "test://example-resource"), mime_type="text/plain",
                text="Embedded resource content for testing."))),
            PromptMessage(role="user", content=TextContent(type="text", text="Please process the embedded resource above.")),
        ]
    elif params.name == "test_prompt_with_image":
        msgs = [
            PromptMessage(role="user", content=ImageContent(type="image", data=IMAGE_PNG, mime_type="image/png")),
            PromptMessage(role="user", content=TextContent(type="text", text="Please analyze the image above.")),
        ]
    else:
        raise MCPError(INVALID_PARAMS, f"Unknown prompt: {params.name}")
    return GetPromptResult(messages=msgs)


async def complete(ctx: Any, params: CompleteRequestParams) -> CompleteResult:
    value = params.argument.value
    options = {"arg1": ["alpha", "beta", "gamma"], "id": ["123", "456"]}.get(params.argument.name, [])
    values = [v for v in options if v.startswith(value)]
    return CompleteResult(completion={"values": values, "total": len(values), "hasMore": False})


async def set_level(ctx: Any, params: SetLevelRequestParams) -> EmptyResult:
    return EmptyResult()


async def subscribe(ctx: Any, params: SubscribeRequestParams) -> EmptyResult:
    return EmptyResult()


async def unsubscribe(ctx: Any, params: UnsubscribeRequestParams) -> EmptyResult:
    return EmptyResult()


def build_server() -> Server[Any]:
    """The fixture server (see module docstring)."""
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")  # logging is deprecated at 2026-07-28; the suite still tests it
        return Server(
            "toolhost-conformance-fixture",
            version="1.0.0",
            on_list_tools=list_tools,
            on_call_tool=call_tool,
            on_list_resources=list_resources,
            on_list_resource_templates=list_templates,
            on_read_resource=read_resource,
            on_subscribe_resource=subscribe,
            on_unsubscribe_resource=unsubscribe,
            on_list_prompts=list_prompts,
            on_get_prompt=get_prompt,
            on_completion=complete,
            on_set_logging_level=set_level,
        )


async def _stdio() -> None:
    server = build_server()
    async with stdio_server() as (read, write):
        await server.run(read, write, server.create_initialization_options())


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--port", type=int, default=3002)
    parser.add_argument("--stdio", action="store_true")
    ns = parser.parse_args()
    if ns.stdio:
        anyio.run(_stdio)
        return
    import uvicorn

    uvicorn.run(build_server().streamable_http_app(host="127.0.0.1"), host="127.0.0.1", port=ns.port, log_level="warning")


if __name__ == "__main__":
    main()
