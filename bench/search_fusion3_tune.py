"""How the three-way fusion (BM25 + USE + MiniLM) and its lexical-confidence gate were chosen: grids on
DEV data only (the dev sets of ``bench/search_tune.py``: ToolLens train queries and a fixed 20 %
MetaTool slice, each over its own tools and over the 3,379-tool pool; every ``--every``-th query).
LiveMCPBench, ToolLens test and the rest of MetaTool are not used.

    python bench/search_fusion3_tune.py [--every 4] [--sets tl mt tl_pool mt_pool]

Each line: R@5 / NDCG@10 per dev set, per query kind (short: at most 6 query tokens; long) and the
mean R@5; ``min Δlex`` is the worst difference to our lexical search over every set and kind
(the rule "fusion never loses to its own lexical half" asks for ≥ 0).
Scores are computed as ``registry.search.dense.fuse`` does (min-max over each list's top 100).
Tool and query vectors come from / go to the bench vector cache (``search_hybrid.DEFAULT_CACHE``).
"""

from __future__ import annotations

import argparse
import hashlib
import itertools
import pickle
import sys
import time
from pathlib import Path

import numpy as np
from search_data import EVAL_DIR, ndcg_at, recall_at
from search_hybrid import DEFAULT_CACHE
from search_tune import dev_sets

from host.search import VectorCache
from registry.search import SearchIndex, embedding_text, text_key
from registry.search.dense import english_query
from registry.search.ranking import bm25_confidence

DEPTH = 100


def embedders() -> dict:
    from host.search import UseEmbedder
    from host.search.minilm import MiniLmEmbedder

    return {"use": UseEmbedder(), "minilm": MiniLmEmbedder()}


def tool_vectors(emb, texts: list[str]) -> np.ndarray:
    cache = VectorCache(DEFAULT_CACHE, emb.model_id, emb.dim)
    keys = [text_key(t, emb.model_id) for t in texts]
    found = cache.get_many(keys)
    todo = [i for i, k in enumerate(keys) if k not in found]
    if todo:
        t0 = time.perf_counter()
        for s in range(0, len(todo), 256):
            chunk = todo[s : s + 256]
            vecs = emb.embed([texts[i] for i in chunk])
            cache.put_many((keys[i], vecs[j]) for j, i in enumerate(chunk))
        print(f"  {emb.model_id}: {len(todo)} tools embedded in {time.perf_counter() - t0:.1f} s", file=sys.stderr)
        found = cache.get_many(keys)
    return np.stack([found[k] for k in keys])


def query_vectors(emb, texts: list[str]) -> np.ndarray:
    key = hashlib.sha256((emb.model_id + "\x00" + "\x01".join(texts)).encode()).hexdigest()[:24]
    path = DEFAULT_CACHE / f"queries-{key}.npy"
    if path.exists():
        return np.load(path)
    t0 = time.perf_counter()
    vecs = emb.embed(texts)
    print(f"  {emb.model_id}: {len(texts)} queries in {time.perf_counter() - t0:.1f} s", file=sys.stderr, flush=True)
    DEFAULT_CACHE.mkdir(parents=True, exist_ok=True)
    np.save(path, vecs)
    return vecs


def minmax_top(scores: np.ndarray, present: np.ndarray | None = None) -> np.ndarray:
    """As ``fuse``: (s - lo) / (hi - lo) clipped to 0..1 with lo = the DEPTH-th best candidate."""
    cand = scores if present is None else scores[present]
    if not len(cand):
        return np.zeros_like(scores)
    k = min(DEPTH, len(cand))
    top = np.partition(cand, -k)[-k:]
    lo, hi = float(top.min()), float(top.max())
    out = (scores - lo) / (hi - lo) if hi - lo > 1e-12 else np.ones_like(scores)
    out = np.clip(out, 0, 1)
    if present is not None:
        out = out * present
    return out


def prepare(every: int, names: list[str]) -> dict:
    sets = dev_sets(EVAL_DIR)
    embs = embedders()
    data = {}
    for name, ((records, q2id), queries, qrels) in sets.items():
        if name in names:
            data[name] = prepare_set(name, records, q2id, queries[::every], qrels, embs)
    return data


