"""Where a hybrid tool_search spends its time, stage by stage (one index, alternating rounds).

    python bench/search_latency_stages.py [--sizes 1000 10000] [--queries 200] [--rounds 3]

The 3,379 real tools pooled and padded to each size (as ``bench/search_latency.py``), USE +
MiniLM (the shipped three-way hybrid), ToolLens test queries, query-vector cache off. Each round
runs every query through each stage on its own, in the order a search runs them, then the whole
search; per stage the p50 / p95 of the searching thread's CPU time (``time.thread_time``) and of
wall time, in ms. "query embedding (both, as shipped)" is ``StackedEmbedder.embed_query`` (MiniLM
in a worker thread while USE runs in the caller's): its CPU column counts the caller's thread only,
the process column both threads. The whole search is timed the same way (process CPU: every
thread of this process, i.e. both embeddings). Load average printed at start and end: on a shared
machine compare the rows of one run, not runs with each other.
"""

from __future__ import annotations

import argparse
import os
import sys
import time

from search_data import load_queries, pad_tools, percentile, pool_tools, require_eval_data, to_records
from search_hybrid import build_index

from registry.search.abstain import dense_signals, rank_agreement
from registry.search.dense_query import cosines
from registry.search.format import format_result
from registry.search.fusion import anchor_lexical, fuse_parts, part_bounds, query_matrix
from registry.search.ranking import top_hits


class Clock:
    """Per stage: thread CPU, process CPU and wall time of each run (ms)."""

    def __init__(self) -> None:
        self.runs: dict[str, list[tuple[float, float, float]]] = {}

    def time(self, stage: str, fn, *args):
        c0, p0, t0 = time.thread_time(), time.process_time(), time.perf_counter()
        out = fn(*args)
        t1, c1, p1 = time.perf_counter(), time.thread_time(), time.process_time()
        self.runs.setdefault(stage, []).append(((c1 - c0) * 1e3, (p1 - p0) * 1e3, (t1 - t0) * 1e3))
        return out

    def rows(self, n: int) -> list[str]:
        out = []
        for stage, runs in self.runs.items():
            cpu, proc, wall = (list(x) for x in zip(*runs, strict=True))
            out.append(f"| {n} | {stage} | {percentile(cpu, 50):.3f} / {percentile(cpu, 95):.3f} | "
                       f"{percentile(proc, 50):.3f} / {percentile(proc, 95):.3f} | "
                       f"{percentile(wall, 50):.3f} / {percentile(wall, 95):.3f} |")
        return out


def stages(index, clock: Clock, q: str) -> None:
    """The stages of ``SearchIndex.search`` for a free-text query, each timed on its own."""
    st, emb = index._state, index.embedder
    tokens = clock.time("tokenize", index.tokenizer, q)
    stats = st.corpus.stats(None)
    exp, w = clock.time("expand", index.expansion.expand, tokens, lambda t: st.corpus.df(t, stats) > 0)
    slots, scores = clock.time("BM25", st.corpus.score, exp, stats, w)
    clock.time("query embedding: USE", emb.parts[0].embed_query, q)
    clock.time("query embedding: MiniLM", emb.parts[1].embed_query, q)
    qv = clock.time("query embedding (both, as shipped)", emb.embed_query, q)
    cap = len(st.records)
    dense_slots = index._dense.slots(st.has_vec, cap, None)
    mat = clock.time("cosines (10k × 896 when 10k)", cosines, st.vectors.matrix, cap, dense_slots, qv,
                     part_bounds(emb.part_dims))
    _qm, active = query_matrix(qv, emb.part_dims)
    cand = mat if len(dense_slots) == cap else mat[dense_slots]

    def signals():
        dense_signals(cand[:, 0])
        rank_agreement(slots, scores, dense_slots, cand[:, 0], mat[:, 0], st.has_vec)

    clock.time("dense signals", signals)
    f_slots, f_scores = clock.time("fusion", fuse_parts, slots, scores, dense_slots, mat, active, st.has_vec,
                                   index.parted_fusion, cand)
    if index.anchor is not None:
        f_slots, f_scores = clock.time("lexical anchor", anchor_lexical, slots, scores, f_slots, f_scores,
                                       index.anchor)
    hits = clock.time("top hits", top_hits, st.records, f_slots, f_scores, 10)
    clock.time("formatting", format_result, hits)


def main(argv: list[str] | None = None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--sizes", type=int, nargs="+", default=[1000, 10000])
    ap.add_argument("--queries", type=int, default=200)
    ap.add_argument("--rounds", type=int, default=3)
    args = ap.parse_args(argv)
    e = require_eval_data()
    pool = pool_tools(e)
    qs = [t for _q, t in load_queries(e / "toollens/normalized/queries_test.jsonl")]
    qs = qs[:: max(1, len(qs) // args.queries)][: args.queries]
    print(f"load average at start: {' / '.join(f'{x:.2f}' for x in os.getloadavg())} (1 / 5 / 15 min, "
          f"{os.cpu_count()} cores)")
    print("| tools | stage | thread CPU p50 / p95 ms | process CPU p50 / p95 ms | wall p50 / p95 ms |")
    print("|---|---|---|---|---|")
    for n in args.sizes:
        records, _ = to_records(pad_tools(pool, n))
        index, _info = build_index(records, dense=True, query_cache=0, reranker=None)
        clock = Clock()
        for _ in range(args.rounds):
            for q in qs:
                stages(index, clock, q)
                clock.time("whole search (hybrid)", index.search, q)
        print("\n".join(clock.rows(n)), flush=True)
    print(f"load average at end: {' / '.join(f'{x:.2f}' for x in os.getloadavg())}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
