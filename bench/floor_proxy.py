"""The fastest gateways we can write, as floors for ``bench/gateway.py``: what any proxy pays for its hop.

Run (the benchmark starts them)::

    python bench/floor_proxy.py --kind sdk --http  -- CMD ARGS...   # prints "listening on URL"
    python bench/floor_proxy.py --kind sdk --stdio -- CMD ARGS...
    python bench/floor_proxy.py --kind raw --http  -- CMD ARGS...
    python bench/floor_proxy.py --kind raw --stdio -- CMD ARGS...

Both start ``CMD`` (an MCP server over stdio) and forward every tool call to it, doing nothing else:
no tool registry, no validation of their own, no access control, no audit, no events, no limits.

* ``sdk``: the MCP SDK's low-level ``Server`` whose ``tools/list`` answers the upstream's list
  (fetched once) and whose ``tools/call`` awaits ``mcp.Client.call_tool`` on the upstream; served
  like ``toolhost serve`` is (uvicorn on uvloop and httptools, ``TCP_NODELAY``; or the SDK's stdio
  transport). This is the least any gateway built on the SDK's server and client does per call.
* ``raw``: no MCP SDK at all. Over stdio, two threads copy bytes (stdin → the child's stdin, the
  child's stdout → stdout) without reading them. Over HTTP, a bare ASGI app on uvicorn takes each
  POSTed JSON-RPC message, gives requests a fresh id (several HTTP clients share the one child),
  writes it as one line to the child and answers the child's reply as ``application/json``;
  notifications get ``202``. It trusts every byte: it is a floor to compare with, never a gateway.
"""

from __future__ import annotations

import argparse
import itertools
import json
import os
import socket
import subprocess
import sys
import threading
from typing import Any


def _listen() -> socket.socket:
    sock = socket.socket(socket.AF_INET, socket.SOCK_STREAM, socket.IPPROTO_TCP)
    sock.setsockopt(socket.IPPROTO_TCP, socket.TCP_NODELAY, 1)
    sock.bind(("127.0.0.1", 0))
    sock.listen(1024)
    print(f"listening on http://127.0.0.1:{sock.getsockname()[1]}/mcp", flush=True)
    return sock


async def _uvicorn(app: Any, sock: socket.socket) -> None:
    import uvicorn

    config = uvicorn.Config(app, log_level="warning", access_log=False, loop="none", http="httptools")
    await uvicorn.Server(config).serve(sockets=[sock])


# -- sdk ------------------------------------------------------------------------------------
async def sdk_proxy(cmd: list[str], http: bool) -> None:
    from mcp import Client, StdioServerParameters
    from mcp.client.stdio import stdio_client
    from mcp.server import Server
    from mcp.server.stdio import stdio_server

    with open(os.devnull, "w") as errlog:
        async with Client(stdio_client(StdioServerParameters(command=cmd[0], args=cmd[1:]), errlog=errlog)) as up:
            listed = await up.list_tools()

            async def list_tools(_ctx: Any, _params: Any) -> Any:
                return listed

            async def call_tool(_ctx: Any, params: Any) -> Any:
                return await up.call_tool(params.name, params.arguments)

            server = Server("floor-sdk", on_list_tools=list_tools, on_call_tool=call_tool)
            if http:
                await _uvicorn(server.streamable_http_app(host="127.0.0.1"), _listen())
            else:
                async with stdio_server() as (read, write):
                    await server.run(read, write, server.create_initialization_options())


# -- raw ------------------------------------------------------------------------------------
def raw_stdio(cmd: list[str]) -> None:
    child = subprocess.Popen(cmd, stdin=subprocess.PIPE, stdout=subprocess.PIPE, stderr=subprocess.DEVNULL, bufsize=0)
    assert child.stdin is not None and child.stdout is not None

    def pump(src: int, dst: int) -> None:
        while chunk := os.read(src, 1 << 16):
            os.write(dst, chunk)

    out = threading.Thread(target=pump, args=(child.stdout.fileno(), sys.stdout.fileno()), daemon=True)
    out.start()
    try:
        pump(sys.stdin.fileno(), child.stdin.fileno())
    finally:
        child.stdin.close()
        child.wait()
        out.join(5)


async def raw_http(cmd: list[str]) -> None:
    import asyncio

    child = await asyncio.create_subprocess_exec(*cmd, stdin=asyncio.subprocess.PIPE, stdout=asyncio.subprocess.PIPE,
                                                 stderr=asyncio.subprocess.DEVNULL, limit=1 << 24)
    assert child.stdin is not None and child.stdout is not None
    waiting: dict[int, asyncio.Future[dict[str, Any]]] = {}
    ids = itertools.count(1)

    async def read_child() -> None:
        assert child.stdout is not None
        while line := await child.stdout.readline():
            msg = json.loads(line)
            fut = waiting.pop(msg.get("id"), None) if "method" not in msg else None
            if fut is not None and not fut.done():
                fut.set_result(msg)

    async def app(scope: dict[str, Any], receive: Any, send: Any) -> None:
        if scope["type"] == "lifespan":
            while (await receive())["type"] != "lifespan.shutdown":
                await send({"type": "lifespan.startup.complete"})
            await send({"type": "lifespan.shutdown.complete"})
            return
        if scope["method"] != "POST":
            await send({"type": "http.response.start", "status": 405, "headers": [(b"allow", b"POST")]})
            await send({"type": "http.response.body", "body": b""})
            return
        body = b""
        while True:
            event = await receive()
            body += event.get("body", b"")
            if not event.get("more_body"):
                break
        msg = json.loads(body)
        assert child.stdin is not None
        if "id" not in msg or "method" not in msg:  # a notification (or a reply): pass it on, nothing to answer
            child.stdin.write(json.dumps(msg).encode() + b"\n")
            await send({"type": "http.response.start", "status": 202, "headers": []})
            await send({"type": "http.response.body", "body": b""})
            return
        theirs, ours = msg["id"], next(ids)
        msg["id"] = ours
        fut = waiting[ours] = asyncio.get_running_loop().create_future()
        child.stdin.write(json.dumps(msg).encode() + b"\n")
        reply = await fut
        reply["id"] = theirs
        out = json.dumps(reply).encode()
        await send({"type": "http.response.start", "status": 200,
                    "headers": [(b"content-type", b"application/json"), (b"content-length", str(len(out)).encode())]})
        await send({"type": "http.response.body", "body": out})

    reader = asyncio.ensure_future(read_child())
    try:
        await _uvicorn(app, _listen())
    finally:
        reader.cancel()
        child.stdin.close()
        await child.wait()


def main() -> None:
    p = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    p.add_argument("--kind", choices=("sdk", "raw"), required=True)
    mode = p.add_mutually_exclusive_group(required=True)
    mode.add_argument("--http", action="store_true")
    mode.add_argument("--stdio", action="store_true")
    p.add_argument("command", nargs=argparse.REMAINDER)
    a = p.parse_args()
    cmd = a.command[1:] if a.command[:1] == ["--"] else a.command  # only the separator
    if a.kind == "raw" and a.stdio:
        raw_stdio(cmd)
        return
    import uvloop

    if a.kind == "raw":
        uvloop.run(raw_http(cmd))
    else:
        import anyio

        anyio.run(sdk_proxy, cmd, a.http, backend_options={"use_uvloop": True})


if __name__ == "__main__":
    main()
