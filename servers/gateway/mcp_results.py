"""Pipeline results → MCP ``CallToolResult`` for the registry server's clients.

Media stays media (image/audio content), resource links stay ``resource_link`` and embedded
resources stay embedded (text or blob, URI and MIME type kept; URIs in the server's namespace), the
structured value becomes ``structuredContent`` (objects only, as MCP requires), and a failed
call is ``isError: true`` with the pipeline's explanation as text plus the machine-readable
error under ``_meta["toolhost/error"]`` (``{code, where, retry_after_seconds, approval_id, ...}``).
"""

from __future__ import annotations

from typing import Any

from collections.abc import Callable

from mcp.types import (
    AudioContent,
    BlobResourceContents,
    CallToolResult,
    ContentBlock,
    EmbeddedResource,
    ImageContent,
    ResourceLink,
    TextContent,
    TextResourceContents,
)

from host.calls import AudioBlock, ImageBlock, ResourceBlock, TextBlock, ToolResult

__all__ = ["ERROR_META_KEY", "to_mcp_result"]

ERROR_META_KEY = "toolhost/error"


def _block(block: Any, uri_for: Callable[[str], str]) -> ContentBlock:
    if isinstance(block, TextBlock):
        return TextContent(type="text", text=block.text)
    if isinstance(block, ImageBlock):
        return ImageContent(type="image", data=block.data, mime_type=block.mime_type)
    if isinstance(block, AudioBlock):
        return AudioContent(type="audio", data=block.data, mime_type=block.mime_type)
    if isinstance(block, ResourceBlock):
        uri = uri_for(block.uri)
        if block.embedded and block.blob is not None:
            return EmbeddedResource(type="resource", resource=BlobResourceContents(
                uri=uri, mime_type=block.mime_type, blob=block.blob))
        if block.embedded:
            return EmbeddedResource(type="resource", resource=TextResourceContents(
                uri=uri, mime_type=block.mime_type, text=block.text or ""))
        return ResourceLink(type="resource_link", uri=uri, name=block.name or block.uri,
                            mime_type=block.mime_type, description=block.description, size=block.size)
    raise TypeError(f"unsupported content block {type(block).__name__}")


def to_mcp_result(result: ToolResult, *, uri_for: Callable[[str], str] | None = None) -> CallToolResult:
    """Convert one pipeline result (see module docstring).

    Args:
        uri_for: maps an upstream resource URI to the one clients see (the calling tool's
            server namespace, :func:`registry.catalog.qualify_uri`); default unchanged.
    """
    mapper = uri_for or (lambda uri: uri)
    content = [_block(b, mapper) for b in result.content]
    if result.is_error and not content and result.error is not None:
        content = [TextContent(type="text", text=result.error.message)]
    meta: dict[str, Any] | None = None
    if result.error is not None:
        err = result.error.model_dump(mode="json", exclude_none=True)
        meta = {ERROR_META_KEY: err}
    structured = result.structured if isinstance(result.structured, dict) and not result.is_error else None
    return CallToolResult(content=content, structured_content=structured, is_error=result.is_error, _meta=meta)
