"""The bundled config keeps the notes server's folder inside toolhost's data folder, whose files
are owner-only: the example server creates its folders 0700 and its notes 0600 (a new user found
``servers/`` and ``servers/notes/`` at 0755)."""

from __future__ import annotations

import stat
import sys

import anyio
import pytest
from mcp import Client, StdioServerParameters


@pytest.mark.anyio
async def test_notes_server_creates_owner_only_folders_and_files(tmp_path) -> None:
    root = tmp_path / "data" / "servers" / "notes"
    params = StdioServerParameters(command=sys.executable,
                                   args=["-m", "servers.examples.notes", "--data-dir", str(root)])
    with anyio.fail_after(60):
        async with Client(params) as c:
            result = await c.call_tool("write_note", {"title": "plan", "text": "buy milk"})
            assert result.is_error is False
    modes = {str(p.relative_to(tmp_path / "data")): oct(stat.S_IMODE(p.stat().st_mode))
             for p in [root.parent, root, *root.iterdir()]}
    assert modes == {"servers": "0o700", "servers/notes": "0o700", "servers/notes/plan.md": "0o600"}
