"""Tool-search evaluation: ours vs the plain BM25 baseline vs FastMCP's BM25, in one run.

    python bench/search_eval.py --tools T.jsonl [T2.jsonl ...] --queries Q.jsonl --qrels R.tsv \
        [--pad N] [--max-queries M] [--fastmcp-python PATH|none] [--no-expansion]
        [--lexical] [--usage-queries Q --usage-qrels R] [--abstain-tools T.jsonl ...]
        [--no-vector-cache] [--vector-cache DIR]

Input: the format of ``shared/eval-data/*/normalized`` (tools ``{id, name, server, description,
input_schema}``, queries ``{id, text}``, qrels ``query_id tool_id score``). Several ``--tools``
files are pooled, deduplicated on (server, name). ``--pad N`` adds synthetic variants of the
real tools up to N tools (or keeps the first N when there are more): read latency, memory and
update time from such runs, not quality.

Systems (same queries, same metrics, top 10 each):

* ``ours``: ``registry.search.SearchIndex`` hybrid: BM25 (tokenizer, field document,
  inverted-index BM25Plus, query expansion with related words; ``--no-expansion`` turns that off)
  fused with the dense models (``host.search``); ``--lexical`` runs BM25 only;
* ``reranked``: ``ours`` with the shipped learned reranker over the fused top 50
  (``registry.search.rerank``; opt-in, ``TOOLHOST_SEARCH_RERANK=1``);
* ``today``: the two-way hybrid as it shipped before MiniLM (BM25 + USE, BM25 weight 0.6), when
  ``ours`` stacks MiniLM (``--models stacked``, the default);
* ``lexical``: the same index without the dense part (BM25 only), for comparison;
* ``ours warm`` / ``lexical warm`` (with ``--usage-queries Q --usage-qrels R``): the same, after
  feeding a usage memory (each Q query remembered for its gold tools in R);
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
from search_hybrid import DEFAULT_CACHE, build_index, embedder, usage_memory

from registry.search import FusionParams, SearchIndex
from registry.search.rerank import default_reranker
from registry.tool import ToolDefinition, build_record

TOP_K = 10
TODAY_FUSION = FusionParams(method="minmax", bm25_weight=0.6)
"""The two-way fusion as it shipped before MiniLM (the ``today`` system)."""
DEFAULT_FASTMCP_PYTHON = "/tmp/fastmcp-venv/bin/python"
RUNNER = Path(__file__).resolve().parent / "fastmcp_runner.py"


def run_ours(
    tools: list[EvalTool],
    queries: list[tuple[str, str]],
    *,
    measure: bool,
    expansion: bool = True,
    dense: bool = False,
    cache_dir: Path | None = DEFAULT_CACHE,
    usage: tuple[list[tuple[str, str]], dict[str, set[str]]] | None = None,
    abstain_tools: list[EvalTool] | None = None,
    honest_tools: list[EvalTool] | None = None,
    models: str = "stacked",
    fusion: FusionParams | None = None,
    reranker="default",
) -> tuple[dict, dict, dict]:
    """Rankings, latencies and extras (index memory, build/vector times, update times, the
    weak flag per query, and with ``abstain_tools`` the share of queries flagged weak there)."""
    records, qname_to_id = to_records(tools)
    extra: dict = {}
    if dense:
        embedder(models).embed(["load the model before measuring the index"])
    if measure:
        tracemalloc.start()
    index, info = build_index(records, dense=dense, cache_dir=cache_dir, expansion=expansion, query_cache=0,
                              models=models, fusion=fusion, reranker=reranker)
    extra.update(info)
    if measure:
        extra["index_mib"] = tracemalloc.get_traced_memory()[0] / 2**20
        tracemalloc.stop()
    if usage is not None:
        id_to_qname = {v: k for k, v in qname_to_id.items()}
        extra["memory_queries"] = usage_memory(index, usage[0], usage[1], id_to_qname)
    rankings, lat, weak = {}, [], {}
    for qid, text in queries:
        t0 = time.perf_counter()
        res = index.search(text, limit=TOP_K)
        lat.append((time.perf_counter() - t0) * 1000)
        rankings[qid] = [qname_to_id[h.tool.qualified_name] for h in res.hits]
        weak[qid] = res.weak
    extra["weak"] = weak
    if abstain_tools is not None:
        other, _ = build_index(to_records(abstain_tools)[0], dense=dense, cache_dir=cache_dir, expansion=expansion,
                               models=models)
        flagged = sum(other.search(text, limit=TOP_K).weak for _qid, text in queries)
        extra["unanswerable_flagged_pct"] = 100.0 * flagged / max(1, len(queries))
    if honest_tools is not None:
        other, _ = build_index(to_records(honest_tools)[0], dense=dense, cache_dir=cache_dir, expansion=expansion,
                               models=models)
        flagged = sum(other.search(text, limit=TOP_K).weak for _qid, text in queries)
        extra["unanswerable_honest_pct"] = 100.0 * flagged / max(1, len(queries))
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
    rankings = {qid: [qname_to_id[n] for n in names] for (qid, _), names in zip(queries, out["rankings"], strict=True)}
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
    ap.add_argument("--lexical", action="store_true", help="ours without the dense part")
    ap.add_argument("--usage-queries", help="queries JSONL fed to the usage memory before evaluation (warm)")
    ap.add_argument("--usage-qrels", help="qrels TSV of --usage-queries")
    ap.add_argument("--abstain-tools", nargs="+", help="tools these queries have no answer in (abstention)")
    ap.add_argument("--abstain-honest-tools", nargs="+",
                    help="tools of a domain these queries do not touch (abstention, honest protocol)")
    ap.add_argument("--vector-cache", type=Path, default=DEFAULT_CACHE, help="vector cache folder")
    ap.add_argument("--no-vector-cache", action="store_true", help="embed every tool (cold start without cache)")
    ap.add_argument("--skip-baselines", action="store_true", help="only ours (and lexical)")
    ap.add_argument("--models", choices=("stacked", "use"), default="stacked",
                    help="ours' dense models: USE + MiniLM (default; also runs 'today', USE alone) or USE alone")
    args = ap.parse_args(argv)
    if bool(args.usage_queries) != bool(args.usage_qrels):
        ap.error("--usage-queries and --usage-qrels go together")

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
    dense = not args.lexical
    cache = None if args.no_vector_cache else args.vector_cache
    abstain = dedupe_tools([t for p in args.abstain_tools for t in load_tools(p)]) if args.abstain_tools else None
    r_ours, t_ours, extra = run_ours(
        tools, queries, measure=True, expansion=not args.no_expansion, dense=dense, cache_dir=cache,
        abstain_tools=abstain, models=args.models,
        honest_tools=dedupe_tools([t for p in args.abstain_honest_tools for t in load_tools(p)])
        if args.abstain_honest_tools else None,
    )
    weak = extra.pop("weak")
    results["ours"] = summarize(r_ours, qrels, t_ours["lat"]) | extra
    # Answerable queries flagged "no tool fits": R@5 if their hits counted as nothing.
    kept = {q: ([] if weak.get(q) else r) for q, r in r_ours.items()}
    results["ours"]["weak_pct"] = 100.0 * sum(weak.values()) / max(1, len(weak))
    results["ours"]["r@5_abstaining"] = summarize(kept, qrels, [0.0])["r@5"]
    if dense and args.models == "stacked" and not args.skip_baselines:
        r_td, t_td, x_td = run_ours(tools, queries, measure=False, expansion=not args.no_expansion, dense=True,
                                    cache_dir=cache, models="use", fusion=TODAY_FUSION)
        x_td.pop("weak")
        results["today"] = summarize(r_td, qrels, t_td["lat"])
        r_rr, t_rr, x_rr = run_ours(tools, queries, measure=False, expansion=not args.no_expansion, dense=True,
                                    cache_dir=cache, reranker=default_reranker())
        x_rr.pop("weak")
        results["reranked"] = summarize(r_rr, qrels, t_rr["lat"])
    if dense:
        r_lex, t_lex, x_lex = run_ours(tools, queries, measure=False, expansion=not args.no_expansion)
        x_lex.pop("weak")
        results["lexical"] = summarize(r_lex, qrels, t_lex["lat"]) | {"build_s": x_lex["build_s"]}
    if args.usage_queries:
        usage = (load_queries(args.usage_queries), load_qrels(args.usage_qrels))
        for label, d in (("ours warm", dense), ("lexical warm", False)) if dense else (("ours warm", False),):
            r_w, t_w, x_w = run_ours(tools, queries, measure=False, expansion=not args.no_expansion, dense=d,
                                     cache_dir=cache, usage=usage, models=args.models)
            results[label] = summarize(r_w, qrels, t_w["lat"]) | {"memory_queries": x_w["memory_queries"]}
    if args.skip_baselines:
        results["baseline"] = summarize({q: [] for q, _ in queries}, qrels, [float("nan")])
        args.fastmcp_python = "none"
    else:
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
    print(f"{'system':<13} {'R@1':>6} {'R@5':>6} {'R@10':>6} {'NDCG@10':>8} {'p50 ms':>8} {'p95 ms':>8}")
    for name, m in results.items():
        print(
            f"{name:<13} {m['r@1']:6.2f} {m['r@5']:6.2f} {m['r@10']:6.2f} {m['ndcg@10']:8.2f} "
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
    if dense:
        per_1k = 1000 * ours["embed_s"] / ours["embedded"] if ours.get("embedded") else float("nan")
        print(
            f"vectors: {ours['embedded']} embedded ({per_1k:.2f} s per 1k tools), {ours['cached']} from cache, "
            f"fill {ours['vectors_s']:.2f} s; "
            f"cold start (BM25 build + vectors) {ours['build_s'] + ours['vectors_s']:.2f} s"
        )
    print(
        f"no tool fits: {ours['weak_pct']:.1f}% of these (answerable) queries flagged, R@5 counting flagged as "
        f"misses {ours['r@5_abstaining']:.2f} ({ours['r@5_abstaining'] - ours['r@5']:+.2f})"
        + (
            f"; unanswerable flagged {ours['unanswerable_flagged_pct']:.1f}%"
            if "unanswerable_flagged_pct" in ours
            else ""
        )
        + (f"; honest {ours['unanswerable_honest_pct']:.1f}%" if "unanswerable_honest_pct" in ours else "")
    )
    if fm_note:
        print(fm_note)
    keys = ("r@1", "r@5", "r@10", "ndcg@10", "p50_ms", "p95_ms")
    summary: dict = {name: {k: round(m[k], 4) for k in keys} for name, m in results.items()}
    summary["ours"].update(
        {k: round(ours[k], 3) for k in ("index_mib", "build_s", "connect_ms", "list_changed_ms", "disconnect_ms")}
    )
    summary["ours"].update(
        {
            k: round(ours[k], 3)
            for k in (
                "vectors_s",
                "embed_s",
                "embedded",
                "cached",
                "weak_pct",
                "r@5_abstaining",
                "unanswerable_flagged_pct",
                "unanswerable_honest_pct",
            )
            if k in ours
        }
    )
    summary["meta"] = {
        "tools": len(tools),
        "queries": len(queries),
        "pad": args.pad,
        "p50_speedup_vs_baseline": round(ratio, 2),
    }
    print(json.dumps(summary))
    return 0


if __name__ == "__main__":
    sys.exit(main())
