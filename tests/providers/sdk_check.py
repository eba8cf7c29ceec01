"""Check our request dicts against the official SDK types (test dependencies only).

``validate_*_request`` runs the SDK's request TypedDict through a pydantic ``TypeAdapter``,
forces every lazily validated ``Iterable`` field, and asserts nothing was dropped: the
validated value must equal the input, so unknown or misspelled keys fail too.
"""

from __future__ import annotations

import json
from functools import cache
from pathlib import Path
from typing import Any

from pydantic import TypeAdapter

FIXTURES = Path(__file__).parent / "fixtures"


def load_json(name: str) -> Any:
    return json.loads((FIXTURES / name).read_text(encoding="utf-8"))


def load_events(name: str) -> list[dict[str, Any]]:
    lines = (FIXTURES / name).read_text(encoding="utf-8").splitlines()
    return [json.loads(line) for line in lines if line.strip()]


def _force(value: Any) -> Any:
    if isinstance(value, dict):
        return {k: _force(v) for k, v in value.items()}
    if isinstance(value, list | tuple):
        return [_force(v) for v in value]
    if type(value).__name__ == "ValidatorIterator":
        return [_force(v) for v in value]
    return value


@cache
def _adapter(kind: str) -> TypeAdapter:
    if kind == "chat":
        from openai.types.chat.completion_create_params import CompletionCreateParamsNonStreaming as T
    elif kind == "responses":
        from openai.types.responses.response_create_params import ResponseCreateParamsNonStreaming as T
    else:
        from anthropic.types.message_create_params import MessageCreateParamsNonStreaming as T
    return TypeAdapter(T)


def _validate(kind: str, params: dict[str, Any]) -> None:
    validated = _force(_adapter(kind).validate_python(params))
    assert validated == json.loads(json.dumps(params)), "the SDK type dropped or changed keys"


def validate_chat_request(params: dict[str, Any]) -> None:
    _validate("chat", params)


def validate_responses_request(params: dict[str, Any]) -> None:
    _validate("responses", params)


def validate_anthropic_request(params: dict[str, Any]) -> None:
    _validate("anthropic", params)


def sdk_chat_completion(data: dict[str, Any]) -> dict[str, Any]:
    """Parse with the SDK model and dump back to wire JSON (what a client would hand us)."""
    from openai.types.chat import ChatCompletion

    return ChatCompletion.model_validate(data).model_dump(mode="json", exclude_unset=True)


def sdk_chat_chunk(data: dict[str, Any]) -> dict[str, Any]:
    from openai.types.chat import ChatCompletionChunk

    return ChatCompletionChunk.model_validate(data).model_dump(mode="json", exclude_unset=True)


def sdk_response(data: dict[str, Any]) -> dict[str, Any]:
    from openai.types.responses import Response

    return Response.model_validate(data).model_dump(mode="json", exclude_unset=True)


def sdk_response_event(data: dict[str, Any]) -> dict[str, Any]:
    from openai.types.responses import ResponseStreamEvent

    return TypeAdapter(ResponseStreamEvent).validate_python(data).model_dump(mode="json", exclude_unset=True)


def sdk_message(data: dict[str, Any]) -> dict[str, Any]:
    from anthropic.types import Message

    return Message.model_validate(data).model_dump(mode="json", exclude_unset=True)


def sdk_message_event(data: dict[str, Any]) -> dict[str, Any]:
    from anthropic.types import RawMessageStreamEvent

    return TypeAdapter(RawMessageStreamEvent).validate_python(data).model_dump(mode="json", exclude_unset=True)
