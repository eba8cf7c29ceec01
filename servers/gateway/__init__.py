"""The gateway's MCP handlers: registry server, meta tools, catalog, listen relay, results, approvals, input."""
