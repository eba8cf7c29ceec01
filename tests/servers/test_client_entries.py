"""The README's "Clients" entries work as written: each JSON block is read as its client reads it
(toolhost's own loader understands the Claude Desktop / Cursor ``mcpServers`` and VS Code
``servers`` + ``inputs`` formats) and connected to a real toolhost; the Inspector lines are split as
the Inspector splits them and their server part is started with their ``-e`` variables.

Only the placeholders the README tells the reader to replace are replaced (paths, URL, key).
"""

from __future__ import annotations

import json
import re
import shlex
from pathlib import Path

import anyio
import httpx2
import pytest
from mcp import Client
from mcp.client.streamable_http import streamable_http_client

from host.config import parse_config
from host.upstream.manager import ServerManager
from host.upstream.status import ConnectionState
from tests.admin.support import TOOLHOST, Serve, config, people

pytestmark = pytest.mark.anyio

README = Path(__file__).resolve().parents[2] / "README.md"
META = ["toolhost__call_tool", "toolhost__tool_search"]


def clients_section() -> str:
    text = README.read_text()
    start = text.index("### Clients")
    return text[start:text.index("\n## ", start)]


def json_blocks() -> list[str]:
    return re.findall(r"```json\n(.*?)```", clients_section(), flags=re.DOTALL)


def inspector_lines() -> list[str]:
    return re.findall(r"`(npx -y @modelcontextprotocol/inspector [^`]+)`", clients_section())


def filled(text: str, *, cfg: Path, home: Path, url: str = "", key: str = "") -> str:
    """The README's placeholders replaced as the reader is told to."""
    return (text.replace("/path/to/.venv/bin/toolhost", TOOLHOST).replace("/home/me/toolhost/mcp.json", str(cfg))
            .replace("/home/me/.local/share/toolhost", str(home))
            .replace("http://127.0.0.1:8765/mcp", url or "http://127.0.0.1:8765/mcp")
            .replace("th_REPLACE_WITH_YOUR_KEY", key))


async def listed_through(entry: dict, tmp: Path, environ: dict[str, str] | None = None) -> list[str]:
    """Connect toolhost's client side to ``entry`` (a whole client config) and list its tools."""
    cfg = parse_config(entry | {"toolhost": {"connect_timeout_seconds": 60}}, environ=environ, data_dir=tmp)
    assert not cfg.failed, cfg.failed
    with anyio.fail_after(90):
        async with ServerManager(cfg, data_dir=tmp) as m:
            [status] = m.statuses()
            assert (status.state, status.error) == (ConnectionState.CONNECTED, None)
            return sorted(t.qualified_name for t in m.registry.tools())


def test_the_section_has_every_client() -> None:
    blocks = [json.loads(b) for b in json_blocks()]  # each block is valid JSON as printed
    assert [sorted(b) for b in blocks] == [["mcpServers"], ["mcpServers"], ["inputs", "servers"]]
    assert blocks[0]["mcpServers"]["toolhost"]["args"] == ["serve", "--stdio"]
    assert set(blocks[0]["mcpServers"]["toolhost"]["env"]) == {"TOOLHOST_CONFIG", "TOOLHOST_HOME"}
    assert blocks[2]["servers"]["toolhost"]["headers"] == {"Authorization": "Bearer ${input:toolhost-key}"}
    assert [line.split()[4] for line in inspector_lines()] == ["-e", "http://127.0.0.1:8765/mcp"]


async def test_claude_desktop_entry_starts_toolhost_with_config_from_env(tmp_path) -> None:
    cfg, home = config(tmp_path), tmp_path / "home"
    entry = json.loads(filled(json_blocks()[0], cfg=cfg, home=home))
    assert await listed_through(entry, tmp_path / "client") == META
    assert (home / "toolhost.db").exists()  # the data folder named in env was used


async def test_cursor_and_vscode_entries_reach_a_running_serve_with_a_key(tmp_path) -> None:
    cfg, data = config(tmp_path), tmp_path / "data"
    keys = people(data)
    with Serve(cfg, data) as serve:
        url = serve.url + "/mcp"
        cursor = json.loads(filled(json_blocks()[1], cfg=cfg, home=data, url=url, key=keys["alice"]))
        assert await listed_through(cursor, tmp_path / "cursor") == META
        vscode = json.loads(filled(json_blocks()[2], cfg=cfg, home=data, url=url))
        # VS Code asks for the input; toolhost's loader takes it from TOOLHOST_INPUT_<ID>
        assert await listed_through(vscode, tmp_path / "vscode", {"TOOLHOST_INPUT_TOOLHOST_KEY": keys["alice"]}) == META


async def test_inspector_stdio_form_passes_the_config_in_env(tmp_path) -> None:
    cfg, home = config(tmp_path), tmp_path / "home"
    words = shlex.split(filled(inspector_lines()[0], cfg=cfg, home=home))
    inspector_flags, command = words[:words.index("--")], words[words.index("--") + 1:]
    env = dict(inspector_flags[i + 1].split("=", 1) for i, w in enumerate(inspector_flags) if w == "-e")
    assert env == {"TOOLHOST_CONFIG": str(cfg), "TOOLHOST_HOME": str(home)}
    assert "--config" not in command and inspector_flags[-2:] == ["--method", "tools/list"]
    entry = {"mcpServers": {"toolhost": {"command": command[0], "args": command[1:], "env": env}}}
    assert await listed_through(entry, tmp_path / "client") == META


async def test_inspector_http_form_lists_tools_with_the_key(tmp_path) -> None:
    cfg, data = config(tmp_path), tmp_path / "data"
    keys = people(data)
    with Serve(cfg, data) as serve:
        words = shlex.split(filled(inspector_lines()[1], cfg=cfg, home=data, url=serve.url + "/mcp",
                                   key=keys["alice"]))
        url, header = words[4], words[words.index("--header") + 1]
        name, _, value = header.partition(": ")
        assert (words[words.index("--transport") + 1], words[words.index("--method") + 1]) == ("http", "tools/list")
        with anyio.fail_after(60):
            async with httpx2.AsyncClient(headers={name: value}) as http, \
                    Client(streamable_http_client(url, http_client=http)) as c:
                assert sorted(t.name for t in (await c.list_tools()).tools) == ["call_tool", "tool_search"]
