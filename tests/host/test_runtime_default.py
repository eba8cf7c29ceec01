"""A :class:`HostRuntime` built without a policy never runs a destructive tool unasked; read tools
run; an explicit policy (here allow-all) is the caller's choice. The agent loop's calls through
the runtime are audited one row each (``HostRuntime.run_batch``)."""

from __future__ import annotations

import json

import anyio
import pytest

from host.calls import ResultStatus, ToolCall
from host.config import DEFAULT_CONFIG_PATH, parse_config
from host.pipeline import CallContext
from host.runtime import HostRuntime
from registry import AllowAll, Principal

pytestmark = pytest.mark.anyio


def _orders_only():
    bundled = json.loads(DEFAULT_CONFIG_PATH.read_text())
    return parse_config({"mcpServers": {"orders": bundled["mcpServers"]["orders"]}})


class _Rows:
    def __init__(self) -> None:
        self.rows: list[tuple[str, str, str]] = []

    async def audit_call_async(self, principal, name, arguments, **kwargs) -> int:
        self.rows.append((principal.user, name, kwargs["status"]))
        return len(self.rows)


async def test_without_a_policy_destructive_tools_wait_for_approval_and_read_tools_run(tmp_path):
    auditor = _Rows()
    with anyio.fail_after(60):
        async with HostRuntime(_orders_only(), data_dir=tmp_path / "a", auditor=auditor) as rt:
            assert rt.registry.snapshot().get("orders__cancel_order").risk.value == "destructive"
            batch = [ToolCall(call_id="c1", name="orders__get_order", raw_arguments='{"order_id": "A1001"}'),
                     ToolCall(call_id="c2", name="orders__cancel_order", raw_arguments='{"order_id": "A1002"}')]
            got, cancel = await rt.run_batch(batch, CallContext(principal=Principal(user="agent")))
        async with HostRuntime(_orders_only(), data_dir=tmp_path / "b", policy=AllowAll()) as trusting:
            allowed = await trusting.call("orders__cancel_order", {"order_id": "A1002"})
    assert [r.call_id for r in (got, cancel)] == ["c1", "c2"]
    assert got.status is ResultStatus.OK
    assert cancel.status is ResultStatus.APPROVAL_REQUIRED
    assert cancel.error.message == ("orders__cancel_order needs a human's approval before it can run (risk "
                                    "destructive needs approval); ask the user to approve it")
    assert auditor.rows == [("agent", "orders__get_order", "ok"),
                            ("agent", "orders__cancel_order", "approval_required")]
    assert allowed.status is ResultStatus.OK
