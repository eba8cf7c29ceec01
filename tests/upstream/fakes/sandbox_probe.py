"""A tiny MCP stdio server whose tools try what a sandbox must stop (MCPServer from the ``mcp`` SDK).

Tools (each answers with what happened, never raises):
``read {path}`` → the file's text or ``error: <OSError>``; ``write {path, text}`` → ``ok`` or
``error: …``; ``connect {host, port}`` → ``connected`` or ``error: …`` (a TCP connect, 3 s budget);
``listdir {path}`` → the sorted names joined by ``,`` or ``error: …``; ``connect_unix {path}`` → ``connected``
or ``error: …`` (a Unix-socket connect, as to PostgreSQL's or Docker's socket).
"""

from __future__ import annotations

import os
import socket

from mcp.server.mcpserver import MCPServer

mcp = MCPServer("sandbox-probe")


@mcp.tool()
def read(path: str) -> str:
    try:
        with open(path, encoding="utf-8") as fh:
            return fh.read()
    except OSError as err:
        return f"error: {err.strerror}"


@mcp.tool()
def write(path: str, text: str) -> str:
    try:
        with open(path, "w", encoding="utf-8") as fh:
            fh.write(text)
        return "ok"
    except OSError as err:
        return f"error: {err.strerror}"


@mcp.tool()
def connect(host: str, port: int) -> str:
    try:
        with socket.create_connection((host, port), timeout=3):
            return "connected"
    except OSError as err:
        return f"error: {err.strerror or err}"


@mcp.tool()
def connect_unix(path: str) -> str:
    try:
        with socket.socket(socket.AF_UNIX) as sock:
            sock.settimeout(3)
            sock.connect(path)
            return "connected"
    except OSError as err:
        return f"error: {err.strerror or err}"


@mcp.tool()
def listdir(path: str) -> str:
    try:
        return ",".join(sorted(os.listdir(path)))
    except OSError as err:
        return f"error: {err.strerror}"


if __name__ == "__main__":
    mcp.run("stdio")
