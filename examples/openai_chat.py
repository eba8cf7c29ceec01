"""toolhost's tools in an OpenAI Chat Completions agent loop, governed like ``toolhost serve``.

    OPENAI_API_KEY=sk-... .venv/bin/python examples/openai_chat.py "Where is order A1001?" [--stream]

The official ``openai`` SDK sends each request (``OPENAI_BASE_URL`` points it elsewhere); toolhost
renders the tools (deferred loading through ``tool_search``), runs every call through its pipeline
with the data folder's grants, approvals and pins, and writes an audit row per call.
"""

import asyncio

from _setup import options
from openai import AsyncOpenAI

from host.agent.governed import governed_runtime
from host.agent.providers import OpenAIChatAdapter

client = AsyncOpenAI()


async def send(params: dict) -> object:
    if params.get("stream"):  # an async iterator of chunks: toolhost accumulates the streamed calls
        return (chunk.model_dump(mode="json", exclude_unset=True)
                async for chunk in await client.chat.completions.create(**params))
    return (await client.chat.completions.create(**params)).model_dump(mode="json", exclude_unset=True)


async def main() -> None:
    o = options(__doc__.splitlines()[0], "gpt-4.1")
    async with governed_runtime(o.loaded, o.data_dir, user=o.user) as gov:
        outcome = await gov.ask(OpenAIChatAdapter(), send, o.question, model=o.model, params={"stream": o.stream})
    print(outcome.final_text)


if __name__ == "__main__":
    asyncio.run(main())
