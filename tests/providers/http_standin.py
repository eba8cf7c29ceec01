"""A local HTTP stand-in of the three provider APIs, for the official SDKs' ``base_url``.

``POST /v1/chat/completions``, ``/v1/responses`` and ``/v1/messages`` answer from a scripted
:class:`tests.providers.fake_api.FakeAPI` (requests validated against the SDKs' request types,
responses parsed by the SDKs' models first): a JSON body, or with ``"stream": true`` server-sent
events in each API's framing (Chat: ``data:`` lines ending with ``data: [DONE]``; Responses and
Messages: ``event:`` + ``data:`` pairs). Runs uvicorn in a thread on a free loopback port.
"""

from __future__ import annotations

import json
import socket
import threading
from collections.abc import Iterator
from contextlib import contextmanager
from typing import Any

import anyio
import uvicorn
from starlette.applications import Starlette
from starlette.requests import Request
from starlette.responses import JSONResponse, Response, StreamingResponse
from starlette.routing import Route

from .fake_api import FakeAPI, Step

ROUTES = {"openai_chat": "/v1/chat/completions", "openai_responses": "/v1/responses",
          "anthropic_messages": "/v1/messages"}


def _app(api: str, fake: FakeAPI, wire: list[dict[str, Any]]) -> Starlette:
    async def handle(request: Request) -> Response:
        params = await request.json()
        wire.append(dict(params))
        fake.stream = bool(params.pop("stream", False))  # the SDK types checked are the non-streaming ones
        answer = await fake(params)
        if isinstance(answer, dict):
            return JSONResponse(answer)

        async def frames() -> Any:
            async for event in answer:
                if api == "openai_chat":
                    yield f"data: {json.dumps(event)}\n\n"
                else:
                    yield f"event: {event['type']}\ndata: {json.dumps(event)}\n\n"
            if api == "openai_chat":
                yield "data: [DONE]\n\n"

        return StreamingResponse(frames(), media_type="text/event-stream")

    return Starlette(routes=[Route(ROUTES[api], handle, methods=["POST"])])


class _Server(uvicorn.Server):
    """uvicorn's server, telling a thread event once it listens."""

    def __init__(self, config: uvicorn.Config) -> None:
        super().__init__(config)
        self.ready = threading.Event()

    async def startup(self, sockets: list[socket.socket] | None = None) -> None:
        await super().startup(sockets)
        self.ready.set()


@contextmanager
def provider_standin(api: str, steps: list[Step]) -> Iterator[tuple[str, list[dict[str, Any]]]]:
    """``(base_url, bodies)`` of a running stand-in for ``api`` (``bodies``: each request body as
    sent, ``stream`` included); stopped on exit. The base URL ends in ``/v1`` for OpenAI (the SDK's
    form) and is the root for Anthropic (its SDK adds ``/v1``)."""
    fake = FakeAPI(api, steps)
    wire: list[dict[str, Any]] = []
    sock = socket.socket()
    sock.bind(("127.0.0.1", 0))
    port = sock.getsockname()[1]
    server = _Server(uvicorn.Config(_app(api, fake, wire), log_level="warning", lifespan="off"))
    thread = threading.Thread(target=lambda: anyio.run(server.serve, [sock]), daemon=True)
    thread.start()
    try:
        if not server.ready.wait(timeout=30):
            raise RuntimeError("the provider stand-in did not start within 30 s")
        root = f"http://127.0.0.1:{port}"
        yield (root if api == "anthropic_messages" else root + "/v1"), wire
    finally:
        server.should_exit = True
        thread.join(timeout=10)
        sock.close()