def prepare_set(name: str, records: list, q2id: dict, qs: list, qrels: dict, embs: dict) -> dict:
    """Per query of one set: raw BM25 scores (as ``SearchIndex`` computes them, with expansion),
    each model's cosines with the plain and the server-prefixed tool text, query token counts,
    BM25 confidence and whether the query is English."""
    index = SearchIndex()
    by_server: dict[str, list] = {}
    for r in records:
        by_server.setdefault(r.server, []).append(r)
    index.replace_servers(by_server)
    st = index._state
    n = len(st.records)
    assert all(r is not None for r in st.records)
    ids = [q2id[r.qualified_name] for r in st.records]
    bm_raw = np.zeros((len(qs), n))
    present = np.zeros((len(qs), n), dtype=bool)
    ntok = np.zeros(len(qs), dtype=int)
    conf = np.zeros(len(qs))
    stats = st.corpus.stats(None)
    for i, (_q, t) in enumerate(qs):
        toks = index.tokenizer(t)
        ntok[i] = len(toks)
        if not toks:
            continue
        toks, w = index.expansion.expand(toks, lambda x, st=st, stats=stats: st.corpus.df(x, stats) > 0)
        s, v = st.corpus.score(toks, stats, w)
        bm_raw[i, s] = v
        conf[i] = bm25_confidence(index.params, v, w, len(toks), stats.n_docs)
        present[i, s] = True
    texts = {"plain": [embedding_text(r) for r in st.records],
             "server": [embedding_text(r, server=True) for r in st.records]}
    cos = {}
    for m, emb in embs.items():
        qv = query_vectors(emb, [t for _q, t in qs])
        for variant, tx in texts.items():
            cos[(m, variant)] = qv @ tool_vectors(emb, tx).T
    english = np.array([english_query(t) for _q, t in qs])
    print(f"{name}: {len(qs)} queries, {n} tools", file=sys.stderr, flush=True)
    return {"qs": qs, "qrels": qrels, "ids": ids, "bm_raw": bm_raw, "present": present, "ntok": ntok,
            "conf": conf, "cos": cos, "english": english}


