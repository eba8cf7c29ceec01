"""Provider-neutral tool calls and tool results.

Every provider adapter converts its API's shapes to and from these; the call pipeline only
ever sees these. Content blocks keep media as media (never base64 inside text).

Shapes (JSON form of :meth:`ToolResult.model_dump`)::

    ToolCall   {"call_id": "call_1", "name": "orders__cancel_order", "raw_arguments": "{\\"id\\": 7}",
                "arguments": {"id": 7} | null, "index": 0}
    ToolResult {"call_id": "call_1", "name": "...", "status": "ok" | "tool_error" | ...,
                "content": [{"type": "text", "text": "..."}, {"type": "image", "data": "<b64>",
                             "mime_type": "image/png"}, ...],
                "structured": {...} | null, "error": {"code": "...", "message": "...", ...} | null}
"""

from __future__ import annotations

import enum
from typing import Annotated, Any, Literal

from pydantic import BaseModel, ConfigDict, Field

__all__ = [
    "AudioBlock",
    "ContentBlock",
    "ErrorInfo",
    "ImageBlock",
    "ResourceBlock",
    "ResultStatus",
    "TextBlock",
    "ToolCall",
    "ToolResult",
]


class ResultStatus(str, enum.Enum):
    """How a call ended. Everything but ``OK`` is a failure shown to the model as an error result."""

    OK = "ok"
    TOOL_ERROR = "tool_error"  # the tool answered with isError: a business answer, passed through
    INVALID_ARGUMENTS = "invalid_arguments"
    UNKNOWN_TOOL = "unknown_tool"
    PERMISSION_DENIED = "permission_denied"
    APPROVAL_REQUIRED = "approval_required"
    TIMEOUT = "timeout"
    RATE_LIMITED = "rate_limited"
    UPSTREAM_UNAVAILABLE = "upstream_unavailable"
    UPSTREAM_ERROR = "upstream_error"
    CANCELLED = "cancelled"
    NOT_EXECUTED = "not_executed"

    @property
    def is_error(self) -> bool:
        return self is not ResultStatus.OK


class TextBlock(BaseModel):
    model_config = ConfigDict(frozen=True)
    type: Literal["text"] = "text"
    text: str


class ImageBlock(BaseModel):
    """An image; ``data`` is base64 (no data: prefix), ``mime_type`` e.g. ``image/png``."""

    model_config = ConfigDict(frozen=True)
    type: Literal["image"] = "image"
    data: str
    mime_type: str


class AudioBlock(BaseModel):
    """Audio; ``data`` is base64, ``mime_type`` e.g. ``audio/wav``."""

    model_config = ConfigDict(frozen=True)
    type: Literal["audio"] = "audio"
    data: str
    mime_type: str


class ResourceBlock(BaseModel):
    """A resource in a result: an MCP ``resource_link`` or an embedded ``resource``.

    Attributes:
        uri: the resource URI as the upstream server gave it.
        name, mime_type, description, size: what the server said about it (``size`` in bytes).
        embedded: ``True`` for an embedded resource (its data is in ``text`` or ``blob``),
            ``False`` for a link.
        text: the embedded text contents.
        blob: the embedded binary contents, base64.
    """

    model_config = ConfigDict(frozen=True)
    type: Literal["resource"] = "resource"
    uri: str
    name: str | None = None
    mime_type: str | None = None
    description: str | None = None
    size: int | None = None
    embedded: bool = False
    text: str | None = None
    blob: str | None = None


ContentBlock = Annotated[TextBlock | ImageBlock | AudioBlock | ResourceBlock, Field(discriminator="type")]


class ToolCall(BaseModel):
    """One tool call the model made.

    Attributes:
        call_id: the provider's id for the call (``tool_call_id`` / ``call_id`` / ``tool_use_id``).
        name: the tool name the model used (a qualified name when it is one of ours).
        raw_arguments: the argument text exactly as the model produced it (kept for the log).
        arguments: the parsed JSON object, or ``None`` until parsed / when unparsable.
        index: position in the model's batch (0-based).
    """

    model_config = ConfigDict(frozen=True)

    call_id: str
    name: str
    raw_arguments: str = ""
    arguments: dict[str, Any] | None = None
    index: int = 0


class ErrorInfo(BaseModel):
    """Details of a failed call.

    Attributes:
        code: the :class:`ResultStatus` value (e.g. ``"timeout"``).
        message: one sentence for the model: what happened and how to fix it.
        where: the pipeline stage that failed (``parse``, ``validate``, ``lookup``, ``authorize``,
            ``execute``, ``limit``).
        details: structured extras (violations, suggestions, MCP error code/data).
        retry_after_seconds: for ``rate_limited``, when the upstream said so.
        approval_id: for ``approval_required``, the id to approve.
    """

    model_config = ConfigDict(frozen=True)

    code: str
    message: str
    where: str = ""
    details: dict[str, Any] = Field(default_factory=dict)
    retry_after_seconds: float | None = None
    approval_id: str | None = None


class ToolResult(BaseModel):
    """The result of one tool call, paired with it by ``call_id``.

    Attributes:
        call_id: id of the call this answers.
        name: the tool name from the call.
        status: how it ended.
        content: blocks for the model (text joined by adapters as each API needs).
        structured: the structured value for programs (MCP ``structuredContent``), if any.
        error: details when ``status`` is not ``ok``.
    """

    model_config = ConfigDict(frozen=True)

    call_id: str
    name: str
    status: ResultStatus = ResultStatus.OK
    content: list[ContentBlock] = Field(default_factory=list)
    structured: Any = None
    error: ErrorInfo | None = None

    @property
    def is_error(self) -> bool:
        """True for every status but ``ok``."""
        return self.status.is_error

    @property
    def text(self) -> str:
        """All text blocks joined by newlines (media and resources omitted)."""
        return "\n".join(b.text for b in self.content if isinstance(b, TextBlock))
