"""No secret reaches a file of the data folder.

Made-up secrets of every shape (``data/secret_shapes.json``: JWTs, AWS secret access keys,
passwords in URLs, ``token VALUE`` in prose, private-key blocks, vendor tokens) go through real
calls as arguments and come back as results (the example notes server stores and returns them),
through approvals, the audit log and the event log, and through ``approvals approve``. Then every
byte of every file in the data folder (database, -wal, event logs, server stderr logs) is searched
for them, and every file must be 0600 and every folder 0700.
"""

from __future__ import annotations

import json
import os
import stat
import sys
from pathlib import Path

import anyio
import pytest

from host.access import AccessControl, decide
from host.calls import ResultStatus
from host.config import parse_config
from host.runtime import HostRuntime
from registry.policy import Principal

pytestmark = pytest.mark.anyio

FIXTURES = json.loads((Path(__file__).parent / "data" / "secret_shapes.json").read_text())


def _needles(secret: str) -> list[bytes]:
    """The secret as stored in JSON or raw text, and its longest line (a PEM body)."""
    core = max(secret.splitlines(), key=len)
    forms = {secret, json.dumps(secret)[1:-1], core, json.dumps(core)[1:-1]}
    return [f.encode() for f in forms if len(f) >= 8]


async def test_no_secret_in_any_file_of_the_data_folder(tmp_path):
    data = tmp_path / "data"
    access = AccessControl.open(data)
    access.users.add("eve")
    access.users.add("carol")
    access.roles.add("approver")
    access.users.assign_role("carol", "approver")
    access.grants.add("eve", "notes__*", approval=False)
    access.grants.add("eve", "orders__*")
    cfg = parse_config(
        {
            "mcpServers": {
                "orders": {"command": sys.executable, "args": ["-m", "servers.examples.orders"]},
                "notes": {"command": sys.executable,
                          "args": ["-m", "servers.examples.notes", "--data-dir", str(tmp_path / "notes-own-data")]},
            }
        },
        data_dir=data,
    )
    eve = Principal("eve")
    try:
        with anyio.fail_after(120):
            async with HostRuntime(cfg, data_dir=data, policy=access, approvals=access.approval_hook(),
                                   auditor=access, conversation_id="secrets") as rt:
                access.watch(rt.registry)
                for i, (name, secret, context) in enumerate(FIXTURES["secrets"]):
                    text = context.replace("{s}", secret)
                    wrote = await rt.call("notes__write_note", {"title": f"n{i}", "text": text}, eve)
                    assert wrote.status is ResultStatus.OK, (name, wrote.error)
                    read = await rt.call("notes__read_note", {"title": f"n{i}"}, eve)
                    assert read.status is ResultStatus.OK and secret.splitlines()[0] in read.text, name
                    pending = await rt.call("orders__cancel_order", {"order_id": "A1002", "reason": text}, eve)
                    assert pending.status is ResultStatus.APPROVAL_REQUIRED, name
                    if i % 3 == 0:
                        decide(access, pending.error.approval_id, approve=True, by="carol", how="cli",
                               approver_user="carol")
                        ran = await rt.call("orders__cancel_order", {"order_id": "A1002", "reason": text}, eve)
                        assert ran.status in (ResultStatus.OK, ResultStatus.TOOL_ERROR), name
    finally:
        access.close()
    leaks: list[str] = []
    files = [p for p in data.rglob("*") if p.is_file()]
    assert {p.name for p in files} >= {"toolhost.db", "secrets.jsonl"}
    for path in files:
        blob = path.read_bytes()
        for name, secret, _context in FIXTURES["secrets"]:
            if any(n in blob for n in _needles(secret)):
                leaks.append(f"{name} in {path.relative_to(data)}")
    assert leaks == []
    modes = {str(p.relative_to(data)): stat.S_IMODE(p.stat().st_mode) for p in [data, *data.rglob("*")]}
    assert {k: oct(v) for k, v in modes.items() if v != (0o700 if (data / k).is_dir() else 0o600)} == {}
    assert os.path.exists(data / "logs")
