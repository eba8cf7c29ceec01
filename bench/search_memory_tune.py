"""How the usage-memory weights were chosen, on DEV data only (ToolLens train queries; the test
queries are not used).

    python bench/search_memory_tune.py [--every 10]

Scenes (gold tool sets) of the train queries are split in two halves A/B by a hash:
``cross`` remembers half A and evaluates every ``--every``-th query of half B (no shared
template: the cross-template protocol of ``bench/search_suite.py`` on dev data); ``shared``
remembers every other query of half A and evaluates every ``--every``-th of the rest (shared
templates: the optimistic case). Prints R@5 per (lexical memory weight, dense memory factor) for
BM25-only and hybrid search.

Result (``--every 10``; cross / shared R@5): lexical without memory 33.66 / 36.45, with
memory 0.3 31.66 / 57.40 (kept for BM25-only search); hybrid without memory 34.12 / 35.64, lexical
memory 0.3 34.18 / 49.19 (the old default), dense memory 0.8 / 0.9 / 1.0 / 1.1 alone 35.91 / 60.60,
36.01 / 61.25, 36.02 / 61.33, 35.99 / 61.33, lexical 0.3 + dense 0.8 / 1.0 33.85 / 63.55, 31.89 /
63.51. Chosen for hybrid: dense 1.0, lexical 0 (``SearchIndex(memory_dense=1.0,
hybrid_memory_weight=0.0)``).
"""

from __future__ import annotations

import argparse
import sys

from search_data import load_qrels, load_queries, load_tools, require_eval_data, summarize, template_half, to_records
from search_hybrid import build_index, usage_memory


def main(argv: list[str] | None = None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--every", type=int, default=10)
    args = ap.parse_args(argv)
    tl = require_eval_data() / "toollens/normalized"
    recs, q2id = to_records(load_tools(tl / "tools.jsonl"))
    id2q = {v: k for k, v in q2id.items()}
    tr = load_qrels(tl / "qrels_train.tsv")
    tq = [(q, t) for q, t in load_queries(tl / "queries_train.jsonl") if q in tr]

    a = [x for x in tq if template_half(tr[x[0]]) == 0]
    b = [x for x in tq if template_half(tr[x[0]]) == 1]
    splits = {"cross": (a, b[:: args.every]), "shared": (a[::2], a[1::2][:: args.every])}
    for dense in (False, True):
        idx, _ = build_index(recs, dense=dense, query_cache=100_000)
        grid = [(0.0, 0.0), (0.3, 0.0)] + ([(w, d) for w in (0.0, 0.3) for d in (0.8, 0.9, 1.0, 1.1)] if dense else [])
        for w, d in grid:
            idx.memory_weight, idx.memory_dense = w, d
            out = []
            for name, (mem, dev) in splits.items():
                idx.set_memory({})
                if w or d:
                    usage_memory(idx, mem, tr, id2q)
                r = {q: [q2id[x.tool.qualified_name] for x in idx.search(t, limit=10).hits] for q, t in dev}
                out.append(f"{name}={summarize(r, tr, [0])['r@5']:.2f}")
            print(
                f"{'hybrid' if dense else 'lexical':<8} memory_weight={w} memory_dense={d}: " + " ".join(out),
                flush=True,
            )
    return 0


if __name__ == "__main__":
    sys.exit(main())
