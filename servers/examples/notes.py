"""Example MCP server ``notes``: read, write, list and delete text notes in a data folder.

Run: ``python -m servers.examples.notes --data-dir DIR`` (stdio). Each note is a UTF-8 file
``DIR/<title>.md`` with a safe file name; nothing is written outside ``DIR``.

Tools: ``list_notes`` and ``read_note`` (read-only), ``write_note`` (write: creates or
overwrites, idempotent), ``delete_note`` (destructive).
"""

from __future__ import annotations

import argparse
import os
import re
from pathlib import Path
from typing import Any

from mcp.server.mcpserver import MCPServer
from mcp.server.mcpserver.exceptions import ToolError
from mcp.types import ToolAnnotations
from pydantic import Field

__all__ = ["create_server", "main", "note_path"]

MAX_NOTE_CHARS = 100_000
_TITLE = re.compile(r"^[\w][\w .,()'-]{0,99}$")


def note_path(root: Path, title: str) -> Path:
    """The file of note ``title`` inside ``root``.

    Raises:
        ToolError: when the title is empty, too long or has characters outside letters,
            digits, spaces and ``_ . , ( ) ' -`` (so it can never escape ``root``).
    """
    clean = title.strip()
    if not _TITLE.fullmatch(clean) or clean in (".", ".."):
        raise ToolError(f"invalid note title {title!r}: use 1-100 letters, digits, spaces or _ . , ( ) ' -")
    return root / f"{clean}.md"


def create_server(data_dir: Path) -> MCPServer:
    """A ``notes`` server storing notes in ``data_dir`` (created when missing)."""
    root = Path(data_dir)
    root.mkdir(parents=True, exist_ok=True)
    app = MCPServer("notes", version="1.0.0", log_level="WARNING",
                    instructions="Personal notes: list, read, write and delete short text notes.")

    @app.tool(title="List notes", annotations=ToolAnnotations(
        read_only_hint=True, destructive_hint=False, idempotent_hint=True, open_world_hint=False))
    async def list_notes() -> dict[str, Any]:
        """List the titles and sizes of all saved notes. Use this before reading a note whose title you do not know."""
        notes = [{"title": p.stem, "chars": len(p.read_text(encoding="utf-8"))} for p in sorted(root.glob("*.md"))]
        return {"notes": notes, "count": len(notes)}

    @app.tool(title="Read note", annotations=ToolAnnotations(
        read_only_hint=True, destructive_hint=False, idempotent_hint=True, open_world_hint=False))
    async def read_note(title: str = Field(description="Title of the note to read.")) -> str:
        """Read the full text of one note by its title."""
        path = note_path(root, title)
        if not path.exists():
            raise ToolError(f"no note titled {title!r}; call list_notes to see the titles")
        return path.read_text(encoding="utf-8")

    @app.tool(title="Write note", annotations=ToolAnnotations(
        read_only_hint=False, destructive_hint=False, idempotent_hint=True, open_world_hint=False))
    async def write_note(
        title: str = Field(description="Title of the note (also its file name)."),
        text: str = Field(description="Full text of the note; replaces any previous text."),
    ) -> dict[str, Any]:
        """Save a note under a title, creating it or replacing its text. Use this to remember something for later."""
        if len(text) > MAX_NOTE_CHARS:
            raise ToolError(f"note is {len(text)} characters; the limit is {MAX_NOTE_CHARS}")
        path = note_path(root, title)
        created = not path.exists()
        path.write_text(text, encoding="utf-8")
        return {"title": path.stem, "chars": len(text), "created": created}

    @app.tool(title="Delete note", annotations=ToolAnnotations(
        read_only_hint=False, destructive_hint=True, idempotent_hint=True, open_world_hint=False))
    async def delete_note(title: str = Field(description="Title of the note to delete.")) -> dict[str, Any]:
        """Delete a note permanently. This cannot be undone."""
        path = note_path(root, title)
        existed = path.exists()
        if existed:
            path.unlink()
        return {"title": title.strip(), "deleted": existed}

    return app


def main(argv: list[str] | None = None) -> None:
    """Serve over stdio; ``--data-dir`` is where the notes live."""
    parser = argparse.ArgumentParser(description="Example notes MCP server (stdio).")
    parser.add_argument("--data-dir", required=True, type=Path, help="folder that holds the notes")
    args = parser.parse_args(argv)
    # Its default folder lies in toolhost's data folder, whose files are owner-only (0600/0700).
    os.umask(0o077)
    create_server(args.data_dir).run()


if __name__ == "__main__":
    main()
