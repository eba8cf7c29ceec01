"""tool_search latency, lexical vs hybrid, in alternating rounds on one index.

    python bench/search_latency.py [--sizes 1000 10000 100000] [--queries 200] [--rounds 3]
                                   [--visible-share 0.05]

The 3,379 real tools pooled, padded with synthetic variants to each size (``search_data.pad_tools``);
ToolLens test queries. Each round runs every query lexically (the index without its embedder)
and then hybrid (query embedding included: the query-vector cache is off; as shipped, then with the opt-in
learned reranker), so all see the same machine load; the reranking stage's own cost is the difference of
the two query-vector-cached columns. Also prints the vectors' memory (float32 matrix) and how long giving the index its
vectors took (from the bench vector cache in ``$TMPDIR/toolhost-bench-vectors``; the first run
at a size embeds and fills it). Timings on a shared machine are noisy: compare the two columns
of one run, not runs with each other. ``--models stacked`` (default) times the three-way hybrid
(USE + MiniLM query embeddings) and, in the same rounds, the two-way USE hybrid. From
``--random-vectors-from`` tools on (default 20k), tools get random unit vectors instead of being
embedded (embedding 100k tools takes minutes; the search cost does not depend on the vectors'
values); the CPU columns (this thread's CPU time per search) are less sensitive to other processes
than wall time. ``--visible-share F`` searches as a caller who may see only a share F of the tools
(a fixed pseudo-random subset; its mask cached by ``visible_key`` as the gateway does): hidden tools
are neither scored lexically nor densely.
"""

from __future__ import annotations

import argparse
import os
import sys
import time
import zlib

from search_data import load_queries, pad_tools, percentile, pool_tools, require_eval_data, to_records
from search_hybrid import build_index

from registry.search.rerank import default_reranker


def main(argv: list[str] | None = None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--sizes", type=int, nargs="+", default=[1000, 10000, 100000])
    ap.add_argument("--queries", type=int, default=200)
    ap.add_argument("--rounds", type=int, default=3)
    ap.add_argument("--random-vectors-from", type=int, default=20_000,
                    help="from this size on, tools get random unit vectors instead of embeddings (latency only)")
    ap.add_argument("--visible-share", type=float, default=1.0,
                    help="search as a caller who may see only this share of the tools (default: all)")
    ap.add_argument("--models", choices=("stacked", "use"), default="stacked",
                    help="hybrid's dense models: USE + MiniLM (default; the two-way USE hybrid runs beside it) or USE")
    args = ap.parse_args(argv)
    visible = None
    if args.visible_share < 1.0:
        cut = int(args.visible_share * 2**32)

        def visible(rec) -> bool:  # a fixed pseudo-random subset of the tools
            return zlib.crc32(rec.qualified_name.encode()) < cut

    kw = {"visible": visible, "visible_key": "bench" if visible is not None else None}
    e = require_eval_data()
    pool = pool_tools(e)
    qs = [t for _q, t in load_queries(e / "toollens/normalized/queries_test.jsonl")]
    qs = qs[:: max(1, len(qs) // args.queries)][: args.queries]
    if visible is not None:
        print(f"caller may see {args.visible_share:.0%} of the tools")
    print(f"load average at start: {' / '.join(f'{x:.2f}' for x in os.getloadavg())} (1 / 5 / 15 min, "
          f"{os.cpu_count()} cores)")
    print("| tools | lexical p50 / p95 ms | hybrid p50 / p95 ms | hybrid / lexical p50 | lexical / hybrid CPU p50 ms "
          "| hybrid + reranker p50 / p95 ms | query vector cached, p50 ms with / without reranker | vectors MiB "
          "| vectors load s | two-way (USE) hybrid p50 / p95 ms, "
          "CPU p50 |")
    print("|---|---|---|---|---|---|---|---|---|---|---|")
    for n in args.sizes:
        records, _ = to_records(pad_tools(pool, n))
        rnd = n >= args.random_vectors_from
        index, info = build_index(records, dense=True, query_cache=0, random_vectors=rnd, models=args.models)
        two = build_index(records, dense=True, query_cache=0, random_vectors=rnd, models="use")[0] \
            if args.models == "stacked" else None
        emb = index.embedder
        lex: list[float] = []
        hyb: list[float] = []
        lex_cpu: list[float] = []
        hyb_cpu: list[float] = []
        two_ms: list[float] = []
        two_cpu: list[float] = []
        fus: list[float] = []
        reranker = default_reranker()
        for _ in range(args.rounds):
            index.embedder = None
            for q in qs:
                c0, t0 = time.thread_time(), time.perf_counter()
                index.search(q, limit=10, **kw)
                lex.append((time.perf_counter() - t0) * 1000)
                lex_cpu.append((time.thread_time() - c0) * 1000)
            index.embedder = emb
            for q in qs:
                c0, t0 = time.thread_time(), time.perf_counter()
                index.search(q, limit=10, **kw)
                hyb.append((time.perf_counter() - t0) * 1000)
                hyb_cpu.append((time.thread_time() - c0) * 1000)
            index.reranker = reranker  # the same hybrid with the (opt-in) reranking stage
            for q in qs:
                t0 = time.perf_counter()
                index.search(q, limit=10, **kw)
                fus.append((time.perf_counter() - t0) * 1000)
            index.reranker = None
            for q in qs if two is not None else ():
                c0, t0 = time.thread_time(), time.perf_counter()
                two.search(q, limit=10, **kw)
                two_ms.append((time.perf_counter() - t0) * 1000)
                two_cpu.append((time.thread_time() - c0) * 1000)
        # The same searches with their query vectors cached (agents repeat searches): the cost of
        # the dense scoring and fusion without the query embedding.
        index.query_cache_size = len(qs) + 1
        for q in qs:
            index.search(q, limit=10, **kw)
        cached: list[float] = []
        cached_fused: list[float] = []
        for _ in range(args.rounds):
            index.reranker = reranker
            for q in qs:
                t0 = time.perf_counter()
                index.search(q, limit=10, **kw)
                cached.append((time.perf_counter() - t0) * 1000)
            index.reranker = None
            for q in qs:
                t0 = time.perf_counter()
                index.search(q, limit=10, **kw)
                cached_fused.append((time.perf_counter() - t0) * 1000)
        mib = index._state.vectors.matrix.nbytes / 2**20 if index._state.vectors is not None else 0.0
        lp, hp = percentile(lex, 50), percentile(hyb, 50)
        label = f"{n} (random vectors)" if info.get("random") else str(n)
        print(f"| {label} | {lp:.3f} / {percentile(lex, 95):.3f} | {hp:.3f} / {percentile(hyb, 95):.3f} | "
              f"{hp / lp:.1f}x | {percentile(lex_cpu, 50):.3f} / {percentile(hyb_cpu, 50):.3f} | "
              f"{percentile(fus, 50):.3f} / {percentile(fus, 95):.3f} | "
              f"{percentile(cached, 50):.3f} / {percentile(cached_fused, 50):.3f} | {mib:.1f} | "
              f"{info['vectors_s']:.2f} | "
              + (f"{percentile(two_ms, 50):.3f} / {percentile(two_ms, 95):.3f}, {percentile(two_cpu, 50):.3f} |"
                 if two_ms else "– |"), flush=True)
    print(f"load average at end: {' / '.join(f'{x:.2f}' for x in os.getloadavg())}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
