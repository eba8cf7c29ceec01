"""The searches "no tool fits" is fitted and tested on: every query set over its own catalog, the
3,379-tool pool and every other catalog, with the run-time signals of each search.

    python bench/search_abstain_data.py [--lexical] [--out FILE]   # first run ~10 min, then cached

Query sets (``shared/eval-data``): DEV ``tl`` (ToolLens train, every 4th query) and ``mt``
(MetaTool single, slice ``sha256(id) % 5 == 0``: the dev sets of ``search_tune.py``); TEST
``tl-test`` (ToolLens test, every 2nd), ``mt-test`` (MetaTool single slices 3 and 4, every 8th),
``lm`` (LiveMCPBench, all 95) and ``zh`` / ``es`` (``bench/crosslang``: Chinese and Spanish
queries for Docker MCP registry tools) - these three answerable only (their servers touch every
other catalog's domains). Catalogs: ``tl`` (ToolLens, 464 tools), ``mt`` (MetaTool, 199), ``lm``
(LiveMCPBench, 527), ``docker`` (Docker MCP registry, 826) and ``pool`` (all of them deduplicated
plus ToolBench G3: 3,379).

A row per (query, catalog): the query's :data:`registry.search.FEATURES` and its R@5 (``-1``:
the catalog has none of its gold tools, so "no tool fits" is the right answer unless a tool there
fits anyway - ``bench/abstain_labels*.tsv`` measure how often). Every search goes through
``registry.search.SearchIndex`` as shipped (three-way fusion, no reranker), so the features are
the run-time ones. Query vectors are cached next to the bench vector cache; the rows are kept in
``--out`` (a pickle) and reused when it exists.
"""

from __future__ import annotations

import argparse
import pickle
import sys
from pathlib import Path

import numpy as np
from search_data import (
    EVAL_DIR,
    dedupe_tools,
    load_qrels,
    load_queries,
    load_tools,
    metatool_slice,
    recall_at,
    require_eval_data,
    to_records,
)
from search_hybrid import DEFAULT_CACHE, build_index

from registry.search import FEATURES

CROSSLANG = Path(__file__).resolve().parent / "crosslang"

OWN = {"tl": "tl", "mt": "mt", "tl-test": "tl", "mt-test": "mt", "lm": "lm", "zh": "docker", "es": "docker"}
DEV = ("tl", "mt")
TEST = ("tl-test", "mt-test", "lm", "zh", "es")
ANSWERABLE_ONLY = ("lm", "zh", "es")
CATALOGS = ("tl", "mt", "lm", "docker", "pool")
HONEST = "docker"
"""The catalog of another domain for ToolLens and MetaTool queries (consumer APIs and plugins vs
developer and infrastructure servers): 1 of 24 hand-labelled test queries has a fitting tool there."""


def query_sets(e: Path) -> dict[str, tuple[list[tuple[str, str]], dict[str, set[str]]]]:
    """``name -> (queries, qrels)`` for the dev and test sets above."""
    tl, mt, lm = e / "toollens/normalized", e / "metatool/normalized", e / "livemcpbench/normalized"
    mt_q = load_queries(mt / "queries_single.jsonl")
    mt_r = load_qrels(mt / "qrels_single.tsv")
    return {
        "tl": (load_queries(tl / "queries_train.jsonl")[::4], load_qrels(tl / "qrels_train.tsv")),
        "mt": ([q for q in mt_q if metatool_slice(q[0]) == 0], mt_r),
        "tl-test": (load_queries(tl / "queries_test.jsonl")[::2], load_qrels(tl / "qrels_test.tsv")),
        "mt-test": ([q for q in mt_q if metatool_slice(q[0]) in (3, 4)][::8], mt_r),
        "lm": (load_queries(lm / "queries.jsonl"), load_qrels(lm / "qrels.tsv")),
        "zh": (load_queries(CROSSLANG / "queries_zh.jsonl"), load_qrels(CROSSLANG / "qrels.tsv")),
        "es": (load_queries(CROSSLANG / "queries_es.jsonl"), load_qrels(CROSSLANG / "qrels.tsv")),
    }