def metrics(d: dict, score: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
    """Per query: R@5 and NDCG@10 of the ranking by ``score`` (ties: slot order)."""
    top = np.argsort(-score, axis=1, kind="stable")[:, :10]
    r5, nd = np.zeros(len(d["qs"])), np.zeros(len(d["qs"]))
    for i, (q, _t) in enumerate(d["qs"]):
        ranked = [d["ids"][j] for j in top[i] if score[i, j] > 0 or True]
        r5[i] = recall_at(ranked, d["qrels"][q], 5)
        nd[i] = ndcg_at(ranked, d["qrels"][q], 10)
    return r5, nd


def normalised(d: dict) -> None:
    if "bm" in d:
        return
    d["bm"] = np.stack([minmax_top(row, p) for row, p in zip(d["bm_raw"], d["present"], strict=True)])
    d["dn"] = {k: np.stack([minmax_top(row) for row in c]) for k, c in d["cos"].items()}


def kinds(d: dict) -> dict[str, np.ndarray]:
    short = d["ntok"] <= 6
    return {"short": short, "long": ~short}


def report(data: dict, label: str, fn, lexical: dict | None = None) -> dict:
    """Print one line; returns {set: per-query R@5} for later comparisons."""
    per, parts, worst = {}, [], float("inf")
    for name, d in data.items():
        normalised(d)
        r5, nd = metrics(d, fn(d))
        per[name] = r5
        parts.append(f"{name}={100 * r5.mean():.2f}/{100 * nd.mean():.2f}")
        if lexical is not None:
            lx = lexical[name]
            worst = min(worst, 100 * (r5.mean() - lx.mean()))
            for sel in kinds(d).values():
                if sel.any():
                    worst = min(worst, 100 * (r5[sel].mean() - lx[sel].mean()))
    mean = 100 * np.mean([v.mean() for v in per.values()])
    extra = f"  min Δlex={worst:+.2f}" if lexical is not None else ""
    print(f"{label:<46} " + " ".join(parts) + f"  mean R@5={mean:.2f}{extra}", flush=True)
    return per


def fused(d: dict, wb: float, wu: float, wm: float, variant_u: str = "plain", variant_m: str = "server",
          gate: float | None = None, gate_w: float = 0.9) -> np.ndarray:
    """The fusion of ``registry.search.fusion.fuse_parts``: MiniLM's weight goes to USE on a
    non-English query; ``gate``: a query whose BM25 best has coverage-like confidence (its raw
    top score over the query's best possible) at least ``gate`` takes BM25 weight ``gate_w``."""
    bm, du, dm = d["bm"], d["dn"][("use", variant_u)], d["dn"][("minilm", variant_m)]
    eng = d["english"][:, None]
    wm_q = np.where(eng, wm, 0.0)
    lex_share = wb / (wb + wu + wm)  # an inactive part's weight goes to the other dense part
    if gate is not None:
        lex_share = np.where(d["conf"][:, None] >= gate, gate_w, lex_share)
    score = lex_share * bm + (1 - lex_share) * (wu * du + wm_q * dm) / (wu + wm_q)
    # A tool in neither top list scores 0 (the union of fuse); keep the ordering otherwise.
    return score


def gate_grid(data: dict) -> int:
    """The lexical-confidence gate on the two-way fallback (BM25 + USE, plain text, as without
    MiniLM or for a non-English query) and on the chosen three-way weights."""
    lex = report(data, "lexical (ours, BM25 + expansion)", lambda d: d["bm_raw"])
    for wb, wu, wm, vu in ((0.6, 0.4, 0.0, "plain"), (0.4, 0.2, 0.4, "server")):
        report(data, f"{wb}/{wu}/{wm} use={vu}", lambda d, c=(wb, wu, wm, vu): fused(d, *c), lex)
        for gate, gw in itertools.product((0.2, 0.3, 0.4, 0.5, 0.6), (0.7, 0.8, 0.9)):
            report(data, f"{wb}/{wu}/{wm} use={vu} gate {gate}->{gw}",
                   lambda d, c=(wb, wu, wm, vu), g=(gate, gw): fused(d, *c, gate=g[0], gate_w=g[1]), lex)
    return 0


def main(argv: list[str] | None = None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--every", type=int, default=4)
    ap.add_argument("--sets", nargs="+", default=["tl", "mt", "tl_pool", "mt_pool"])
    ap.add_argument("--grid", choices=("weights", "gate"), default="weights")
    ap.add_argument("--data", type=Path, help="keep the prepared scores in this pickle (reused when it exists)")
    args = ap.parse_args(argv)
    if args.data is not None and args.data.exists():
        data = pickle.loads(args.data.read_bytes())
    else:
        data = prepare(args.every, args.sets)
        if args.data is not None:
            args.data.write_bytes(pickle.dumps(data))
    if args.grid == "gate":
        return gate_grid(data)
    lex = report(data, "lexical (ours, BM25 + expansion)", lambda d: d["bm_raw"])
    report(data, "today: minmax 0.6 BM25 + 0.4 USE", lambda d: fused(d, 0.6, 0.4, 0.0, "plain"), lex)
    report(data, "USE only", lambda d: d["dn"][("use", "plain")], lex)
    report(data, "MiniLM only (server text)", lambda d: d["dn"][("minilm", "server")], lex)
    report(data, "MiniLM only (plain text)", lambda d: d["dn"][("minilm", "plain")], lex)
    for vu, vm in (("plain", "server"), ("server", "server"), ("plain", "plain")):
        for wb, wu, wm in itertools.product((0.4, 0.5, 0.6), (0.1, 0.2, 0.3), (0.2, 0.3, 0.4)):
            report(data, f"3-way {wb}/{wu}/{wm} use={vu} minilm={vm}",
                   lambda d, c=(wb, wu, wm, vu, vm): fused(d, *c), lex)
    return 0


if __name__ == "__main__":
    sys.exit(main())
