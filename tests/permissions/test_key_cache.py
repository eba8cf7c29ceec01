"""Verified API keys are reused per access revision (issue 12): no thread hop and no key read for a
known key, while a revocation, a removed user or a role change — made through another
``AccessControl`` on the same database, like the CLI or another replica — holds on the very next
request, in-process and over the real HTTP server."""

from __future__ import annotations

import anyio
import httpx2
import pytest

from host.access import AccessControl
from servers.http.api_keys import ApiKeyVerifier

from tests.permissions.test_perm_http import client, serving, text

pytestmark = pytest.mark.anyio


class CountingAccess:
    """Counts the slow verifications of a real ``AccessControl`` (everything else passes through)."""

    def __init__(self, access: AccessControl) -> None:
        self._access = access
        self.slow = 0

    def authenticate(self, token):
        self.slow += 1
        return self._access.authenticate(token)

    def __getattr__(self, name):
        return getattr(self._access, name)


@pytest.fixture
def admin(store_url: str):
    """A second handle on the same database: the CLI or another replica."""
    other = AccessControl.open(url=store_url)
    try:
        yield other
    finally:
        other.close()


async def test_known_key_is_verified_once_per_revision(access, admin) -> None:
    access.users.add("alice")
    _info, token = access.keys.create("alice")
    counting = CountingAccess(access)
    verifier = ApiKeyVerifier(counting)  # type: ignore[arg-type]
    with anyio.fail_after(30):
        for _ in range(5):
            got = await verifier.verify_token(token)
            assert got is not None and got.subject == "alice" and got.claims["roles"] == []
        assert counting.slow == 1

        admin.roles.add("ops")
        admin.users.assign_role("alice", "ops")  # a role change: the cached principal is stale
        got = await verifier.verify_token(token)
        assert got is not None and got.claims["roles"] == ["ops"]
        assert counting.slow == 2

        admin.keys.revoke("alice")
        assert await verifier.verify_token(token) is None
        assert await verifier.verify_token(token) is None  # failures are never cached
        assert counting.slow == 4
    rows = access.audit_log.query(action="auth")
    assert [(r.key_id, r.status) for r in rows] == [(token.split("_")[1], "invalid_key")]


async def test_removed_user_and_expired_entry_take_the_slow_path(access, admin) -> None:
    access.users.add("bob")
    _info, token = access.keys.create("bob")
    counting = CountingAccess(access)
    verifier = ApiKeyVerifier(counting)  # type: ignore[arg-type]
    with anyio.fail_after(30):
        assert (await verifier.verify_token(token)).subject == "bob"
        verifier.verified.ttl_seconds = 0.0  # every entry is past its time: last_used_at stays fresh
        assert (await verifier.verify_token(token)).subject == "bob"
        assert counting.slow == 2
        verifier.verified.ttl_seconds = 60.0
        assert (await verifier.verify_token(token)).subject == "bob"
        assert counting.slow == 2
        admin.users.remove("bob")
        assert await verifier.verify_token(token) is None
        assert counting.slow == 3


async def test_revoked_key_is_refused_on_the_next_http_request(tmp_path, access, admin) -> None:
    access.users.add("erin")
    access.grants.add("erin", "orders__get_order", max_risk="read")
    _info, token = access.keys.create("erin")
    async with serving(tmp_path, access) as url:
        with anyio.fail_after(60):
            async with client(url, token) as c:
                for _ in range(3):
                    got = await c.call_tool("call_tool", {"name": "orders__get_order", "arguments": {"order_id": "A1001"}})
                    assert not got.is_error and "A1001" in text(got)
                admin.keys.revoke("erin")
                init = {"jsonrpc": "2.0", "id": 1, "method": "tools/list", "params": {}}
                async with httpx2.AsyncClient() as http:
                    raw = await http.post(url, json=init, headers={"Accept": "application/json, text/event-stream",
                                                                   "Authorization": f"Bearer {token}"})
                assert raw.status_code == 401 and "Bearer" in raw.headers.get("www-authenticate", "")
