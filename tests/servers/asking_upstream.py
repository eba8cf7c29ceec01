"""A real SDK server (``MCPServer``, stdio, 2026-07-28 by default) that asks its client for input
through the input-required flow and logs at every level.

Tools:
* ``ask``: first round answers ``InputRequiredResult`` with one elicitation (``Proceed?``, key
  ``q``); the retry answers ``answer: ACTION CONTENT``.
* ``think``: the same with one sampling request (``6*7?``, key ``s``); the retry answers
  ``LLM said: TEXT``.
* ``chatty``: sends one log message per MCP level (``debug`` … ``emergency``, data = the level)
  and answers ``logged``; the SDK sends only those at or above the request's ``_meta`` log level.

Prompt ``pondered`` and resource template ``thought://{topic}``: the sampling round of ``think``,
then ``LLM said: TEXT`` as the prompt's user message / the resource's text.
"""

from __future__ import annotations

import warnings

from mcp.server.mcpserver import Context, MCPServer
from mcp.types import (
    CreateMessageRequest,
    CreateMessageRequestParams,
    ElicitRequest,
    ElicitRequestFormParams,
    InputRequiredResult,
    SamplingMessage,
    TextContent,
)

LEVELS = ("debug", "info", "notice", "warning", "error", "critical", "alert", "emergency")

app = MCPServer("asking", version="1.0.0", log_level="WARNING")


@app.tool()
async def ask(ctx: Context) -> str | InputRequiredResult:
    """Ask the user whether to proceed."""
    answer = (ctx.input_responses or {}).get("q")
    if answer is None:
        schema = {"type": "object", "properties": {"ok": {"type": "boolean"}}, "required": ["ok"]}
        return InputRequiredResult(input_requests={"q": ElicitRequest(params=ElicitRequestFormParams(
            message="Proceed?", requested_schema=schema))}, request_state="asked")
    return f"answer: {answer.action} {answer.content}"


def _sampled(ctx: Context) -> str | InputRequiredResult:
    answer = (ctx.input_responses or {}).get("s")
    if answer is None:
        params = CreateMessageRequestParams(
            messages=[SamplingMessage(role="user", content=TextContent(type="text", text="6*7?"))], max_tokens=5)
        return InputRequiredResult(input_requests={"s": CreateMessageRequest(params=params)}, request_state="sampled")
    return f"LLM said: {answer.content.text}"


@app.tool()
async def think(ctx: Context) -> str | InputRequiredResult:
    """Ask the client's model a question."""
    return _sampled(ctx)


@app.prompt()
async def pondered(ctx: Context) -> str | InputRequiredResult:
    """A prompt whose text the client's model writes."""
    return _sampled(ctx)


@app.resource("thought://{topic}")
async def thought(topic: str, ctx: Context) -> str | InputRequiredResult:
    """A resource whose text the client's model writes."""
    return _sampled(ctx)


@app.tool()
async def chatty(ctx: Context) -> str:
    """Log one message at every level."""
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")  # request logging is deprecated at 2026-07-28; still spec
        for level in LEVELS:
            await ctx.log(level, level, logger_name="chatty")
    return "logged"


if __name__ == "__main__":
    app.run("stdio")
