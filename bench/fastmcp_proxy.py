"""Runs FastMCP's proxy (``fastmcp.server.create_proxy``) in front of one stdio MCP server, for
``bench/gateway.py``. Run with the python of a venv that has ``fastmcp`` installed (fastmcp is not
a toolhost dependency)::

    python bench/fastmcp_proxy.py --stdio -- CMD ARGS...         # proxy served over stdio
    python bench/fastmcp_proxy.py --http  -- CMD ARGS...         # over streamable HTTP

With ``--http`` it binds 127.0.0.1 on a free port and prints ``listening on URL`` on stdout. The
proxy is built the way FastMCP's documentation recommends: ``create_proxy`` on an ``mcpServers``
config naming the one backend (tool names are kept unprefixed for a single server).
"""

import argparse
import socket
import sys


def main() -> None:
    p = argparse.ArgumentParser()
    p.add_argument("--http", action="store_true")
    p.add_argument("--stdio", action="store_true")
    p.add_argument("command", nargs=argparse.REMAINDER)
    a = p.parse_args()
    cmd = [c for c in a.command if c != "--"]
    import fastmcp
    from fastmcp.server import create_proxy

    fastmcp.settings.log_level = "WARNING"
    proxy = create_proxy({"mcpServers": {"echo": {"command": cmd[0], "args": cmd[1:]}}}, name="fastmcp-proxy")
    if not a.http:
        proxy.run(transport="stdio", show_banner=False)
        return
    sock = socket.socket(socket.AF_INET, socket.SOCK_STREAM, socket.IPPROTO_TCP)
    sock.setsockopt(socket.IPPROTO_TCP, socket.TCP_NODELAY, 1)
    sock.bind(("127.0.0.1", 0))
    sock.listen(1024)
    print(f"listening on http://127.0.0.1:{sock.getsockname()[1]}/mcp", flush=True)
    proxy.run(transport="http", show_banner=False, host="127.0.0.1", port=sock.getsockname()[1],
              log_level="warning", sockets=[sock])


if __name__ == "__main__":
    sys.exit(main())
