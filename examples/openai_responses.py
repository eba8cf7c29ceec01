"""toolhost's tools in an OpenAI Responses agent loop, governed like ``toolhost serve``.

    OPENAI_API_KEY=sk-... .venv/bin/python examples/openai_responses.py "Where is order A1001?" \
        [--stream] [--programmatic]

The official ``openai`` SDK sends each request (``OPENAI_BASE_URL`` points it elsewhere); toolhost
declares the tools (native deferred loading: ``tool_search`` as a client-executed search), runs
every call through its pipeline with the data folder's grants, approvals and pins, and writes an
audit row per call. Reasoning items are replayed as the API requires. With ``--programmatic`` the
model's program (programmatic tool calling) may call read-risk tools; its calls come back with their
program id and are governed and audited like any other.
"""

import asyncio

from _setup import options
from openai import AsyncOpenAI

from host.agent.governed import governed_runtime
from host.agent.providers import OpenAIResponsesAdapter

client = AsyncOpenAI()


async def send(params: dict) -> object:
    if params.get("stream"):  # an async iterator of events: toolhost accumulates the streamed calls
        return (event.model_dump(mode="json", exclude_unset=True)
                async for event in await client.responses.create(**params))
    return (await client.responses.create(**params)).model_dump(mode="json", exclude_unset=True)


async def main() -> None:
    o = options(__doc__.splitlines()[0], "gpt-4.1", programmatic=True)
    async with governed_runtime(o.loaded, o.data_dir, user=o.user) as gov:
        outcome = await gov.ask(OpenAIResponsesAdapter(), send, o.question, model=o.model, params={"stream": o.stream},
                                programmatic=o.programmatic)
    print(outcome.final_text)


if __name__ == "__main__":
    asyncio.run(main())