def catalogs(e: Path) -> dict[str, list]:
    files = {
        "tl": [e / "toollens/normalized/tools.jsonl"],
        "mt": [e / "metatool/normalized/tools.jsonl"],
        "lm": [e / "livemcpbench/normalized/tools.jsonl"],
        "docker": [e / "docker-mcp-registry/normalized/tools.jsonl"],
    }
    g3 = e / "toollens/normalized/toolbench_g3_corpus_tools.jsonl"
    files["pool"] = [p for ps in files.values() for p in ps] + [g3]
    return {name: dedupe_tools([t for p in paths for t in load_tools(p)]) for name, paths in files.items()}


def collect(e: Path, dense: bool) -> dict:
    """``{"features": FEATURES, "rows": {(query set, catalog): (query ids, X, r5)}}``."""
    sets = query_sets(e)
    emb = None
    if dense:
        from search_rerank import CachedQueryEmbedder

        emb = CachedQueryEmbedder(DEFAULT_CACHE / "rerank-query-vectors.pkl")
    rows: dict = {}
    for cat, tools in catalogs(e).items():
        records, q2id = to_records(tools)
        index = build_index(records, dense=dense, query_cache=0, emb=emb, reranker=None)[0]
        ids = set(q2id.values())
        for qset, (queries, qrels) in sets.items():
            own = cat in (OWN[qset], "pool")
            if not own and qset in ANSWERABLE_ONLY:
                continue
            qids, xs, r5s = [], [], []
            for qid, text in queries:
                gold = qrels.get(qid, set())
                if not gold:
                    continue
                res = index.search(text, limit=5)
                f = res.signals.features()
                xs.append([f[name] for name in FEATURES])
                qids.append(qid)
                if own:
                    r5s.append(recall_at([q2id[h.tool.qualified_name] for h in res.hits], gold, 5))
                else:
                    assert not gold & ids, f"{qset} query {qid} has a gold tool in catalog {cat}"
                    r5s.append(-1.0)
            rows[(qset, cat)] = (qids, np.array(xs), np.array(r5s))
            print(f"  {qset} on {cat}: {len(qids)} searches", flush=True)
        if emb is not None:
            emb.save()
    return {"features": FEATURES, "spec": spec(sets), "rows": rows}


def spec(sets: dict) -> dict[str, int]:
    """What the rows were collected for (recollected when the query sets change)."""
    return {name: len(queries) for name, (queries, _qrels) in sets.items()}


def load(e: Path, out: Path, dense: bool = True) -> dict:
    """The cached rows (collected first when ``out`` is missing or has other features)."""
    if out.exists():
        data = pickle.loads(out.read_bytes())
        if data["features"] == FEATURES and data.get("spec") == spec(query_sets(e)):
            return data
    data = collect(e, dense)
    out.parent.mkdir(parents=True, exist_ok=True)
    out.write_bytes(pickle.dumps(data))
    return data


def default_out(dense: bool) -> Path:
    return DEFAULT_CACHE / ("abstain-rows.pkl" if dense else "abstain-rows-lexical.pkl")


def main(argv: list[str] | None = None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--eval-dir", type=Path, default=EVAL_DIR)
    ap.add_argument("--lexical", action="store_true", help="BM25-only search (no dense models)")
    ap.add_argument("--out", type=Path)
    args = ap.parse_args(argv)
    e = require_eval_data(args.eval_dir)
    data = load(e, args.out or default_out(not args.lexical), dense=not args.lexical)
    for (qset, cat), (qids, _x, r5) in data["rows"].items():
        kind = f"R@5 {100 * r5.mean():.1f}" if (r5 >= 0).all() else "unanswerable"
        print(f"{qset:8} on {cat:7}: {len(qids):5} queries, {kind}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
