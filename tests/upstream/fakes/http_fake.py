"""A streamable-HTTP MCP server (SDK ``MCPServer``, stateful, handshake era) that misbehaves on command.

Run: ``python http_fake.py [PORT [modern]]`` — binds 127.0.0.1 on PORT (0: a free port) and
prints ``LISTENING <port>``; ``modern`` lets clients negotiate 2026-07-28 (no sessions).
``server/discover`` is answered "method not found" so clients use the session-based
2025-11-25 handshake (the era with ``Mcp-Session-Id``).

Control (JSON over HTTP, outside MCP): ``POST /control {"mode": M}`` with M one of

* ``normal``; ``forget``: forget every session seen so far (later requests carrying one get
  404 ``Session not found``, as an idle reaper or a restart would cause);
* ``unauthorized`` / ``forbidden``: answer every MCP request 401 / 403 with
  ``WWW-Authenticate: Bearer realm="fake", error="invalid_token"``;
* ``hang``: never answer MCP requests that carry a session id (pings time out).

``GET /stats`` → ``{"initializes": n, "calls": n, "not_found": n, "discovers": n}`` (``not_found``: POSTs answered 404).
"""

from __future__ import annotations

import json
import socket
import sys

import anyio
import uvicorn
from mcp.server.mcpserver import MCPServer

app = MCPServer("http-fake", log_level="WARNING")
STATE = {"mode": "normal", "forgotten": set(), "seen": set(), "initializes": 0, "calls": 0, "not_found": 0,
         "discovers": 0}
MODERN = len(sys.argv) > 2 and sys.argv[2] == "modern"  # answer server/discover (2026-07-28, no sessions)


@app.tool()
async def echo(text: str) -> str:
    """Echo the text back."""
    STATE["calls"] += 1
    return text


MCP = app.streamable_http_app()
CHALLENGE = b'Bearer realm="fake", error="invalid_token"'


async def _read_body(receive) -> bytes:
    body = b""
    while True:
        msg = await receive()
        body += msg.get("body", b"")
        if not msg.get("more_body"):
            return body


async def _reply(send, status: int, payload: dict, headers: list | None = None) -> None:
    data = json.dumps(payload).encode()
    await send({"type": "http.response.start", "status": status,
                "headers": [(b"content-type", b"application/json")] + (headers or [])})
    await send({"type": "http.response.body", "body": data})


async def application(scope, receive, send) -> None:
    if scope["type"] != "http":
        await MCP(scope, receive, send)
        return
    path = scope["path"]
    if path == "/control":
        body = json.loads(await _read_body(receive) or b"{}")
        STATE["mode"] = body.get("mode", STATE["mode"])
        if STATE["mode"] == "forget":
            STATE["forgotten"] |= STATE["seen"]
            STATE["mode"] = "normal"
        await _reply(send, 200, {"mode": STATE["mode"]})
        return
    if path == "/stats":
        await _reply(send, 200, {k: STATE[k] for k in ("initializes", "calls", "not_found", "discovers")})
        return
    headers = dict(scope["headers"])
    sid = headers.get(b"mcp-session-id", b"").decode()
    mode = STATE["mode"]
    if mode in ("unauthorized", "forbidden"):
        await _read_body(receive)
        await _reply(send, 401 if mode == "unauthorized" else 403, {"error": "invalid_token"},
                     [(b"www-authenticate", CHALLENGE)])
        return
    if mode == "hang" and sid:
        await anyio.sleep_forever()
    if sid and sid in STATE["forgotten"]:
        await _read_body(receive)
        STATE["not_found"] += scope["method"] == "POST"
        await _reply(send, 404, {"jsonrpc": "2.0", "id": "server-error",
                                 "error": {"code": -32600, "message": "Session not found"}})
        return
    if scope["method"] == "POST":
        body = await _read_body(receive)
        msg = json.loads(body or b"{}")
        if isinstance(msg, dict) and msg.get("method") == "server/discover":
            STATE["discovers"] += 1
        if isinstance(msg, dict) and msg.get("method") == "server/discover" and not MODERN:
            await _reply(send, 200, {"jsonrpc": "2.0", "id": msg.get("id"),
                                     "error": {"code": -32601, "message": "Method not found"}})
            return
        if isinstance(msg, dict) and msg.get("method") == "initialize":
            STATE["initializes"] += 1
        sent = False

        async def replay():
            nonlocal sent
            if sent:
                return await receive()
            sent = True
            return {"type": "http.request", "body": body, "more_body": False}

        async def tracking_send(message):
            if message["type"] == "http.response.start":
                for k, v in message.get("headers", []):
                    if k.lower() == b"mcp-session-id":
                        STATE["seen"].add(v.decode())
            await send(message)

        await MCP(scope, replay, tracking_send)
        return
    if sid:
        STATE["seen"].add(sid)
    await MCP(scope, receive, send)


def main() -> None:
    sock = socket.socket()
    sock.setsockopt(socket.SOL_SOCKET, socket.SO_REUSEADDR, 1)
    sock.bind(("127.0.0.1", int(sys.argv[1]) if len(sys.argv) > 1 else 0))
    sock.listen(128)  # connections queue from now on, so "LISTENING" is true when printed
    port = sock.getsockname()[1]
    print(f"LISTENING {port}", flush=True)
    config = uvicorn.Config(application, log_level="warning", lifespan="on")
    uvicorn.Server(config).run(sockets=[sock])


if __name__ == "__main__":
    sys.exit(main())
