"""Runs FastMCP's BM25 tool search (``fastmcp.server.transforms.search.BM25SearchTransform``) on
tools and queries given as JSON on stdin; prints ``{"rankings": [[names]], "latency_ms": [...],
"version": ...}`` on stdout. Run with the python of a venv that has ``fastmcp`` installed
(bench/search_eval.py does this; fastmcp is not a toolhost dependency).

Each query is timed around ``BM25SearchTransform._search(tools, query)``, the method its
``search_tools`` tool calls: that includes FastMCP's per-call catalog hash (its staleness check),
while the index itself is built once before timing starts.
"""

import asyncio
import json
import sys
import time


def main() -> None:
    from importlib.metadata import version

    from fastmcp.server.transforms.search import BM25SearchTransform
    from fastmcp.tools.base import Tool

    data = json.load(sys.stdin)
    tools = [
        Tool(name=t["name"], description=t["description"] or None, parameters=t["parameters"]) for t in data["tools"]
    ]
    transform = BM25SearchTransform(max_results=int(data["limit"]))

    async def run() -> tuple[list[list[str]], list[float]]:
        await transform._search(tools, "warm up")  # builds the index once
        rankings, lat = [], []
        for q in data["queries"]:
            t0 = time.perf_counter()
            found = await transform._search(tools, q)
            lat.append((time.perf_counter() - t0) * 1000)
            rankings.append([t.name for t in found])
        return rankings, lat

    rankings, lat = asyncio.run(run())
    json.dump({"rankings": rankings, "latency_ms": lat, "version": version("fastmcp")}, sys.stdout)


if __name__ == "__main__":
    main()
