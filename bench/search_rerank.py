"""tool_search's learned reranker: collect candidate features, train LightGBM LambdaRank on data
we may ship, export the trees for ``registry.search.rerank``, and evaluate with bootstrap intervals.

    python bench/search_rerank.py collect [--only WORD ...]   # features of every set (cached in --work)
    python bench/search_rerank.py train [--no-synthetic]      # -> registry/search/data/rerank.npz
                                                              #    (the defaults give the shipped trees)
    python bench/search_rerank.py eval [--model PATH]         # dev and test tables, 95 % intervals

Training needs LightGBM (``pip install lightgbm``: a training-only dependency, never needed to
run the reranker). Seeds are fixed; retraining on the same eval data gives the same trees.

Data (``shared/eval-data``; licences in each ``SOURCE.md``). The reranker is TRAINED only on
permissively licensed data:

* MetaTool (MIT): single-tool queries whose ``sha256(query id) % 5 == 1`` over MetaTool's tools
  (cold), over the shippable pool (MetaTool + LiveMCPBench + Docker MCP registry tools: candidates
  only, no LiveMCPBench query), and warm (usage memory from the ``% 5 == 2`` slice);
* synthetic queries written from the tool definitions of the shippable pool (Docker MCP registry,
  LiveMCPBench's tools, MetaTool's tools): the first sentence of each description, lowercased,
  without the words of the tool's own name and with every third remaining word dropped (seeded),
  and for neighbouring tools of one server a two-tool query ("<half of A's words> and <half of
  B's>", both gold), over the shippable pool; ``--no-synthetic`` leaves them out. The features
  name no tool, so no tool's identity can be learned from these (LiveMCPBench's *queries* are never used).

DEV sets (the keep/drop decision; ToolLens, which states no licence, is only evaluated): the dev
sets of ``bench/search_tune.py`` (ToolLens train every 8th query, MetaTool ``% 5 == 0`` every 2nd),
each on its own tools and on the 3,379-tool pool, and ToolLens warm: those ToolLens queries of one
template half with a usage memory from every 2nd train query of the other half. TEST sets
(reported): ToolLens test, LiveMCPBench, MetaTool single ``% 5 in {3, 4}`` (every 8th), MetaTool
multi, the cross-language sets, own tools and pooled, and ToolLens warm (memory: every 4th train query → test).

Every search runs through ``registry.search.SearchIndex`` with a recording reranker (features
exactly as at run time; the recorder keeps the fused order). Query vectors are cached on disk next
to the bench vector cache (``search_hybrid.DEFAULT_CACHE``), so reruns embed nothing.
"""

from __future__ import annotations

import argparse
import json
import pickle
import random
import re
import sys
import time
from dataclasses import replace
from pathlib import Path

import numpy as np
from search_data import (
    EVAL_DIR,
    dedupe_tools,
    load_qrels,
    load_queries,
    load_tools,
    metatool_slice,
    ndcg_at,
    recall_at,
    require_eval_data,
    template_half,
    to_records,
)
from search_eval import run_baseline
from search_hybrid import DEFAULT_CACHE, build_index, usage_memory

from host.search import StackedEmbedder, UseEmbedder
from registry.search.rerank import RERANK_FEATURES, TreeReranker, load_tree_reranker

HERE = Path(__file__).resolve().parent
MODEL_PATH = HERE.parent / "registry" / "search" / "data" / "rerank.npz"
SEED = 7
SHIPPED_DROP = ("name_overlap", "server_overlap", "param_overlap", "description_overlap", "bm25_rel", "log1p_bm25_rank")
"""Features the shipped trees may not split on: the word-overlap ones learn MetaTool's and the
synthetic queries' wording and cost ToolLens 1.2 R@5 on dev (``bench/README.md``)."""


class CachedQueryEmbedder(StackedEmbedder):
    """USE + MiniLM as ``host.search`` stacks them, with query vectors kept in a disk file."""

    def __init__(self, path: Path) -> None:
        from host.search.minilm import MiniLmEmbedder

        super().__init__([UseEmbedder(), MiniLmEmbedder()], english_only=[False, True])
        self.path = path
        self.cache: dict[str, np.ndarray] = pickle.loads(path.read_bytes()) if path.exists() else {}
        self.new = 0

    def embed_query(self, text: str) -> np.ndarray:
        vec = self.cache.get(text)
        if vec is None:
            vec = self.cache[text] = super().embed_query(text)
            self.new += 1
        return vec

    def save(self) -> None:
        if self.new:
            self.path.parent.mkdir(parents=True, exist_ok=True)
            self.path.write_bytes(pickle.dumps(self.cache))
            self.new = 0


