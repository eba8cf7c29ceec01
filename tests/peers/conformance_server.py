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
from mcp.server.request_state import RequestStateBoundary, RequestStateSecurity
from mcp.server.stdio import stdio_server
from mcp.server.subscriptions import InMemorySubscriptionBus, ListenHandler
from mcp.shared.subscriptions import ResourceUpdated
from mcp.types import (
    INVALID_PARAMS,
    AudioContent,
    BlobResourceContents,
    CallToolRequestParams,
    CallToolResult,
    ClientCapabilities,
    CompleteRequestParams,
    CompleteResult,
    CreateMessageRequest,
    CreateMessageRequestParams,
    CreateMessageResult,
    ElicitationCapability,
    ElicitRequest,
    ElicitRequestFormParams,
    ElicitResult,
    EmbeddedResource,
    EmptyResult,
    GetPromptRequestParams,
    GetPromptResult,
    ImageContent,
    InputRequiredResult,
    ListPromptsResult,
    ListResourcesResult,
    ListResourceTemplatesResult,
    ListRootsRequest,
    ListRootsResult,
    ListToolsResult,
    PaginatedRequestParams,
    Prompt,
    PromptArgument,
    PromptMessage,
    ReadResourceRequestParams,
    ReadResourceResult,
    Resource,
    ResourceTemplate,
    SamplingCapability,
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
BUS = InMemorySubscriptionBus()
"""2026-07-28 ``subscriptions/listen`` fan-out (list changes, resource updates)."""

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
    *[Tool(name=name, description=text, input_schema=EMPTY) for name, text in (
        ("test_input_required_result_elicitation", "MRTR: asks the user's name (one elicitation round)"),
        ("test_input_required_result_sampling", "MRTR: asks the client's model (one sampling round)"),
        ("test_input_required_result_list_roots", "MRTR: asks the client's roots (one roots/list round)"),
        ("test_input_required_result_request_state", "MRTR: one elicitation round with integrity-protected requestState"),
        ("test_input_required_result_multiple_inputs", "MRTR: elicitation, sampling and roots in one round"),
        ("test_input_required_result_multi_round", "MRTR: two elicitation rounds with evolving requestState"),
        ("test_input_required_result_tampered_state", "MRTR: rejects a tampered requestState"),
        ("test_input_required_result_capabilities", "MRTR: asks only for input kinds the client declared"),
    )],
    Tool(name="json_schema_2020_12_tool", description="Tool with JSON Schema 2020-12 features",
         input_schema={
             "$schema": "https://json-schema.org/draft/2020-12/schema",
             "type": "object",
             "$defs": {"address": {"$anchor": "addressDef", "type": "object",
                                   "properties": {"street": {"type": "string"}, "city": {"type": "string"}}}},
             "properties": {"name": {"type": "string"}, "address": {"$ref": "#/$defs/address"},
                            "contactMethod": {"type": "string", "enum": ["phone", "email"]},
                            "phone": {"type": "string"}, "email": {"type": "string"}},
             "allOf": [{"anyOf": [{"required": ["phone"]}, {"required": ["email"]}]}],
             "if": {"properties": {"contactMethod": {"const": "phone"}}, "required": ["contactMethod"]},
             "then": {"required": ["phone"]},
             "else": {"required": ["email"]},
             "additionalProperties": False,
         }),
    Tool(name="test_custom_header", description="Echoes a region the client also sends as the Mcp-Param-Region header",
         input_schema={"type": "object", "properties": {"region": {"type": "string", "x-mcp-header": "Region"}},
                       "required": ["region"]}),
    Tool(name="test_reconnection", description="Closes its SSE stream mid-call, then answers (SEP-1699)",
         input_schema=EMPTY),
    Tool(name="test_touch_watched_resource", description="Announces that test://watched-resource changed",
         input_schema=EMPTY),
    Tool(name="test_missing_capability", description="Needs sampling: -32021 when the client did not declare it",
         input_schema=EMPTY),
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
    Prompt(name="test_input_required_result_prompt", description="MRTR: asks for context before rendering"),
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


def _string_form(message: str, field: str) -> ElicitRequest:
    return ElicitRequest(params=ElicitRequestFormParams(message=message, requested_schema={
        "type": "object", "properties": {field: {"type": "string"}}, "required": [field]}))


def _sampling(text: str, max_tokens: int) -> CreateMessageRequest:
    return CreateMessageRequest(params=CreateMessageRequestParams(
        messages=[SamplingMessage(role="user", content=TextContent(type="text", text=text))], max_tokens=max_tokens))


def _accepted(responses: dict[str, Any], key: str, field: str) -> Any:
    """The accepted elicitation answer's ``field`` under ``key``, or ``None``."""
    r = responses.get(key)
    content = getattr(r, "content", None) if getattr(r, "action", None) == "accept" else None
    return content.get(field) if isinstance(content, dict) else None


def _declares(ctx: ServerRequestContext[Any, Any], caps: ClientCapabilities) -> bool:
    try:
        return bool(ctx.session.check_client_capability(caps))
    except Exception:  # noqa: BLE001
        return False


def input_required(
    name: str, responses: dict[str, Any], state: str | None, ctx: ServerRequestContext[Any, Any]
) -> CallToolResult | InputRequiredResult | None:
    """The 2026-07-28 input-required (MRTR, SEP-2322) tools; ``None`` for other names."""
    if name == "test_input_required_result_elicitation":
        who = _accepted(responses, "user_name", "name")
        if who is None:
            return InputRequiredResult(input_requests={"user_name": _string_form("What is your name?", "name")})
        return _text(f"Hello, {who}!")
    if name == "test_input_required_result_sampling":
        answer = responses.get("capital_question")
        if not isinstance(answer, CreateMessageResult):
            return InputRequiredResult(input_requests={
                "capital_question": _sampling("What is the capital of France?", 100)})
        text = answer.content.text if isinstance(answer.content, TextContent) else "(no text)"
        return _text(f"Sampling said: {text}")
    if name == "test_input_required_result_list_roots":
        roots = responses.get("client_roots")
        if not isinstance(roots, ListRootsResult):
            return InputRequiredResult(input_requests={"client_roots": ListRootsRequest()})
        return _text("Roots: " + ", ".join(str(r.uri) for r in roots.roots))
    if name in ("test_input_required_result_request_state", "test_input_required_result_tampered_state"):
        if state == f"confirm:{name}" and responses.get("confirm") is not None:
            return _text("Confirmed: state-ok")
        return InputRequiredResult(input_requests={"confirm": ElicitRequest(params=ElicitRequestFormParams(
            message="Please confirm", requested_schema={"type": "object", "properties": {"ok": {"type": "boolean"}},
                                                        "required": ["ok"]}))}, request_state=f"confirm:{name}")
    if name == "test_input_required_result_multiple_inputs":
        keys = ("user_name", "greeting", "client_roots")
        if state == "multiple-inputs" and all(k in responses for k in keys):
            return _text(f"All inputs received for {_accepted(responses, 'user_name', 'name')}: state-ok")
        return InputRequiredResult(input_requests={
            "user_name": _string_form("What is your name?", "name"),
            "greeting": _sampling("Generate a greeting", 50),
            "client_roots": ListRootsRequest(),
        }, request_state="multiple-inputs")
    if name == "test_input_required_result_multi_round":
        if state is not None and state.startswith("round-2:") and _accepted(responses, "step2", "color") is not None:
            return _text(f"{state[len('round-2:'):]} likes {_accepted(responses, 'step2', 'color')}")
        if state == "round-1" and (who := _accepted(responses, "step1", "name")) is not None:
            return InputRequiredResult(input_requests={
                "step2": _string_form("Step 2: What is your favorite color?", "color")}, request_state=f"round-2:{who}")
        return InputRequiredResult(input_requests={"step1": _string_form("Step 1: What is your name?", "name")},
                                   request_state="round-1")
    if name == "test_input_required_result_capabilities":
        if responses:
            return _text("Inputs received: " + ", ".join(sorted(responses)))
        wanted: dict[str, Any] = {}
        if _declares(ctx, ClientCapabilities(elicitation=ElicitationCapability())):
            wanted["user_name"] = _string_form("What is your name?", "name")
        if _declares(ctx, ClientCapabilities(sampling=SamplingCapability())):
            wanted["greeting"] = _sampling("Generate a greeting", 50)
        if not wanted:
            return _text("The client declared neither elicitation nor sampling")
        return InputRequiredResult(input_requests=wanted)
    return None


async def call_tool(
    ctx: ServerRequestContext[Any, Any], params: CallToolRequestParams
) -> CallToolResult | InputRequiredResult:
    name, args = params.name, params.arguments or {}
    if name.startswith("test_input_required_result_"):
        outcome = input_required(name, dict(params.input_responses or {}), params.request_state, ctx)
        if outcome is not None:
            return outcome
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
    if name == "test_reconnection":
        await _log(ctx, "Before disconnect")
        if ctx.close_sse_stream is not None:  # HTTP with an event store; stdio has no stream to close
            await ctx.close_sse_stream()
        await anyio.sleep(0.2)  # the client reconnects with Last-Event-ID meanwhile
        await _log(ctx, "After reconnect")
        return _text("Reconnection test completed")
    if name == "test_touch_watched_resource":
        await BUS.publish(ResourceUpdated(uri="test://watched-resource"))  # 2026-07-28 listen streams
        if ctx.protocol_version < "2026":  # handshake era: the calling session (the one that subscribed)
            await ctx.session.send_resource_updated("test://watched-resource")
        return _text("touched")
    if name == "test_custom_header":
        return _text(f"Region: {args.get('region')}")
    if name == "test_missing_capability":
        if not _declares(ctx, ClientCapabilities(sampling=SamplingCapability())):
            raise MCPError(-32021, "This tool needs the sampling capability", {"requiredCapabilities": {"sampling": {}}})
        answer = (params.input_responses or {}).get("summary")
        if not isinstance(answer, CreateMessageResult):
            return InputRequiredResult(input_requests={"summary": _sampling("Summarize: conformance", 50)})
        return _text("Summary received")
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


async def get_prompt(ctx: Any, params: GetPromptRequestParams) -> GetPromptResult | InputRequiredResult:
    args = params.arguments or {}
    if params.name == "test_input_required_result_prompt":
        context = _accepted(dict(params.input_responses or {}), "user_context", "context")
        if context is None:
            return InputRequiredResult(input_requests={
                "user_context": _string_form("What context should the prompt use?", "context")})
        msgs = [PromptMessage(role="user", content=TextContent(type="text", text=f"Use this context: {context}"))]
    elif params.name == "test_simple_prompt":
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
        server = Server(
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
            on_subscriptions_listen=ListenHandler(BUS),
        )
    # requestState sealed (AES-GCM, bound to the request) so a tampered one is refused with -32602
    server.middleware.append(RequestStateBoundary(RequestStateSecurity.ephemeral(), default_audience=server.name))
    return server


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

    from servers.http.event_store import SessionEventStore

    # one store for the fixture's few sessions (toolhost serve keeps one per session)
    app = build_server().streamable_http_app(host="127.0.0.1", event_store=SessionEventStore(), retry_interval=100)
    uvicorn.run(app, host="127.0.0.1", port=ns.port, log_level="warning")


if __name__ == "__main__":
    main()
