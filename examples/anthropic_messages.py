"""toolhost's tools in an Anthropic Messages agent loop, governed like ``toolhost serve``.

    ANTHROPIC_API_KEY=sk-ant-... .venv/bin/python examples/anthropic_messages.py "Where is order A1001?" \
        [--stream] [--programmatic]

The official ``anthropic`` SDK sends each request (``ANTHROPIC_BASE_URL`` points it elsewhere;
the Messages API requires ``max_tokens``); toolhost declares the tools (deferred loading through
``tool_search``), runs every call through its pipeline with the data folder's grants, approvals
and pins, and writes an audit row per call. Thinking blocks are replayed with their signatures. With
``--programmatic`` Claude's code-execution program may call read-risk tools; its calls come back with
their program id (``caller``) and are governed and audited like any other.
"""

import asyncio

from _setup import options
from anthropic import AsyncAnthropic

from host.agent.governed import governed_runtime
from host.agent.providers import AnthropicMessagesAdapter

client = AsyncAnthropic()


async def send(params: dict) -> object:
    if params.get("stream"):  # an async iterator of events: toolhost accumulates the streamed calls
        return (event.model_dump(mode="json", exclude_unset=True)
                async for event in await client.messages.create(**params))
    return (await client.messages.create(**params)).model_dump(mode="json", exclude_unset=True)


async def main() -> None:
    o = options(__doc__.splitlines()[0], "claude-sonnet-4-5", programmatic=True)
    async with governed_runtime(o.loaded, o.data_dir, user=o.user) as gov:
        outcome = await gov.ask(AnthropicMessagesAdapter(), send, o.question, model=o.model,
                                params={"max_tokens": 1024, "stream": o.stream}, programmatic=o.programmatic)
    print(outcome.final_text)


if __name__ == "__main__":
    asyncio.run(main())
