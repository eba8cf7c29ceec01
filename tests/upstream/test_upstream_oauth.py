"""Upstream OAuth (MCP authorization) against a real local authorization server.

The authorization server and protected MCP server are the official conformance suite's
``auth/metadata-default`` scenario (0.2.0-alpha.11, Node); the client is toolhost's upstream
layer through ``tests/peers/conformance_client.py`` (``toolhost.oauth``, a stand-in browser that
follows the authorization URL's redirects to toolhost's loopback listener). The rest of
:mod:`host.upstream.oauth` is checked directly: the token file's modes and contents, and the
loopback listener's answers.
"""

from __future__ import annotations

import json
import os
import stat
import subprocess
import sys
from pathlib import Path

import anyio
import httpx2
import pytest
from mcp.client.auth import OAuthFlowError
from mcp.shared.auth import OAuthToken

from host.upstream.oauth import FileTokenStorage, _LoopbackRedirect, authorization_browser, token_path

ROOT = Path(__file__).resolve().parents[2]
PEERS = ROOT / "peers"
SUITE = PEERS / "node_modules/conformance-next/dist/index.js"
CLIENT = ROOT / "tests/peers/conformance_client.py"
NODE = str(Path(sys.executable).with_name("node"))


def test_a_protected_server_is_authorized_and_the_token_is_kept_private_and_out_of_logs(tmp_path: Path) -> None:
    data = tmp_path / "data"
    env = dict(os.environ, TOOLHOST_CONFORMANCE_DATA_DIR=str(data),
               PATH=f"{Path(sys.executable).parent}{os.pathsep}{os.environ.get('PATH', '')}")
    out = subprocess.run([NODE, str(SUITE), "client", "--command", f"{sys.executable} {CLIENT}", "--scenario",
                          "auth/metadata-default", "--spec-version", "2026-07-28", "-o", str(tmp_path / "out")],
                         cwd=PEERS, env=env, capture_output=True, text=True, timeout=120)
    assert "Passed: 14/14, 0 failed" in out.stdout + out.stderr
    path = token_path(data, "s")
    assert stat.S_IMODE(path.stat().st_mode) == 0o600
    assert stat.S_IMODE(path.parent.stat().st_mode) == 0o700
    stored = json.loads(path.read_text())
    token = stored["tokens"]["access_token"]
    assert token.startswith("test-token") and stored["tokens"]["token_type"] == "Bearer"
    assert stored["client_info"]["redirect_uris"][0].startswith("http://127.0.0.1:")
    assert stored["client_info"]["redirect_uris"][0].endswith("/callback")
    logs = [p for p in data.rglob("*") if p.is_file() and p != path]
    assert logs, "the server's log files exist"
    assert all(token not in p.read_text(errors="replace") for p in logs)
    assert token not in out.stdout + out.stderr


@pytest.mark.anyio
async def test_token_storage_round_trips_and_reuses_the_registered_port(tmp_path: Path) -> None:
    storage = FileTokenStorage(token_path(tmp_path, "my server"))
    assert await storage.get_tokens() is None and storage.registered_port() is None
    await storage.set_tokens(OAuthToken(access_token="secret-a", token_type="Bearer", expires_in=60))
    assert (await storage.get_tokens()).access_token == "secret-a"
    assert stat.S_IMODE(storage.path.stat().st_mode) == 0o600
    storage.path.write_text("not json")  # a damaged file reads as "no tokens": the user authorizes again
    assert await storage.get_tokens() is None


@pytest.mark.anyio
async def test_the_loopback_listener_returns_the_code_and_reports_a_refusal(tmp_path: Path) -> None:
    async def browser_for(query: str):
        async def browse(url: str) -> None:
            async with httpx2.AsyncClient() as http:
                wrong = await http.get(f"{redirect.redirect_uri.removesuffix('/callback')}/favicon.ico")
                answers.append((wrong.status_code, wrong.text))
                ok = await http.get(f"{redirect.redirect_uri}?{query}")
                answers.append((ok.status_code, ok.text))
        return browse

    redirect = _LoopbackRedirect("docs", 0)
    with socket_port() as port:
        redirect.port = port
    answers: list[tuple[int, str]] = []
    with anyio.fail_after(20):
        await redirect.redirect("https://as.example/authorize?x=1")
        with authorization_browser(await browser_for("code=abc&state=s1&iss=https%3A%2F%2Fas.example")):
            result = await redirect.callback()
        assert (result.code, result.state, result.iss) == ("abc", "s1", "https://as.example")
        assert answers == [(400, "toolhost: not an authorization response."),
                           (200, "toolhost: authorization received, you can close this tab.")]
        await redirect.redirect("https://as.example/authorize?x=2")
        with authorization_browser(await browser_for("error=access_denied&error_description=user+said+no")), \
                pytest.raises(OAuthFlowError) as err:
            await redirect.callback()
    assert str(err.value) == "toolhost: the authorization server refused: access_denied (user said no)"


class socket_port:
    """A free loopback port (bound and released)."""

    def __enter__(self) -> int:
        import socket

        with socket.socket() as s:
            s.bind(("127.0.0.1", 0))
            return int(s.getsockname()[1])

    def __exit__(self, *exc: object) -> None:
        return None
