"""Tool-search evaluation: ours vs the plain BM25 baseline vs FastMCP's BM25, in one run.

    python bench/search_eval.py --tools T.jsonl [T2.jsonl ...] --queries Q.jsonl --qrels R.tsv \
        [--pad N] [--max-queries M] [--fastmcp-python PATH|none] [--no-expansion]

Input: the format of ``shared/eval-data/*/normalized`` (tools ``{id, name, server, description,
input_schema}``, queries ``{id, text}``, qrels ``query_id tool_id score``). Several ``--tools``
files are pooled, deduplicated on (server, name). ``--pad N`` adds synthetic variants of the
real tools up to N tools (or keeps the first N when there are more): read latency, memory and
update time from such runs, not quality.

Systems (same queries, same metrics, top 10 each):

* ``ours``: ``registry.search.SearchIndex`` (tokenizer, field document, inverted-index BM25Plus,
  query expansion with related words; ``--no-expansion`` turns that off);
* ``baseline``: rank-bm25 ``BM25Okapi`` with defaults over lowercase ``[a-z0-9]+`` tokens after
  camelCase splitting of name + server + description + parameter names/descriptions, scored with
  ``get_scores`` over the whole corpus (the README's reference setup);
* ``fastmcp``: FastMCP's ``BM25SearchTransform`` run by ``bench/fastmcp_runner.py`` under another
  venv's python (default ``/tmp/fastmcp-venv/bin/python`` when it exists; ``none`` skips it).

Metrics: R@k = |gold ∩ top-k| / |gold| averaged over queries with gold; NDCG@10 with binary gains
and ideal DCG over min(|gold|, 10); p50/p95 per-query latency in ms (one thread). The index's
memory (tracemalloc, MiB) and the time to re-index one 500-tool server are measured for ours.
The LAST line printed is one JSON object with every number.
"""

from __future__ import annotations

import argparse
import json
import subprocess
import sys
import time
import tracemalloc
from pathlib import Path

import numpy as np
from rank_bm25 import BM25Okapi

from search_data import (
    EvalTool,
    baseline_text,
    baseline_tokenize,
    dedupe_tools,
    load_qrels,
    load_queries,
    load_tools,
    pad_tools,
    summarize,
    to_records,
)

from registry.search import SearchIndex
from registry.tool import ToolDefinition, build_record

TOP_K = 10
DEFAULT_FASTMCP_PYTHON = "/tmp/fastmcp-venv/bin/python"
RUNNER = Path(__file__).resolve().parent / "fastmcp_runner.py"


def run_ours(
    tools: list[EvalTool], queries: list[tuple[str, str]], *, measure: bool, expansion: bool = True
) -> tuple[dict, dict, dict]:
    records, qname_to_id = to_records(tools)
    by_server: dict[str, list] = {}
    for r in records:
        by_server.setdefault(r.server, []).append(r)
    index = SearchIndex() if expansion else SearchIndex(expansion=None)
    extra: dict = {}
    if measure:
        tracemalloc.start()
    t0 = time.perf_counter()
    index.replace_servers(by_server)
    extra["build_s"] = time.perf_counter() - t0
    if measure:
        extra["index_mib"] = tracemalloc.get_traced_memory()[0] / 2**20
        tracemalloc.stop()
    rankings, lat = {}, []
    for qid, text in queries:
        t0 = time.perf_counter()
        res = index.search(text, limit=TOP_K)
        lat.append((time.perf_counter() - t0) * 1000)
        rankings[qid] = [qname_to_id[h.tool.qualified_name] for h in res.hits]
    if measure:
        extra.update(update_times(index, records))
    return rankings, {"lat": lat}, extra


def update_times(index: SearchIndex, records: list) -> dict:
    """ms to connect, change (list_changed) and disconnect one 500-tool server."""
    src = records[:500]
    server = "bench-update-server"

    def make(tag: str) -> list:
        return [
            build_record(
                server=server,
                qualified_name=f"bench-update__{tag}{i}",
                definition=ToolDefinition(
                    name=f"{tag}{i}_{r.original_name}", description=r.description, input_schema=r.input_schema
                ),
            )
            for i, r in enumerate(src)
        ]

    first, second = make("a"), make("b")
    out = {}
    for label, recs in (("connect_ms", first), ("list_changed_ms", second), ("disconnect_ms", ())):
        t0 = time.perf_counter()
        index.replace_server(server, recs)
        out[label] = (time.perf_counter() - t0) * 1000
    return out


def run_baseline(tools: list[EvalTool], queries: list[tuple[str, str]]) -> tuple[dict, dict]:
    bm = BM25Okapi([baseline_tokenize(baseline_text(t)) for t in tools])
    ids = [t.id for t in tools]
    rankings, lat = {}, []
    for qid, text in queries:
        t0 = time.perf_counter()
        scores = bm.get_scores(baseline_tokenize(text))
        top = np.argsort(-scores, kind="stable")[:TOP_K]
        lat.append((time.perf_counter() - t0) * 1000)
        rankings[qid] = [ids[i] for i in top if scores[i] > 0]
    return rankings, {"lat": lat}


