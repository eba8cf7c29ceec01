"""A header-read timeout against slow-loris clients: connections that trickle their request headers
are closed once the header timeout passes, while a complete request meanwhile is answered."""

from __future__ import annotations

import socket
import time

import httpx2

from tests.admin.support import Serve, config


def test_connections_that_never_finish_their_headers_are_closed(tmp_path, monkeypatch) -> None:
    monkeypatch.setenv("TOOLHOST_HEADER_TIMEOUT_SECONDS", "1.5")  # Serve passes the environment on
    with Serve(config(tmp_path), tmp_path / "data") as serve:
        host, port = serve.url.removeprefix("http://").rsplit(":", 1)
        sockets = []
        for _ in range(20):
            c = socket.create_connection((host, int(port)), timeout=10)
            c.sendall(b"GET /healthz HTTP/1.1\r\nHost: x\r\n")  # never the blank line ending the headers
            sockets.append(c)
        started = time.monotonic()
        assert httpx2.get(serve.url + "/healthz", timeout=10).json() == {"status": "ok"}
        for c in sockets:
            assert c.recv(100) == b""  # closed by the server (the 10 s socket timeout bounds the wait)
            c.close()
        assert time.monotonic() - started < 9
        assert httpx2.get(serve.url + "/healthz", timeout=10).status_code == 200
