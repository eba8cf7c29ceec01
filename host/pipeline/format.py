"""MCP ``CallToolResult`` → what the model reads, under the tool's output budget (media never as base64 text).

Conversion (MCP 2025-11-25 content types):

* ``text`` blocks: consecutive text is joined with ``"\\n"`` into one :class:`TextBlock`;
* ``image`` / ``audio``: kept as :class:`ImageBlock` / :class:`AudioBlock` (base64 never enters text);
* ``resource_link``: a :class:`ResourceBlock` (URI, name, MIME type, size kept);
* embedded ``resource``: a :class:`ResourceBlock` with ``embedded=True`` and its ``text`` or
  ``blob``; an image/audio blob becomes an image/audio block (so models can see it);
* empty ``content`` with ``structuredContent``: the structured value's JSON as text.

The structured value is returned separately (``ToolResult.structured``) and never cut.

Limiting: when the model text is longer than ``max_output_chars`` the text becomes head +
notice + tail, the notice giving the original size and the path of the full text, which is
written to the per-conversation spill folder (:class:`SpillStore`). Cuts fall on code-point
boundaries (a Python ``str`` cannot split a UTF-8 sequence) and prefer line ends.
Empty output becomes :data:`EMPTY_PLACEHOLDER` (some APIs reject empty tool results).
"""

from __future__ import annotations

import json
import os
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from mcp import types as mt

from host.calls import AudioBlock, ContentBlock, ImageBlock, ResourceBlock, TextBlock
from host.paths import safe_file_name

__all__ = [
    "EMPTY_PLACEHOLDER",
    "FormattedOutput",
    "SpillStore",
    "convert_content",
    "cut_head_tail",
    "format_result",
    "safe_file_name",
]

EMPTY_PLACEHOLDER = "(no output)"
"""Model text of a successful call that returned nothing."""

class SpillStore:
    """Writes full outputs that exceed their budget under ``root/<conversation>/<call>.txt``.

    Files are private to the host's user (folders 0700, files 0600): they hold unredacted tool
    output. Each conversation folder keeps at most ``max_files_per_conversation`` files; the
    oldest are deleted first.

    Args:
        root: the spill folder (created on first write). Paths never leave it.
        max_files_per_conversation: how many spill files a conversation keeps.
    """

    def __init__(self, root: Path, *, max_files_per_conversation: int = 100) -> None:
        self.root = Path(root)
        self.max_files_per_conversation = max_files_per_conversation

    def path_for(self, conversation_id: str, call_id: str) -> Path:
        """Where the full output of ``call_id`` goes (inside :attr:`root`, checked)."""
        root = self.root.resolve()
        path = (root / safe_file_name(conversation_id) / f"{safe_file_name(call_id)}.txt").resolve()
        if root not in path.parents:
            raise ValueError(f"spill path {path} escapes the spill folder {root}")
        return path

    def write(self, conversation_id: str, call_id: str, text: str) -> Path:
        """Write ``text`` (UTF-8, mode 0600) and return its path; prunes the oldest files over the cap."""
        path = self.path_for(conversation_id, call_id)
        self.root.mkdir(mode=0o700, parents=True, exist_ok=True)
        path.parent.mkdir(mode=0o700, exist_ok=True)
        tmp = path.with_suffix(".tmp")
        fd = os.open(tmp, os.O_WRONLY | os.O_CREAT | os.O_TRUNC, 0o600)
        with os.fdopen(fd, "w", encoding="utf-8", errors="surrogatepass") as fh:
            fh.write(text)
        tmp.replace(path)
        self._prune(path.parent)
        return path

    def _prune(self, folder: Path) -> None:
        files = sorted(folder.glob("*.txt"), key=lambda p: p.stat().st_mtime_ns)
        for old in files[: max(0, len(files) - self.max_files_per_conversation)]:
            old.unlink(missing_ok=True)


