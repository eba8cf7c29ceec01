"""Server-sent events → JSON event dicts, for streaming transports (HTML Living Standard, "Server-sent
events", event stream interpretation).

All three APIs stream ``text/event-stream``: Chat Completions sends ``data: {chunk}`` lines and
ends with ``data: [DONE]``; Responses and Anthropic send ``event: <type>`` + ``data: {json}``.
:class:`SSEDecoder` buffers **bytes** until a blank line ends an event and only then decodes
UTF-8, so a character split across network chunks survives byte-identical.
"""

from __future__ import annotations

import json
from collections.abc import AsyncIterable, AsyncIterator
from typing import Any

from host.agent.providers.errors import MalformedResponse

__all__ = ["SSEDecoder", "iter_sse_events"]


class SSEDecoder:
    """Incremental decoder: :meth:`feed` bytes, get the complete events (dicts) so far.

    Args:
        api: API name for error messages.

    Each event's ``data`` lines are joined with ``\\n`` and parsed as JSON; ``[DONE]`` marks the
    end (:attr:`done`); comments (``:``-lines) and events without data are skipped.
    """

    def __init__(self, api: str = "sse") -> None:
        self.api = api
        self._buffer = b""
        self.done = False

    def feed(self, chunk: bytes) -> list[dict[str, Any]]:
        """Add ``chunk``; return the events it completed, in order.

        Raises:
            MalformedResponse: an event's data is not valid UTF-8 JSON.
        """
        self._buffer += chunk.replace(b"\r\n", b"\n").replace(b"\r", b"\n")
        events: list[dict[str, Any]] = []
        while b"\n\n" in self._buffer:
            raw, self._buffer = self._buffer.split(b"\n\n", 1)
            event = self._event(raw)
            if event is not None:
                events.append(event)
        return events

    def close(self) -> list[dict[str, Any]]:
        """End of stream: an event left without its blank line is still delivered."""
        rest, self._buffer = self._buffer, b""
        event = self._event(rest) if rest.strip() else None
        return [event] if event is not None else []

    def _event(self, raw: bytes) -> dict[str, Any] | None:
        try:
            text = raw.decode("utf-8")
        except UnicodeDecodeError as exc:
            raise MalformedResponse(self.api, "stream", f"event bytes are not UTF-8 ({exc})") from exc
        data: list[str] = []
        name = None
        for line in text.split("\n"):
            if not line or line.startswith(":"):
                continue
            field, _, value = line.partition(":")
            value = value[1:] if value.startswith(" ") else value
            if field == "data":
                data.append(value)
            elif field == "event":
                name = value
        if not data:
            return None
        payload = "\n".join(data)
        if payload == "[DONE]":
            self.done = True
            return None
        try:
            event = json.loads(payload)
        except ValueError as exc:
            where = f"stream event {name or ''}".strip()
            raise MalformedResponse(self.api, where, f"data is not JSON ({exc})") from exc
        if not isinstance(event, dict):
            raise MalformedResponse(self.api, "stream", "event data is not a JSON object")
        if name and "type" not in event:
            event["type"] = name
        return event


async def iter_sse_events(chunks: AsyncIterable[bytes], api: str = "sse") -> AsyncIterator[dict[str, Any]]:
    """Events of a byte stream (e.g. ``httpx`` ``response.aiter_bytes()``), in order."""
    decoder = SSEDecoder(api)
    async for chunk in chunks:
        for event in decoder.feed(chunk):
            yield event
    for event in decoder.close():
        yield event
