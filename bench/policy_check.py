"""Cost of permission checks: per call (µs) and a permission-filtered search at 10k tools.

Run: ``.venv/bin/python bench/policy_check.py [--tools 10000] [--repeat 5]``

Uses a temporary data folder (SQLite) and prints one table; ratios are against the baseline row
of each group (``AllowAll.evaluate`` for checks, unfiltered search for searches). Medians of
``--repeat`` runs.
"""

from __future__ import annotations

import argparse
import statistics
import sys
import tempfile
import time
from collections.abc import Callable
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))

from rich.console import Console
from rich.table import Table

from host.access import AccessControl
from registry.policy import AllowAll, Principal
from registry.search import SearchIndex
from registry.store import ToolRegistry
from registry.tool import Risk, ToolAnnotations, ToolDefinition, ToolOverrides, build_record

VERBS = ["get", "list", "create", "update", "delete", "cancel", "search", "export", "sync", "archive"]
NOUNS = ["order", "invoice", "customer", "ticket", "note", "file", "branch", "user", "report", "event"]


def make_registry(n: int) -> ToolRegistry:
    reg = ToolRegistry()
    per_server = 100
    risks = [Risk.READ, Risk.WRITE, Risk.DESTRUCTIVE]
    for s in range(max(1, n // per_server)):
        server = f"srv{s:03d}"
        recs = []
        for i in range(per_server):
            verb, noun = VERBS[i % 10], NOUNS[(i // 10 + s) % 10]
            name = f"{verb}_{noun}_{i}"
            recs.append(
                build_record(
                    server=server,
                    qualified_name=f"{server}__{name}",
                    definition=ToolDefinition(
                        name=name,
                        description=f"{verb.title()} a {noun} in system {server}.",
                        input_schema={"type": "object", "properties": {f"{noun}_id": {"type": "string"}}},
                        annotations=ToolAnnotations(),
                    ),
                    overrides=ToolOverrides(risk=risks[i % 3]),
                )
            )
        reg.replace_server(server, recs)
    return reg


def per_op_us(fn: Callable[[], object], ops: int, repeat: int) -> float:
    runs = []
    for _ in range(repeat):
        t = time.perf_counter()
        fn()
        runs.append((time.perf_counter() - t) / ops * 1e6)
    return statistics.median(runs)


def main() -> None:
    ap = argparse.ArgumentParser()
    ap.add_argument("--tools", type=int, default=10_000)
    ap.add_argument("--repeat", type=int, default=5)
    ns = ap.parse_args()
    reg = make_registry(ns.tools)
    tools = reg.tools()
    n = len(tools)
    with tempfile.TemporaryDirectory() as tmp:
        access = AccessControl.open(Path(tmp))
        access.users.add("alice")
        for pattern, risk, effect in [
            ("srv00*__get_*", "read", "allow"),
            ("srv01*__list_*", "read", "allow"),
            ("server:srv020", "write", "allow"),
            ("srv03*__*_order_*", "destructive", "allow"),
            ("srv04?__search_*", "read", "allow"),
            ("srv050__get_order_0", "read", "allow"),
            ("*__delete_*", "destructive", "deny"),
            ("srv09*", "write", "allow"),
        ]:
            access.grants.add("alice", pattern, max_risk=risk, effect=effect)
        access.roles.add("readers")
        access.grants.add("readers", "srv1*__get_*", kind="role", max_risk="read")
        access.users.assign_role("alice", "readers")
        access.watch(reg)  # pins every tool (trust on first use)
        alice = Principal("alice")
        req = access.for_request(alice)
        grants_only = req.policy.inner
        allow_all = AllowAll()
        visible_count = sum(req.visible(t) for t in tools)

        rows: list[tuple[str, str, float, float]] = []  # group, name, value, baseline

        base = per_op_us(lambda: [allow_all.evaluate(alice, t) for t in tools], n, ns.repeat)
        checks = [
            ("AllowAll.evaluate (baseline)", base),
            (
                "GrantPolicy.evaluate, cold (9 grants, 1 role)",
                per_op_us(
                    lambda: (grants_only.clear_memo(), [grants_only.evaluate(alice, t) for t in tools]), n, ns.repeat
                ),
            ),
            (
                "GrantPolicy.evaluate, memoized",
                per_op_us(lambda: [grants_only.evaluate(alice, t) for t in tools], n, ns.repeat),
            ),
            (
                "PinnedPolicy.evaluate (grants + pins)",
                per_op_us(lambda: [req.policy.evaluate(alice, t) for t in tools], n, ns.repeat),
            ),
            (
                "AccessControl.for_request (revision read, cache hit)",
                per_op_us(lambda: [access.for_request(alice) for _ in range(2000)], 2000, ns.repeat),
            ),
            (
                "per call: for_request + evaluate",
                per_op_us(lambda: [access.for_request(alice).evaluate(t) for t in tools[:2000]], 2000, ns.repeat),
            ),
            (
                "AccessControl.evaluate (live, per tool)",
                per_op_us(lambda: [access.evaluate(alice, t) for t in tools[:2000]], 2000, ns.repeat),
            ),
        ]
        for name, v in checks:
            rows.append(("check per call (µs)", name, v, base))

        def rebuild() -> None:
            access.grants.add("alice", "srv099__x", max_risk="read")
            access.for_request(alice)
            access.grants.remove("alice", "srv099__x")
            access.for_request(alice)

        rows.append(
            ("admin change (µs)", "grant add + policy rebuild (×2 incl. remove)", per_op_us(rebuild, 1, 3), base)
        )

        _, token = access.keys.create("alice")
        access.keys._verified.clear()
        first = per_op_us(lambda: access.authenticate(token), 1, 1)
        cached = per_op_us(lambda: [access.authenticate(token) for _ in range(500)], 500, ns.repeat)
        rows.append(("authenticate (µs)", "API key, first use (scrypt N=2^14)", first, cached))
        rows.append(("authenticate (µs)", "API key, cached digest + revocation read", cached, cached))

        index = SearchIndex()
        index.attach(reg)
        q = "get order"
        s_base = per_op_us(lambda: index.search(q, limit=10), 1, ns.repeat)
        filt = per_op_us(lambda: index.search(q, visible=access.for_request(alice).visible, limit=10), 1, ns.repeat)

        def search_as(r):
            return index.search(q, visible=r.visible, visible_key=r.visible_key, limit=10)

        search_as(req)  # warm the mask cache
        cached_s = per_op_us(lambda: search_as(access.for_request(alice)), 1, ns.repeat)
        live = per_op_us(
            lambda: index.search(q, visible=lambda t: access.evaluate(alice, t).visible, limit=10), 1, ns.repeat
        )
        manual = per_op_us(lambda: [t for t in reg.tools() if req.visible(t)], 1, ns.repeat)
        for name, v in [
            (f"search {n} tools, unfiltered (baseline)", s_base),
            (f"search {n} tools, filtered by policy ({visible_count} visible)", filt),
            ("search, filtered, mask cached by visible_key", cached_s),
            ("search, filtered via live AccessControl.evaluate per tool", live),
            (f"registry.tools() + predicate over {n} records (no search)", manual),
        ]:
            rows.append(("search (µs)", name, v, s_base))
        access.close()

    table = Table(title=f"permission cost at {n} tools (median of {ns.repeat}; python {sys.version.split()[0]})")
    for col in ("group", "measure", "µs", "ratio"):
        table.add_column(col, justify="right" if col in ("µs", "ratio") else "left")
    for group, name, v, b in rows:
        table.add_row(group, name, f"{v:,.2f}", f"{v / b:.2f}×")
    Console(width=140).print(table)


if __name__ == "__main__":
    main()
