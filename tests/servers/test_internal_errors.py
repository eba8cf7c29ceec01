"""JSON-RPC errors never carry code 0 or a Python exception's text: an unexpected exception in a
gateway handler answers -32603 with a generic message in both protocol eras (the detail goes to the
log with its traceback)."""

from __future__ import annotations

import logging

import anyio
import pytest
from mcp import Client
from mcp.shared.exceptions import MCPError

from host.config import parse_config
from host.runtime import HostRuntime
from servers.gateway.error_boundary import INTERNAL_ERROR_MESSAGE
from servers.gateway.server import create_registry_server

pytestmark = pytest.mark.anyio

SECRET_TEXT = "could not connect to postgresql://toolhost@db.internal:5432 (password authentication failed)"


def _failing(_ctx: object) -> object:
    raise RuntimeError(SECRET_TEXT)


@pytest.mark.parametrize("mode", ["legacy", "auto"])
async def test_an_unexpected_handler_exception_answers_internal_error(tmp_path, caplog, mode: str) -> None:
    cfg = parse_config({"mcpServers": {}})
    caplog.set_level(logging.ERROR, logger="toolhost.gateway")
    with anyio.fail_after(60):
        async with HostRuntime(cfg, data_dir=tmp_path / "data") as rt:
            server = create_registry_server(rt, expose="all", principal_for=_failing)
            async with Client(server, mode=mode) as c:
                with pytest.raises(MCPError) as e:
                    await c.list_tools()
    assert (e.value.error.code, e.value.error.message) == (-32603, INTERNAL_ERROR_MESSAGE)
    assert "db.internal" not in str(e.value.error.model_dump())
    assert any(SECRET_TEXT in r.getMessage() or (r.exc_info and SECRET_TEXT in str(r.exc_info[1]))
               for r in caplog.records)
