"""Upstream log messages written to the server's log file: private (0600) and with secrets masked."""

from __future__ import annotations

import stat

import anyio
import pytest
from mcp.types import LoggingMessageNotificationParams

from host.upstream.relay import Relay


@pytest.mark.anyio
async def test_upstream_log_lines_are_private_and_redacted(tmp_path):
    log = tmp_path / "logs" / "git.log"
    relay = Relay("git", log)
    with anyio.fail_after(5):
        await relay.on_log(
            LoggingMessageNotificationParams(
                level="warning", logger="auth", data="retrying with Authorization: Bearer abcdef0123456789xyz"
            )
        )
        await relay.on_log(LoggingMessageNotificationParams(level="info", data={"password": "hunter2", "user": "ann"}))
    text = log.read_text(encoding="utf-8")
    lines = text.splitlines()
    assert len(lines) == 2
    assert lines[0].endswith("WARNING auth: retrying with Authorization: Bearer [REDACTED]")
    assert lines[1].endswith('INFO -: {"password": "[REDACTED]", "user": "ann"}')
    assert "hunter2" not in text and "abcdef0123456789xyz" not in text
    assert stat.S_IMODE(log.stat().st_mode) == 0o600
