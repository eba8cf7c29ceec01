"""Would usage memory carry across query templates if it voted with neighbouring remembered
queries? A probe on DEV data only (ToolLens train queries; the split of
``bench/search_memory_tune.py``: memory = scenes of half A, evaluated = every ``--every``-th query of
half B (cross) or of A's other queries (shared)). Nothing here is wired into the index.

    python bench/search_memory_vote.py [--every 10] [--caps 32 256 0]

Two re-rankings of the hybrid search's best 100 (memory already fed, as in production):

* ``prior``: fused score + ``w`` × log1p(successful calls of the tool) / log1p(most calls), with
  every call counted (the store keeps 32 queries per tool, so it cannot tell this today);
* ``vote``: the ``k`` remembered queries closest to the query (cosine) vote for the tools they
  were remembered for (sum of cosines, over the largest vote) — fused score + ``w`` × vote; each
  tool keeps only its newest ``cap`` remembered queries (0: all).

Result (``--every 10``; R@5 cross / shared; hybrid with memory, no re-rank: 36.02 /
61.33): prior w 0.2: 37.58 / 65.66; vote k 100, w 0.6: cap 32 31.76 / 73.2, cap 256 40.16, all
44.35 / 84.4 (k 10, w 0.6: 43.27 / 89.60). Voting helps across templates only with the whole
history: what carries is which tools neighbouring tasks used, and 32 queries per tool hide it.
"""

from __future__ import annotations

import argparse
import collections
import math
import sys

import numpy as np
from search_data import load_qrels, load_queries, load_tools, require_eval_data, summarize, template_half, to_records
from search_hybrid import build_index, embedder, usage_memory


def main(argv: list[str] | None = None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--every", type=int, default=10)
    ap.add_argument("--caps", type=int, nargs="+", default=[32, 256, 0], help="queries kept per tool (0: all)")
    args = ap.parse_args(argv)
    tl = require_eval_data() / "toollens/normalized"
    recs, q2id = to_records(load_tools(tl / "tools.jsonl"))
    id2q = {v: k for k, v in q2id.items()}
    tr = load_qrels(tl / "qrels_train.tsv")
    tq = [(q, t) for q, t in load_queries(tl / "queries_train.jsonl") if q in tr]

    a = [x for x in tq if template_half(tr[x[0]]) == 0]
    b = [x for x in tq if template_half(tr[x[0]]) == 1]
    splits = {"cross": (a, b[:: args.every]), "shared": (a[::2], a[1::2][:: args.every])}
    idx, _ = build_index(recs, dense=True, query_cache=100_000)
    emb = embedder()
    for name, (mem, dev) in splits.items():
        idx.set_memory({})
        usage_memory(idx, mem, tr, id2q)
        hits = {q: idx.search(t, limit=100).hits for q, t in dev}

        def r5(bonus: dict[str, dict[str, float]], w: float, hits: dict = hits) -> float:
            ranked = {
                q: [
                    q2id[h.tool.qualified_name]
                    for h in sorted(hs, key=lambda h: -(h.score + w * bonus[q].get(h.tool.qualified_name, 0.0)))
                ][:10]
                for q, hs in hits.items()
            }
            return summarize(ranked, tr, [0])["r@5"]

        calls = collections.Counter(t for q, _ in mem for t in tr[q])
        top = math.log1p(max(calls.values()))
        prior = {id2q[t]: math.log1p(c) / top for t, c in calls.items()}
        print(
            f"{name}: no re-rank {r5({q: {} for q in hits}, 0.0):.2f}; prior "
            + ", ".join(f"w {w}: {r5({q: prior for q in hits}, w):.2f}" for w in (0.1, 0.2, 0.3)),
            flush=True,
        )
        mv = emb.embed([t for _q, t in mem])
        dv = emb.embed([t for _q, t in dev])
        for cap in args.caps:
            per: dict[str, list[str]] = collections.defaultdict(list)
            for q, t in mem:
                for g in tr[q]:
                    per[id2q[g]].append(t)
            keep = {(n, t) for n, ts in per.items() for t in (ts[-cap:] if cap else ts)}
            tools_of = [[id2q[g] for g in tr[q] if (id2q[g], t) in keep] for q, t in mem]
            for k in (10, 100):
                votes = {}
                for (q, _t), v in zip(dev, dv, strict=True):
                    sims = mv @ v
                    vote: collections.Counter[str] = collections.Counter()
                    for i in np.argpartition(-sims, k)[:k]:
                        for tn in tools_of[i]:
                            vote[tn] += float(sims[i])
                    m = max(vote.values()) if vote else 1.0
                    votes[q] = {tn: s / m for tn, s in vote.items()}
                print(
                    f"{name}: vote cap {cap or 'all'} k {k}: "
                    + ", ".join(f"w {w}: {r5(votes, w):.2f}" for w in (0.3, 0.6, 1.0)),
                    flush=True,
                )
    return 0


if __name__ == "__main__":
    sys.exit(main())
