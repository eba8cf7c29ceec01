"""How the hybrid fusion defaults were chosen: fusion method and weight, on DEV data only (the
dev sets of ``bench/search_tune.py``: ToolLens train queries, a fixed 20 % MetaTool dev slice,
each over its own tools and over the 3,379-tool pool; subsampled with ``--every``). LiveMCPBench and the test queries
are not used.

    python bench/search_fusion_tune.py [--every 4]

The "no tool fits" model is fitted by ``bench/search_abstain_tune.py``.
"""

from __future__ import annotations

import argparse
import sys
from pathlib import Path

from search_data import EVAL_DIR, require_eval_data, summarize
from search_hybrid import build_index
from search_tune import dev_sets

from registry.search import FusionParams


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
    args = ap.parse_args(argv)
    sets = dev_sets(require_eval_data(args.eval_dir))
    built = {}
    for name, ((records, q2id), queries, qrels) in sets.items():
        qs = queries[:: args.every]
        index, _ = build_index(records, dense=True, query_cache=100_000)
        built[name] = (index, q2id, qs, qrels)
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
        print(
            f"{label:<20} " + " ".join(f"{k}={v[0]:.2f}/{v[1]:.2f}" for k, v in res.items()) + f"  mean R@5={mean:.2f}",
            flush=True,
        )
    return 0


if __name__ == "__main__":
    sys.exit(main())
