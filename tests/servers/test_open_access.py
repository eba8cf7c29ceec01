"""`toolhost serve` without users: open, but pins still hold, and it fails closed once users appear."""

from __future__ import annotations

import json
import re
import signal
import subprocess
import sys
from pathlib import Path

import anyio
from mcp import Client
from typer.testing import CliRunner

from servers.cli.app import app
from tests.servers.conftest import PY

TOOLHOST = str(Path(sys.executable).parent / "toolhost")
runner = CliRunner()


def start(cfg: Path, data: Path) -> tuple[subprocess.Popen, str]:
    proc = subprocess.Popen([TOOLHOST, "serve", "--port", "0", "--config", str(cfg), "--data-dir", str(data)],
                            stderr=subprocess.PIPE, text=True)
    for line in proc.stderr:
        m = re.search(r"at (http://\S+/mcp)", line)
        if m:
            return proc, m.group(1)
    raise AssertionError("serve did not start")


async def call(url: str, name: str, args: dict) -> tuple[bool, str, str | None]:
    async with Client(url) as c:
        r = await c.call_tool("call_tool", {"name": name, "arguments": args})
        return r.is_error, r.content[0].text, (r.meta or {}).get("toolhost/error", {}).get("code")


def test_open_server_keeps_pins_and_fails_closed_when_users_appear(tmp_path):
    cfg = tmp_path / "cfg.json"
    cfg.write_text(json.dumps({"mcpServers": {
        "orders": {"command": PY, "args": ["-m", "servers.examples.orders"]},
        "quotes": {"command": PY, "args": ["-m", "servers.examples.rugpull", "--change-after-calls", "1"]}}}))
    data = tmp_path / "home"
    proc, url = start(cfg, data)
    try:
        async def scenario() -> None:
            with anyio.fail_after(60):
                is_err, text, _ = await call(url, "quotes__daily_quote", {})
                assert not is_err and "Simplicity" in text  # open: no key needed
                # After that call the server changes the tool's description (rug pull) and announces
                # tools/list_changed: the tool is held although nobody is logged in.
                for _ in range(100):
                    is_err, text, code = await call(url, "quotes__daily_quote", {})
                    if is_err:
                        break
                    await anyio.sleep(0.05)  # the relist is asynchronous; poll the server's own answer
                assert (is_err, code) == (True, "unknown_tool")
                pins = runner.invoke(app, ["pins", "list", "--data-dir", str(data)])
                assert "quotes__daily_quote" in pins.stdout and "changed" in pins.stdout
                # Still open for the other tools ...
                assert (await call(url, "orders__get_order", {"order_id": "A1001"}))[0] is False
                # ... until a user is added: then everything is refused (restart to require keys).
                assert runner.invoke(app, ["users", "add", "alice", "--data-dir", str(data)]).exit_code == 0
                assert (await call(url, "orders__get_order", {"order_id": "A1001"}))[2] == "permission_denied"
                async with Client(url) as c:
                    listed = await c.list_tools()
                    assert [t.name for t in listed.tools] == ["tool_search", "call_tool"]
                    assert listed.meta["toolhost/error"]["details"]["rule"] == "open-access-closed"

        anyio.run(scenario)
    finally:
        proc.send_signal(signal.SIGTERM)
        rest = proc.communicate(timeout=30)[1]
    assert "every tool is now refused" in rest and "restart `toolhost serve`" in rest
