"""How the hybrid defaults were chosen: fusion method / weight and the "no tool fits" thresholds,
on DEV data only (the dev sets of ``bench/search_tune.py``: ToolLens train queries, a fixed 20 %
MetaTool dev slice, each over its own tools and over the 3,379-tool pool; subsampled with
``--every``). LiveMCPBench and the test queries are not used.

    python bench/search_fusion_tune.py [--every 4] [--grid fusion|abstain|all]

Abstention calibration: answerable = the dev queries on their own tools; unanswerable = ToolLens
dev queries against the MetaTool tools and MetaTool dev queries against the ToolLens tools (the
two catalogs do not overlap in purpose much; a query whose gold tool has a near twin in the other
catalog still counts as unanswerable, so the flagged share is a lower bound).
"""

from __future__ import annotations

import argparse
import sys
from pathlib import Path

from search_data import EVAL_DIR, summarize
from search_hybrid import build_index
from search_tune import dev_sets

from registry.search import Abstain, FusionParams


def run(index, queries, q2id) -> tuple[dict, list]:
    rankings, results = {}, []
    for qid, text in queries:
        res = index.search(text, limit=10)
        rankings[qid] = [q2id[h.tool.qualified_name] for h in res.hits]
        results.append(res)
    return rankings, results


def main(argv: list[str] | None = None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--eval-dir", type=Path, default=EVAL_DIR)
    ap.add_argument("--every", type=int, default=4, help="use every N-th dev query")
    ap.add_argument("--grid", default="all", choices=["fusion", "abstain", "all"])
    args = ap.parse_args(argv)
    sets = dev_sets(args.eval_dir)
    built = {}
    for name, ((records, q2id), queries, qrels) in sets.items():
        qs = queries[:: args.every]
        index, _ = build_index(records, dense=True, query_cache=100_000)
        built[name] = (index, q2id, qs, qrels)
    if args.grid in ("fusion", "all"):
        configs = [("bm25 only", None)]
        for w in (0.4, 0.5, 0.6, 0.65, 0.7, 0.8):
            configs.append((f"minmax w={w}", FusionParams(method="minmax", bm25_weight=w)))
        for w in (0.3, 0.5, 0.7):
            configs.append((f"rrf k=60 w={w}", FusionParams(method="rrf", bm25_weight=w)))
        configs.append(("dense only", FusionParams(method="minmax", bm25_weight=0.0)))
        for label, fusion in configs:
            res = {}
            for name, (index, q2id, qs, qrels) in built.items():
                emb = index.embedder
                if fusion is None:
                    index.embedder = None
                else:
                    index.fusion = fusion
                r, _ = run(index, qs, q2id)
                index.embedder = emb
                m = summarize(r, qrels, [0.0])
                res[name] = (m["r@5"], m["ndcg@10"])
            mean = sum(v[0] for v in res.values()) / len(res)
            print(f"{label:<20} " + " ".join(f"{k}={v[0]:.2f}/{v[1]:.2f}" for k, v in res.items())
                  + f"  mean R@5={mean:.2f}", flush=True)
    if args.grid in ("abstain", "all"):
        abstain_grid(built, sets, args.every)
    return 0


def abstain_grid(built: dict, sets: dict, every: int) -> None:
    # Answerable: own tools. Unanswerable: ToolLens queries on MetaTool tools and vice versa.
    ans = {}
    for name in ("tl", "mt"):
        index, q2id, qs, qrels = built[name]
        r, results = run(index, qs, q2id)
        ans[name] = (r, results, qrels)
    un = []
    for qset, tset in (("tl", "mt"), ("mt", "tl")):
        index, q2id, _, _ = built[tset]
        qs = built[qset][2]
        un.extend(run(index, qs, q2id)[1])
    print("abstain grid: flagged % of unanswerable, answerable R@5 lost (tl, mt)")
    rows = []
    for dmin in (0.3, 0.35, 0.4, 0.45, 0.5, 0.6, 1.01):
        for bmin in (0.1, 0.15, 0.2, 0.25, 0.3, 0.4, 0.5):
            for zmin in (3.0, 3.5, 4.0, 4.5, 5.0, 6.0, 99.0):
                a = Abstain(dense_min=dmin, bm25_min=bmin, z_min=zmin)

                def weak(res) -> bool:
                    return a.weak(res.bm25_confidence, res.dense_top, res.dense_z)

                flagged = 100 * sum(weak(x) for x in un) / len(un)
                lost = []
                for name, (r, results, qrels) in ans.items():
                    base = summarize(r, qrels, [0.0])["r@5"]
                    kept = {q: (lst if not weak(res) else []) for (q, lst), res in zip(r.items(), results)}
                    lost.append(base - summarize(kept, qrels, [0.0])["r@5"])
                rows.append((flagged, max(lost), dmin, bmin, zmin, lost))
    # Pareto front: most flagged for each bound on the worst R@5 loss.
    for bound in (0.5, 1.0, 1.5, 2.0, 3.0, 5.0, 10.0):
        ok = [r for r in rows if r[1] <= bound]
        if ok:
            best = max(ok, key=lambda r: r[0])
            print(f"max loss <= {bound:4}: flagged={best[0]:6.2f} dense_min={best[2]} bm25_min={best[3]} "
                  f"z_min={best[4]} lost tl={best[5][0]:.2f} mt={best[5][1]:.2f}", flush=True)


if __name__ == "__main__":
    sys.exit(main())