def run_fastmcp(python: str, tools: list[EvalTool], queries: list[tuple[str, str]]) -> tuple[dict, dict] | str:
    records, qname_to_id = to_records(tools)
    payload = {
        "limit": TOP_K,
        "tools": [
            {"name": r.qualified_name, "description": r.description, "parameters": r.input_schema} for r in records
        ],
        "queries": [text for _, text in queries],
    }
    proc = subprocess.run(
        [python, str(RUNNER)], input=json.dumps(payload), capture_output=True, text=True, cwd="/", check=False
    )
    if proc.returncode != 0:
        return f"fastmcp runner failed (exit {proc.returncode}): {proc.stderr.strip().splitlines()[-1:]}"
    out = json.loads(proc.stdout)
    rankings = {qid: [qname_to_id[n] for n in names] for (qid, _), names in zip(queries, out["rankings"])}
    return rankings, {"lat": out["latency_ms"], "version": out["version"]}


def main(argv: list[str] | None = None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--tools", nargs="+", required=True, help="tools JSONL file(s); several are pooled")
    ap.add_argument("--queries", required=True, help="queries JSONL")
    ap.add_argument("--qrels", required=True, help="qrels TSV")
    ap.add_argument("--pad", type=int, default=0, help="pad the corpus to N tools (latency/memory only)")
    ap.add_argument("--max-queries", type=int, default=0, help="evaluate an evenly spaced subset of M queries")
    ap.add_argument("--fastmcp-python", default=DEFAULT_FASTMCP_PYTHON, help="python with fastmcp, or 'none'")
    ap.add_argument("--no-expansion", action="store_true", help="ours without query expansion (plain BM25Plus)")
    ap.add_argument("--label", default="", help="name printed in the table header")
    args = ap.parse_args(argv)

    tools: list[EvalTool] = []
    for path in args.tools:
        tools.extend(load_tools(path))
    tools = dedupe_tools(tools)
    if args.pad:
        tools = pad_tools(tools, args.pad)  # fewer real tools than --pad: the first N are kept
    qrels = load_qrels(args.qrels)
    queries = [(q, t) for q, t in load_queries(args.queries) if qrels.get(q)]
    if args.max_queries and len(queries) > args.max_queries:
        step = len(queries) / args.max_queries
        queries = [queries[int(i * step)] for i in range(args.max_queries)]

    results: dict[str, dict] = {}
    r_ours, t_ours, extra = run_ours(tools, queries, measure=True, expansion=not args.no_expansion)
    results["ours"] = summarize(r_ours, qrels, t_ours["lat"]) | extra
    r_base, t_base = run_baseline(tools, queries)
    results["baseline"] = summarize(r_base, qrels, t_base["lat"])
    fm_note = ""
    if args.fastmcp_python != "none" and Path(args.fastmcp_python).exists():
        fm = run_fastmcp(args.fastmcp_python, tools, queries)
        if isinstance(fm, str):
            fm_note = fm
        else:
            results["fastmcp"] = summarize(fm[0], qrels, fm[1]["lat"]) | {"version": fm[1]["version"]}
    else:
        fm_note = f"fastmcp skipped (no python at {args.fastmcp_python!r})"

    head = args.label or ", ".join(Path(p).parent.parent.name + "/" + Path(p).name for p in args.tools)
    print(f"# {head}: {len(tools)} tools, {len(queries)} queries" + (f" (padded to {args.pad})" if args.pad else ""))
    print(f"{'system':<10} {'R@1':>6} {'R@5':>6} {'R@10':>6} {'NDCG@10':>8} {'p50 ms':>8} {'p95 ms':>8}")
    for name, m in results.items():
        print(
            f"{name:<10} {m['r@1']:6.2f} {m['r@5']:6.2f} {m['r@10']:6.2f} {m['ndcg@10']:8.2f} "
            f"{m['p50_ms']:8.3f} {m['p95_ms']:8.3f}"
        )
    base = results["baseline"]
    ours = results["ours"]
    ratio = base["p50_ms"] / ours["p50_ms"] if ours["p50_ms"] else float("inf")
    print(
        f"ours vs baseline: R@5 {ours['r@5'] - base['r@5']:+.2f}, NDCG@10 {ours['ndcg@10'] - base['ndcg@10']:+.2f}, "
        f"p50 {ratio:.1f}x faster; index {ours['index_mib']:.1f} MiB, build {ours['build_s']:.2f} s (traced), "
        f"re-index 500-tool server: connect {ours['connect_ms']:.0f} ms, list_changed "
        f"{ours['list_changed_ms']:.0f} ms, disconnect {ours['disconnect_ms']:.0f} ms"
    )
    if fm_note:
        print(fm_note)
    keys = ("r@1", "r@5", "r@10", "ndcg@10", "p50_ms", "p95_ms")
    summary: dict = {name: {k: round(m[k], 4) for k in keys} for name, m in results.items()}
    summary["ours"].update({k: round(ours[k], 3) for k in ("index_mib", "build_s", "connect_ms", "list_changed_ms", "disconnect_ms")})
    summary["meta"] = {"tools": len(tools), "queries": len(queries), "pad": args.pad, "p50_speedup_vs_baseline": round(ratio, 2)}
    print(json.dumps(summary))
    return 0


if __name__ == "__main__":
    sys.exit(main())