def convert_content(result: mt.CallToolResult) -> tuple[list[ContentBlock], Any]:
    """MCP result → (content blocks for the model, structured value). See module rules."""
    blocks: list[ContentBlock] = []
    texts: list[str] = []

    def flush() -> None:
        if texts:
            blocks.append(TextBlock(text="\n".join(texts)))
            texts.clear()

    for item in result.content or []:
        if isinstance(item, mt.TextContent):
            texts.append(item.text)
        elif isinstance(item, mt.ImageContent):
            flush()
            blocks.append(ImageBlock(data=item.data, mime_type=item.mime_type))
        elif isinstance(item, mt.AudioContent):
            flush()
            blocks.append(AudioBlock(data=item.data, mime_type=item.mime_type))
        elif isinstance(item, mt.ResourceLink):
            flush()
            blocks.append(ResourceBlock(uri=str(item.uri), name=item.name, mime_type=item.mime_type,
                                        description=item.description, size=item.size))
        elif isinstance(item, mt.EmbeddedResource):
            res = item.resource
            mime = res.mime_type or ""
            if isinstance(res, mt.TextResourceContents):
                flush()
                blocks.append(ResourceBlock(uri=str(res.uri), mime_type=res.mime_type, embedded=True, text=res.text))
            elif mime.startswith("image/"):
                flush()
                blocks.append(ImageBlock(data=res.blob, mime_type=mime))
            elif mime.startswith("audio/"):
                flush()
                blocks.append(AudioBlock(data=res.blob, mime_type=mime))
            else:
                flush()
                blocks.append(ResourceBlock(uri=str(res.uri), mime_type=res.mime_type, embedded=True, blob=res.blob))
        else:  # a content type this SDK version knows but we do not: describe, never dump
            texts.append(f"[unsupported content block of type {item.type!r}]")
    flush()
    structured = result.structured_content
    if not blocks and structured is not None:
        blocks.append(TextBlock(text=json.dumps(structured, ensure_ascii=False, sort_keys=False)))
    return blocks, structured


def _cut_point(text: str, at: int, *, forward: bool) -> int:
    """Move a cut at ``at`` to a nearby line end (within 10% of the span), never into ``\\r\\n``."""
    window = max(1, min(2000, at // 10 if not forward else (len(text) - at) // 10))
    if forward:
        nl = text.find("\n", at, at + window)
        at = nl + 1 if nl != -1 else at
    else:
        nl = text.rfind("\n", max(0, at - window), at)
        at = nl + 1 if nl != -1 else at
    if 0 < at < len(text) and text[at - 1] == "\r" and text[at] == "\n":
        at -= 1
    return at


def cut_head_tail(text: str, max_chars: int, notice: str) -> str:
    """``head + notice + tail`` of at most ``max(max_chars, len(notice))`` characters.

    Head gets two thirds of the room left after the notice, tail one third.
    """
    room = max(0, max_chars - len(notice) - 2)
    head_n = _cut_point(text, room * 2 // 3, forward=False)
    tail_start = _cut_point(text, len(text) - (room - head_n), forward=True)
    tail_start = max(tail_start, head_n)
    return f"{text[:head_n]}\n{notice}\n{text[tail_start:]}"


@dataclass(frozen=True)
class FormattedOutput:
    """Model-facing output of one call.

    Attributes:
        content: blocks for the model (text limited, media kept).
        structured: MCP ``structuredContent`` (unchanged).
        original_chars: length of the full model text before limiting.
        truncated: whether the text was cut.
        spill_path: where the full text was written, when cut.
    """

    content: list[ContentBlock]
    structured: Any
    original_chars: int
    truncated: bool = False
    spill_path: str | None = None


def format_result(
    result: mt.CallToolResult,
    *,
    max_output_chars: int,
    spill: SpillStore | None,
    conversation_id: str,
    call_id: str,
    empty_text: str = EMPTY_PLACEHOLDER,
) -> FormattedOutput:
    """Convert and limit one MCP result (see module docstring)."""
    blocks, structured = convert_content(result)
    text_blocks = [b for b in blocks if isinstance(b, TextBlock)]
    full_text = "\n".join(b.text for b in text_blocks)
    total = len(full_text)
    if not blocks or (not any(b.text.strip() for b in text_blocks) and len(text_blocks) == len(blocks)):
        return FormattedOutput([TextBlock(text=empty_text)], structured, total)
    if total <= max_output_chars:
        return FormattedOutput(blocks, structured, total)
    path = None
    where = "the full output was not kept"
    if spill is not None:
        try:
            path = spill.write(conversation_id, call_id, full_text)
            where = f"the full output is in {path}"
        except (OSError, ValueError) as exc:  # unwritable spill folder: keep the call, say so
            where = f"the full output could not be saved ({type(exc).__name__}: {exc})"
    notice = (f"[… output truncated: {total} characters in total, showing the first and last part; {where} …]")
    media = [b for b in blocks if not isinstance(b, TextBlock)]
    cut = cut_head_tail(full_text, max_output_chars, notice)
    return FormattedOutput([TextBlock(text=cut), *media], structured, total, True, str(path) if path else None)
