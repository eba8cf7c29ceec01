"""Failed authentications are throttled per client: past a burst of 401s, that address gets 429 with
Retry-After before any credential is checked, other addresses are untouched, and tokens come back
with time."""

from __future__ import annotations

import anyio
import httpx2
import pytest

from servers.http.auth_throttle import FAILURE_BURST, AuthFailureThrottle
from tests.admin.support import Serve, config, people

pytestmark = pytest.mark.anyio


class Clock:
    def __init__(self) -> None:
        self.now = 1000.0

    def __call__(self) -> float:
        return self.now


async def test_the_bucket_empties_refills_and_is_per_client() -> None:
    checked: list[str] = []

    async def app(scope, receive, send) -> None:
        ok = dict(scope["headers"]).get(b"authorization") == b"Bearer good"
        checked.append(scope["client"][0])
        await send({"type": "http.response.start", "status": 200 if ok else 401, "headers": []})
        await send({"type": "http.response.body", "body": b""})

    clock = Clock()
    throttle = AuthFailureThrottle(app, burst=3, per_second=0.5, clock=clock)
    mallory = httpx2.AsyncClient(transport=httpx2.ASGITransport(throttle, client=("10.0.0.9", 1)), base_url="http://x")
    alice = httpx2.AsyncClient(transport=httpx2.ASGITransport(throttle, client=("10.0.0.5", 1)), base_url="http://x")
    async with mallory, alice:
        with anyio.fail_after(10):
            codes = [(await mallory.get("/mcp", headers={"Authorization": "Bearer bad"})).status_code for _ in range(5)]
            assert codes == [401, 401, 401, 429, 429]
            assert checked.count("10.0.0.9") == 3  # throttled requests never reach the credential check
            r = await mallory.get("/mcp", headers={"Authorization": "Bearer good"})
            assert (r.status_code, r.headers["retry-after"]) == (429, "2")
            assert (await alice.get("/mcp", headers={"Authorization": "Bearer good"})).status_code == 200
            clock.now += 2.0  # one token back (0.5 per second)
            assert (await mallory.get("/mcp", headers={"Authorization": "Bearer good"})).status_code == 200


async def test_a_flood_of_bad_keys_is_throttled_and_another_client_still_works(tmp_path) -> None:
    data = tmp_path / "data"
    keys = people(data)
    with Serve(config(tmp_path), data) as serve:
        other = httpx2.AsyncHTTPTransport(local_address="127.0.0.2")
        async with httpx2.AsyncClient(timeout=30) as flood, httpx2.AsyncClient(transport=other, timeout=30) as fine:
            with anyio.fail_after(120):
                codes = []
                for i in range(FAILURE_BURST + 5):
                    r = await flood.post(serve.url + "/mcp", json={}, headers={"Authorization": f"Bearer th_x{i}_bad"})
                    codes.append(r.status_code)
                assert codes[:FAILURE_BURST] == [401] * FAILURE_BURST
                assert set(codes[FAILURE_BURST + 1:]) == {429}
                assert int(r.headers["retry-after"]) >= 1
                ok = await fine.get(serve.url + "/admin/api/servers",
                                    headers={"Authorization": f"Bearer {keys['root']}"})
                assert ok.status_code == 200
