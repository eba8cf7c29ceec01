"""What is served without a key names nothing: with API keys on, ``/readyz`` answers a bare
ready/not-ready and ``/metrics`` needs an admin key or the local admin token; with a credential both
give their details. In open access and with ``--auth off`` (every client may use every tool anyway)
both answer everyone. A hidden tool answers exactly like an unknown one, so neither may list it."""

from __future__ import annotations

import httpx2
import pytest

from tests.admin.support import Serve, config, people


def _metrics_names_tools(text: str) -> bool:
    return 'server="orders"' in text or "orders__" in text


def test_with_api_keys_nothing_is_named_without_a_credential(tmp_path) -> None:
    data = tmp_path / "data"
    keys = people(data)
    with Serve(config(tmp_path), data) as serve:
        bare = httpx2.get(serve.url + "/readyz")
        assert (bare.status_code, bare.json()) == (200, {"ready": True})
        for key in (keys["alice"], "th_nope_wrong"):  # a non-admin key or a bad one: still bare
            r = httpx2.get(serve.url + "/readyz", headers={"Authorization": f"Bearer {key}"})
            assert r.json() == {"ready": True}
        m = httpx2.get(serve.url + "/metrics")
        assert m.status_code == 401 and m.headers["www-authenticate"].startswith("Bearer")
        assert not _metrics_names_tools(m.text) and "rug" not in m.text
        assert httpx2.get(serve.url + "/metrics", headers={"Authorization": f"Bearer {keys['alice']}"}
                          ).status_code == 401
        for key in (keys["root"], serve.token):  # an admin's key, the local admin token from loopback
            auth = {"Authorization": f"Bearer {key}"}
            detail = httpx2.get(serve.url + "/readyz", headers=auth).json()
            assert [(s["name"], s["state"]) for s in detail["servers"]] == [("orders", "connected"),
                                                                           ("rug", "connected")]
            assert detail["store"] == "ok"
            full = httpx2.get(serve.url + "/metrics", headers=auth)
            assert full.status_code == 200 and 'toolhost_upstream_up{server="orders"} 1.0' in full.text
        assert httpx2.get(serve.url + "/healthz").json() == {"status": "ok"}


@pytest.mark.parametrize("mode", ["open-access", "auth-off"])
def test_without_api_keys_both_answer_everyone(tmp_path, mode: str) -> None:
    data = tmp_path / "data"
    extra = ("--auth", "off") if mode == "auth-off" else ()
    with Serve(config(tmp_path), data, *extra) as serve:
        detail = httpx2.get(serve.url + "/readyz").json()
        assert [s["name"] for s in detail["servers"]] == ["orders", "rug"]
        assert detail["store"] == ("off" if mode == "auth-off" else "ok")
        m = httpx2.get(serve.url + "/metrics")
        assert m.status_code == 200 and 'toolhost_upstream_up{server="orders"} 1.0' in m.text
