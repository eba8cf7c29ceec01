"""A blank credential (``Bearer`` with nothing or only spaces after it, or an empty console key) is
a missing credential on every admin surface: a 401 naming what to send, never a 500."""

from __future__ import annotations

import http.client
import json
from urllib.parse import urlsplit

import httpx2
import pytest

from tests.admin.support import Serve, config, people

BLANKS = ["Bearer ", "Bearer   ", "Bearer"]


@pytest.fixture(scope="module")
def served(tmp_path_factory):
    tmp = tmp_path_factory.mktemp("blank")
    data = tmp / "data"
    people(data)
    with Serve(config(tmp), data) as serve:
        yield serve


def _get(url: str, path: str, authorization: str) -> tuple[int, dict[str, str], str]:
    """GET with the ``Authorization`` header sent byte for byte (httpx refuses trailing spaces)."""
    conn = http.client.HTTPConnection(urlsplit(url).netloc, timeout=30)
    try:
        conn.request("GET", path, headers={"Authorization": authorization})
        r = conn.getresponse()
        return r.status, {k.lower(): v for k, v in r.getheaders()}, r.read().decode()
    finally:
        conn.close()


@pytest.mark.parametrize("header", BLANKS)
def test_a_blank_bearer_is_a_missing_credential_everywhere(served, header: str) -> None:
    status, _headers, body = _get(served.url, "/admin/api/servers", header)
    assert status == 401 and "missing credential" in body
    status, headers, _body = _get(served.url, "/metrics", header)
    assert status == 401 and headers["www-authenticate"].startswith("Bearer")
    status, _headers, body = _get(served.url, "/readyz", header)
    assert (status, json.loads(body)) == (200, {"ready": True})  # bare, as without a header


@pytest.mark.parametrize("key", ["", "   "])
def test_a_blank_console_key_is_refused_with_the_missing_credential_text(served, key: str) -> None:
    with httpx2.Client(base_url=served.url) as c:
        r = c.post("/admin/login", data={"key": key}, headers={"Origin": served.url})
        assert r.status_code == 401 and "missing credential" in r.text
