"""An upstream whose tools/call result has bare strings in ``content`` (not content blocks): the
model gets the text, not a validation error's dump, and the server's log says so once."""

from __future__ import annotations

import anyio
import pytest

from host.calls import ResultStatus
from host.runtime import HostRuntime
from registry import AllowAll
from tests.upstream.support import config, hostile


@pytest.mark.anyio
async def test_bare_strings_in_content_are_read_as_text(tmp_path) -> None:
    cfg = config({"h": hostile(bare_strings_tool=True)})
    with anyio.fail_after(60):
        async with HostRuntime(cfg, data_dir=tmp_path, policy=AllowAll()) as rt:
            res = await rt.call("h__bare_strings", {})
            echo = await rt.call("h__echo", {"text": "still fine"})
    assert res.status is ResultStatus.OK
    assert [b.text for b in res.content] == ["first line\na block\nlast line"]
    assert "validation" not in res.content[0].text.lower()
    assert echo.content[0].text == "still fine"
    log = (tmp_path / "logs" / "h.stderr.log").read_text()
    assert log.count("had bare strings in content; read them as text blocks") == 1
