"""Default address and path of ``toolhost serve`` (a leaf module, so the CLI imports it instantly)."""

DEFAULT_HOST = "127.0.0.1"
DEFAULT_PORT = 8765
MCP_PATH = "/mcp"

__all__ = ["DEFAULT_HOST", "DEFAULT_PORT", "MCP_PATH"]
