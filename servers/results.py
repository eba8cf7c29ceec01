"""Pipeline results → MCP ``CallToolResult`` for the registry server's clients.

Media stays media (image/audio content), resources become ``resource_link`` blocks, the
structured value becomes ``structuredContent`` (objects only, as MCP requires), and a failed
call is ``isError: true`` with the pipeline's explanation as text plus the machine-readable
error under ``_meta["toolhost/error"]`` (``{code, where, retry_after_seconds, approval_id, ...}``).
"""

from __future__ import annotations

from typing import Any

from mcp.types import AudioContent, CallToolResult, ContentBlock, ImageContent, ResourceLink, TextContent

from host.calls import AudioBlock, ImageBlock, ResourceBlock, TextBlock, ToolResult

__all__ = ["ERROR_META_KEY", "to_mcp_result"]

ERROR_META_KEY = "toolhost/error"


def _block(block: Any) -> ContentBlock:
    if isinstance(block, TextBlock):
        return TextContent(type="text", text=block.text)
    if isinstance(block, ImageBlock):
        return ImageContent(type="image", data=block.data, mime_type=block.mime_type)
    if isinstance(block, AudioBlock):
        return AudioContent(type="audio", data=block.data, mime_type=block.mime_type)
    if isinstance(block, ResourceBlock):
        return ResourceLink(type="resource_link", uri=block.uri, name=block.name or block.uri,
                            mime_type=block.mime_type, description=block.description)
    raise TypeError(f"unsupported content block {type(block).__name__}")


def to_mcp_result(result: ToolResult) -> CallToolResult:
    """Convert one pipeline result (see module docstring)."""
    content = [_block(b) for b in result.content]
    if result.is_error and not content and result.error is not None:
        content = [TextContent(type="text", text=result.error.message)]
    meta: dict[str, Any] | None = None
    if result.error is not None:
        err = result.error.model_dump(mode="json", exclude_none=True)
        meta = {ERROR_META_KEY: err}
    structured = result.structured if isinstance(result.structured, dict) and not result.is_error else None
    return CallToolResult(content=content, structured_content=structured, is_error=result.is_error, _meta=meta)
