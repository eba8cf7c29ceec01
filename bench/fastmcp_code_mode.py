"""Runs FastMCP's code mode (``fastmcp.experimental.transforms.code_mode.CodeMode``) on a proxy in
front of the stdio MCP servers of an ``mcpServers`` config, over streamable HTTP, for
``bench/code_mode_gateway.py``. Run with the python of a venv that has ``fastmcp[code-mode]``
installed (fastmcp is not a toolhost dependency)::

    python bench/fastmcp_code_mode.py CONFIG.json [--sessions shared|fresh] [--wall-clock 10] ...

It binds 127.0.0.1 on a free port and prints ``listening on URL`` on stdout. The server is built from
FastMCP's documented pieces: one proxy per upstream (``create_proxy``), mounted under the server's
name as namespace (tool names ``orders_get_order``), then ``CodeMode`` as a transform, its sandbox a
``MontySandboxProvider`` given the same limits as the toolhost side (pydantic-monty keys
``max_feed_duration_secs``, ``max_memory``, ``max_recursion_depth``) and ``wall_clock_timeout_secs``.

``--sessions shared`` (default) hands each proxy a connected ``Client``, which FastMCP reuses for
every request (one upstream process each, as toolhost keeps them); ``fresh`` gives it the server's
config entry, FastMCP's default of a new upstream session per request (the stdio process is kept
alive between them; the first request starts it). ``create_proxy`` on the whole multi-server config
instead was seconds per call in a check (every request reconnected the upstreams), so it is not used.
"""

import argparse
import asyncio
import contextlib
import json
import socket
import sys


def main() -> None:
    p = argparse.ArgumentParser()
    p.add_argument("config")
    p.add_argument("--wall-clock", type=float, default=10.0)
    p.add_argument("--cpu-seconds", type=float, default=5.0)
    p.add_argument("--max-memory", type=int, default=64 * 1024 * 1024)
    p.add_argument("--max-recursion", type=int, default=200)
    p.add_argument("--max-tool-calls", type=int, default=100)
    p.add_argument("--sessions", choices=["shared", "fresh"], default="shared")
    a = p.parse_args()
    asyncio.run(serve(a))


async def serve(a: argparse.Namespace) -> None:
    import fastmcp
    from fastmcp import Client, FastMCP
    from fastmcp.client.transports import StdioTransport
    from fastmcp.experimental.transforms.code_mode import CodeMode, MontySandboxProvider
    from fastmcp.server import create_proxy

    fastmcp.settings.log_level = "WARNING"
    with open(a.config) as f:
        servers = json.load(f)["mcpServers"]
    proxy = FastMCP("fastmcp-code-mode")
    async with contextlib.AsyncExitStack() as stack:
        for name, spec in servers.items():
            if a.sessions == "shared":
                client = Client(StdioTransport(spec["command"], spec.get("args", []), env=spec.get("env")))
                target = await stack.enter_async_context(client)
            else:
                target = {"mcpServers": {name: spec}}
            proxy.mount(create_proxy(target, name=name), namespace=name)
        limits = {"max_feed_duration_secs": a.cpu_seconds, "max_memory": a.max_memory,
              "max_recursion_depth": a.max_recursion}
        proxy.add_transform(CodeMode(sandbox_provider=MontySandboxProvider(limits=limits),
                                     max_tool_calls=a.max_tool_calls, wall_clock_timeout_secs=a.wall_clock))
        sock = socket.socket(socket.AF_INET, socket.SOCK_STREAM, socket.IPPROTO_TCP)
        sock.setsockopt(socket.IPPROTO_TCP, socket.TCP_NODELAY, 1)
        sock.bind(("127.0.0.1", 0))
        sock.listen(1024)
        print(f"listening on http://127.0.0.1:{sock.getsockname()[1]}/mcp", flush=True)
        await proxy.run_async(transport="http", show_banner=False, host="127.0.0.1", port=sock.getsockname()[1],
                              log_level="warning", sockets=[sock])


if __name__ == "__main__":
    sys.exit(main())