class Recorder:
    """A reranker that keeps each search's candidates and features and leaves the fused order."""

    n_parts = 2

    def __init__(self) -> None:
        self.last: tuple[list[str], np.ndarray] | None = None

    def score(self, names, features):
        self.last = (list(names), np.array(features))
        return np.asarray(features)[:, 0]


def _first_sentence_words(t, rng: random.Random) -> list[str]:
    first = re.split(r"(?<=[.!?])\s|\n", t.description.strip(), maxsplit=1)[0]
    name_words = set(re.findall(r"[a-z0-9]+", re.sub(r"([a-z])([A-Z])", r"\1 \2", t.name).lower()))
    words = [w for w in re.findall(r"[A-Za-z0-9']+", first.lower()) if w not in name_words]
    offset = rng.randrange(3)
    return [w for i, w in enumerate(words) if (i + offset) % 3 != 2]


def synthetic_queries(tools) -> tuple[list[tuple[str, str]], dict[str, set[str]]]:
    """Queries written from tool definitions (see the module docstring): one per tool, and one per
    pair of neighbouring tools of a server ("<A's words> and <B's words>", both gold)."""
    rng = random.Random(SEED)
    qs, qrels = [], {}
    by_server: dict[str, list] = {}
    for t in tools:
        words = _first_sentence_words(t, rng)
        if len(words) < 3 or len(words) > 30:
            continue
        qid = f"syn::{t.id}"
        qs.append((qid, " ".join(words)))
        qrels[qid] = {t.id}
        by_server.setdefault(t.server or t.name, []).append((t, words))
    for group in by_server.values():
        for (a, wa), (b, wb) in zip(group[::2], group[1::2], strict=False):
            qid = f"syn2::{a.id}::{b.id}"
            qs.append((qid, " ".join(wa[: max(3, len(wa) // 2)] + ["and"] + wb[: max(3, len(wb) // 2)])))
            qrels[qid] = {a.id, b.id}
    return qs, qrels


def specs(e: Path) -> list[dict]:
    tl, lm, mt, dk = (e / s / "normalized" for s in ("toollens", "livemcpbench", "metatool", "docker-mcp-registry"))
    pool = [tl / "tools.jsonl", tl / "toolbench_g3_corpus_tools.jsonl", lm / "tools.jsonl", mt / "tools.jsonl",
            dk / "tools.jsonl"]
    ship_pool = [mt / "tools.jsonl", lm / "tools.jsonl", dk / "tools.jsonl"]
    cl = HERE / "crosslang"
    mt_single = load_queries(mt / "queries_single.jsonl")
    mt_r = load_qrels(mt / "qrels_single.tsv")
    mt_train = [q for q in mt_single if metatool_slice(q[0]) == 1][::2]
    mt_mem = [q for q in mt_single if metatool_slice(q[0]) == 2]
    mt_dev = [q for q in mt_single if metatool_slice(q[0]) == 0][::2]
    mt_test = [q for q in mt_single if metatool_slice(q[0]) in (3, 4)][::8]
    tl_dev = load_queries(tl / "queries_train.jsonl")[::8]
    tl_r = load_qrels(tl / "qrels_train.tsv")
    ship_tools = dedupe_tools([t for p in ship_pool for t in load_tools(p)])
    syn_q, syn_r = synthetic_queries(ship_tools)
    out = [
        {"name": "train MetaTool", "role": "train", "tools": [mt / "tools.jsonl"], "queries": mt_train, "qrels": mt_r},
        {"name": "train MetaTool (shippable pool)", "role": "train", "tools": ship_pool, "queries": mt_train[::2],
         "qrels": mt_r},
        {"name": "train MetaTool warm", "role": "train", "tools": [mt / "tools.jsonl"], "queries": mt_train[1::3],
         "qrels": mt_r, "usage": (mt_mem, mt_r)},
        {"name": "train synthetic", "role": "synthetic", "tools": ship_pool, "queries": syn_q, "qrels": syn_r},
        {"name": "dev ToolLens", "role": "dev", "tools": [tl / "tools.jsonl"], "queries": tl_dev, "qrels": tl_r},
        {"name": "dev ToolLens (pooled)", "role": "dev", "tools": pool, "queries": tl_dev, "qrels": tl_r},
        {"name": "dev MetaTool", "role": "dev", "tools": [mt / "tools.jsonl"], "queries": mt_dev, "qrels": mt_r},
        {"name": "dev MetaTool (pooled)", "role": "dev", "tools": pool, "queries": mt_dev, "qrels": mt_r},
    ]
    # Warm dev: usage memory from the ToolLens train queries of one template half, queries of the other.
    half = {q: template_half(g) for q, g in tl_r.items()}
    out.append({"name": "dev ToolLens warm (cross-template)", "role": "dev", "tools": [tl / "tools.jsonl"],
                "queries": [q for q in tl_dev if half.get(q[0]) == 1],
                "qrels": tl_r, "usage": ([q for q in load_queries(tl / "queries_train.jsonl")
                                          if half.get(q[0]) == 0][::2], tl_r)})
    tests = {
        "ToolLens test": (tl / "queries_test.jsonl", tl / "qrels_test.tsv", [tl / "tools.jsonl"]),
        "LiveMCPBench": (lm / "queries.jsonl", lm / "qrels.tsv", [lm / "tools.jsonl"]),
        "MetaTool single": (None, mt / "qrels_single.tsv", [mt / "tools.jsonl"]),
        "MetaTool multi": (mt / "queries_multi.jsonl", mt / "qrels_multi.tsv", [mt / "tools.jsonl"]),
        "Cross-language zh": (cl / "queries_zh.jsonl", cl / "qrels.tsv", [dk / "tools.jsonl"]),
        "Cross-language es": (cl / "queries_es.jsonl", cl / "qrels.tsv", [dk / "tools.jsonl"]),
    }
    for name, (qp, rp, tools) in tests.items():
        qrels = load_qrels(rp)
        qs = mt_test if qp is None else [q for q in load_queries(qp) if qrels.get(q[0])]
        out.append({"name": name, "role": "test", "tools": tools, "queries": qs, "qrels": qrels})
        out.append({"name": f"{name} (pooled)", "role": "test", "tools": pool, "queries": qs, "qrels": qrels})
    tl_test = [q for q in load_queries(tl / "queries_test.jsonl")]
    out.append({"name": "ToolLens test warm (train memory)", "role": "test", "tools": [tl / "tools.jsonl"],
                "queries": tl_test, "qrels": load_qrels(tl / "qrels_test.tsv"),
                "usage": (load_queries(tl / "queries_train.jsonl")[::4], tl_r)})
    return out


def collect(spec: dict, emb: CachedQueryEmbedder) -> dict:
    """Per query: candidate ids (fused order), features, labels; and the plain BM25 baseline's top 10."""
    tools = dedupe_tools([t for p in spec["tools"] for t in load_tools(p)])
    records, q2id = to_records(tools)
    rec = Recorder()
    index, _info = build_index(records, dense=True, reranker=rec, emb=emb, query_cache=0)
    qrels = spec["qrels"]
    if spec.get("usage"):
        uq, ur = spec["usage"]
        usage_memory(index, uq, ur, {v: k for k, v in q2id.items()})
    queries = [(q, t) for q, t in spec["queries"] if qrels.get(q)]
    out = {"qids": [], "ids": [], "X": [], "y": []}
    for qid, text in queries:
        rec.last = None
        index.search(text, limit=10)
        if rec.last is None:
            continue  # not a hybrid search (no token): nothing to rerank
        names, x = rec.last
        ids = [q2id[n] for n in names]
        out["qids"].append(qid)
        out["ids"].append(ids)
        out["X"].append(x)
        out["y"].append(np.array([1 if i in qrels[qid] else 0 for i in ids]))
    base, _lat = run_baseline(tools, queries)
    out["base"] = base
    out["gold"] = {q: qrels[q] for q in out["qids"]}
    emb.save()
    return out


def cmd_collect(args) -> int:
    e = require_eval_data(args.eval_dir)
    args.work.mkdir(parents=True, exist_ok=True)
    emb = CachedQueryEmbedder(DEFAULT_CACHE / "rerank-query-vectors.pkl")
    for spec in specs(e):
        if args.only and not any(w.lower() in spec["name"].lower() for w in args.only):
            continue
        path = args.work / f"{_slug(spec['name'])}.pkl"
        if path.exists() and not args.force:
            continue
        t0 = time.perf_counter()
        data = collect(spec, emb) | {"role": spec["role"], "name": spec["name"]}
        path.write_bytes(pickle.dumps(data))
        print(f"{spec['name']}: {len(data['qids'])} queries in {time.perf_counter() - t0:.0f} s", file=sys.stderr,
              flush=True)
    return 0


def _slug(name: str) -> str:
    return re.sub(r"[^a-z0-9]+", "-", name.lower()).strip("-")


def load_sets(work: Path, prefix: str = "") -> list[dict]:
    return [pickle.loads(p.read_bytes()) for p in sorted(work.glob(f"{prefix}*.pkl"))]


def export(booster) -> TreeReranker:
    """Flat node arrays of a LightGBM booster (numerical ``<=`` splits only)."""
    feature, threshold, left, right, value, roots = [], [], [], [], [], []
    depth = 0

    def walk(node: dict, level: int) -> int:
        nonlocal depth
        idx = len(feature)
        feature.append(-1)
        threshold.append(0.0)
        left.append(idx)
        right.append(idx)
        value.append(0.0)
        if "leaf_value" in node:
            value[idx] = float(node["leaf_value"])
            depth = max(depth, level)
            return idx
        if node.get("decision_type") != "<=":
            raise ValueError(f"only numerical '<=' splits can be exported, got {node.get('decision_type')}")
        feature[idx] = int(node["split_feature"])
        threshold[idx] = float(node["threshold"])
        left[idx] = walk(node["left_child"], level + 1)
        right[idx] = walk(node["right_child"], level + 1)
        return idx

    for tree in booster.dump_model()["tree_info"]:
        roots.append(walk(tree["tree_structure"], 0))
    return TreeReranker(
        feature=np.array(feature, dtype=np.int32), threshold=np.array(threshold), left=np.array(left, dtype=np.int32),
        right=np.array(right, dtype=np.int32), value=np.array(value), roots=np.array(roots, dtype=np.int32),
        depth=depth,
    )


def cmd_train(args) -> int:
    import lightgbm as lgb

    roles = {"train"} | (set() if args.no_synthetic else {"synthetic"})
    sets = [s for s in load_sets(args.work, "train-") if s["role"] in roles
            and (not args.only_sets or any(w.lower() in s["name"].lower() for w in args.only_sets))]
    X, y, groups = [], [], []
    for s in sets:
        step = max(1, len(s["X"]) // args.cap) if args.cap else 1
        for x, lab in list(zip(s["X"], s["y"], strict=True))[::step]:
            if lab.any() and len(lab) > 1:
                X.append(x)
                y.append(lab)
                groups.append(len(lab))
    print(f"training on {len(groups)} queries from {[s['name'] for s in sets]}", file=sys.stderr)
    params = {
        "objective": "lambdarank", "learning_rate": 0.05, "num_leaves": args.leaves, "min_data_in_leaf": 50,
        "bagging_fraction": 0.8, "bagging_freq": 1, "feature_fraction": 0.8, "lambda_l2": 1.0, "seed": SEED,
        "deterministic": True, "force_row_wise": True, "num_threads": 2, "verbose": -1,
        "lambdarank_truncation_level": 20, "eval_at": [5],
    }
    xs = np.vstack(X)
    for name in args.drop or ():
        xs[:, RERANK_FEATURES.index(name)] = 0.0  # constant: no tree splits on it
    # Boosted from the fused order (init_score): the trees learn corrections to it.
    data = lgb.Dataset(xs, np.concatenate(y), group=groups, feature_name=list(RERANK_FEATURES),
                       init_score=args.base_scale * xs[:, 0])
    booster = lgb.train(params, data, num_boost_round=args.trees)
    tr = replace(export(booster), base_scale=args.base_scale)
    sample = np.vstack(X[:200])
    diff = np.abs(tr.score([], sample) - booster.predict(sample) - args.base_scale * sample[:, 0]).max()
    if diff > 1e-6:
        raise SystemExit(f"exported trees disagree with LightGBM by {diff}")
    args.model.parent.mkdir(parents=True, exist_ok=True)
    tr.save(args.model)
    gain = booster.feature_importance("gain")
    top = sorted(zip(RERANK_FEATURES, gain, strict=True), key=lambda p: -p[1])[:8]
    print(f"{len(tr.roots)} trees, {len(tr.feature)} nodes, depth {tr.depth}; {args.model.stat().st_size} bytes "
          f"-> {args.model}; walker = LightGBM within {diff:.1e}; top gain: "
          + ", ".join(f"{n} {g:.0f}" for n, g in top), file=sys.stderr)
    return 0


def per_query(s: dict, model: TreeReranker | None) -> dict[str, np.ndarray]:
    """Per query R@5 and NDCG@10 of the baseline, the fused order and the reranked order."""
    out = {k: np.zeros(len(s["qids"])) for k in ("base5", "fused5", "rr5", "base_nd", "fused_nd", "rr_nd")}
    for i, (qid, ids, x) in enumerate(zip(s["qids"], s["ids"], s["X"], strict=True)):
        gold = s["gold"][qid]
        base = s["base"].get(qid, [])
        out["base5"][i], out["base_nd"][i] = recall_at(base, gold, 5), ndcg_at(base, gold, 10)
        out["fused5"][i], out["fused_nd"][i] = recall_at(ids, gold, 5), ndcg_at(ids, gold, 10)
        if model is not None:
            sc = model.score(ids, x)
            order = sorted(range(len(ids)), key=lambda j: (-sc[j], j))
            rr = [ids[j] for j in order]
            out["rr5"][i], out["rr_nd"][i] = recall_at(rr, gold, 5), ndcg_at(rr, gold, 10)
    return out


def bootstrap(a: np.ndarray, b: np.ndarray | None = None, n: int = 1000) -> tuple[float, float]:
    """95 % percentile interval of mean(a) (or mean(a - b)) over queries resampled with replacement."""
    rng = np.random.default_rng(SEED)
    d = a if b is None else a - b
    idx = rng.integers(0, len(d), size=(n, len(d)))
    means = d[idx].mean(axis=1)
    return float(np.percentile(means, 2.5)), float(np.percentile(means, 97.5))


def cmd_eval(args) -> int:
    model = load_tree_reranker(args.model)
    rows = {}
    print("| set | role | queries | BM25 R@5 | fused R@5 | reranked R@5 [95 % CI] | Δ vs fused [95 % CI] | "
          "Δ vs BM25 [95 % CI] | fused NDCG@10 | reranked NDCG@10 |")
    print("|---|---|---|---|---|---|---|---|---|---|")
    for s in load_sets(args.work):
        if s["role"] not in ("dev", "test") or not s["qids"]:
            continue
        m = per_query(s, model)
        lo, hi = bootstrap(m["rr5"])
        dlo, dhi = bootstrap(m["rr5"], m["fused5"])
        blo, bhi = bootstrap(m["rr5"], m["base5"])
        r = {k: 100 * float(v.mean()) for k, v in m.items()}
        rows[s["name"]] = r | {"ci": [100 * lo, 100 * hi], "ci_fused": [100 * dlo, 100 * dhi],
                               "ci_base": [100 * blo, 100 * bhi], "role": s["role"], "n": len(s["qids"])}
        print(f"| {s['name']} | {s['role']} | {len(s['qids'])} | {r['base5']:.1f} | {r['fused5']:.1f} | "
              f"{r['rr5']:.1f} [{100 * lo:.1f}, {100 * hi:.1f}] | {r['rr5'] - r['fused5']:+.1f} "
              f"[{100 * dlo:+.1f}, {100 * dhi:+.1f}] | {r['rr5'] - r['base5']:+.1f} "
              f"[{100 * blo:+.1f}, {100 * bhi:+.1f}] "
              f"| {r['fused_nd']:.1f} | {r['rr_nd']:.1f} |")
    dev = [r["rr5"] - r["fused5"] for r in rows.values() if r["role"] == "dev"]
    print(f"\nkeep (raises every dev set): {bool(dev) and min(dev) > 0} (worst dev Δ {min(dev):+.2f})" if dev else "")
    print(json.dumps(rows))
    return 0


def main(argv: list[str] | None = None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("command", choices=("collect", "train", "eval", "all"))
    ap.add_argument("--eval-dir", type=Path, default=EVAL_DIR)
    ap.add_argument("--work", type=Path, default=DEFAULT_CACHE / "rerank-features", help="collected features")
    ap.add_argument("--model", type=Path, default=MODEL_PATH, help="the exported trees (.npz)")
    ap.add_argument("--only", nargs="*", help="collect only sets whose name contains one of these words")
    ap.add_argument("--force", action="store_true", help="collect again even when cached")
    ap.add_argument("--no-synthetic", action="store_true", help="train without the synthetic Docker queries")
    ap.add_argument("--drop", nargs="*", choices=RERANK_FEATURES, default=list(SHIPPED_DROP),
                    help="features the trees may not use (default: the word-overlap ones; --drop alone: none)")
    ap.add_argument("--only-sets", nargs="*", help="train only on sets whose name contains one of these words")
    ap.add_argument("--cap", type=int, default=0, help="at most about this many queries from each training set")
    ap.add_argument("--trees", type=int, default=60)
    ap.add_argument("--base-scale", type=float, default=0.0, help="boost from this × the fused score (0: from 0)")
    ap.add_argument("--leaves", type=int, default=7)
    args = ap.parse_args(argv)
    steps = {"collect": [cmd_collect], "train": [cmd_train], "eval": [cmd_eval],
             "all": [cmd_collect, cmd_train, cmd_eval]}[args.command]
    for step in steps:
        if step(args):
            return 1
    return 0


if __name__ == "__main__":
    sys.exit(main())
