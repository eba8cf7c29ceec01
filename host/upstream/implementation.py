"""toolhost's own name and version, from the installed package metadata.

Used as ``serverInfo`` towards downstream clients and as ``clientInfo`` towards upstream
servers (MCP spec: lifecycle, ``initialize`` ``clientInfo``/``serverInfo``).
"""

from __future__ import annotations

from functools import cache
from importlib.metadata import PackageNotFoundError, version

from mcp.types import Implementation

__all__ = ["TOOLHOST_NAME", "client_info", "toolhost_version"]

TOOLHOST_NAME = "toolhost"


@cache
def toolhost_version() -> str:
    """The installed ``toolhost`` distribution's version (``"0+unknown"`` when not installed)."""
    try:
        return version(TOOLHOST_NAME)
    except PackageNotFoundError:
        return "0+unknown"


def client_info() -> Implementation:
    """``Implementation(name="toolhost", version=<package version>)``."""
    return Implementation(name=TOOLHOST_NAME, version=toolhost_version())
