"""Fusion against its own lexical half, per set and query kind, with bootstrap intervals; and the
dev grid that chose the lexical anchor (``registry.search.fusion.LexicalAnchor``).

    python bench/search_fusion_gate.py [--split dev|test|both] [--grid] [--data PICKLE]

Dev sets (choice): ToolLens train (every 4th query) and MetaTool single slice 0 (as
``bench/search_tune.py``), plus MetaTool *multi* slice 0 (``sha256(id) % 5 == 0``: 109 queries
asking for several tools, a kind the earlier dev sets lacked), each over its own tools and over
the 3,379-tool pool. Test sets (report only, after freezing): ToolLens test, LiveMCPBench,
MetaTool single slices 3-4 (every 4th), MetaTool multi slices 1-4, the cross-language sets.

Each row: R@5 of the lexical search (BM25 + expansion, what ``SearchIndex`` without an embedder
returns), of the fusion, the difference and its paired bootstrap 95 % interval (2,000 resamples
of the queries), per set and per query kind (short: at most 6 tokens; long). Scores are the
offline equivalent of ``registry.search.fusion.fuse_parts`` (min-max over each list's top 100;
tool text with the server name for both models) and of ``anchor_lexical`` (English queries only,
as ``SearchIndex``). Vectors come from the bench vector cache; ``--data F`` keeps the prepared
scores in ``F.dev.pkl`` / ``F.test.pkl`` (the first run embeds the test queries: minutes).
"""

from __future__ import annotations

import argparse
import itertools
import pickle
import sys
from pathlib import Path

import numpy as np
from search_data import EVAL_DIR, load_qrels, load_queries, load_tools, metatool_slice, to_records
from search_fusion3_tune import embedders, metrics, normalised, prepare_set
from search_tune import dev_sets

from registry.search.fusion import DEFAULT_ANCHOR, LexicalAnchor, anchor_lexical

HERE = Path(__file__).resolve().parent
WEIGHTS = (0.4, 0.2, 0.4)
SHORT = 6
"""Query kinds: short has at most this many tokens."""


def set_specs(e: Path, split: str) -> dict:
    """``{name: ((records, q2id), queries, qrels)}`` of the dev or the test sets."""
    mt = e / "metatool/normalized"
    mt_r = to_records(load_tools(mt / "tools.jsonl"))
    multi_q, multi_r = load_queries(mt / "queries_multi.jsonl"), load_qrels(mt / "qrels_multi.tsv")
    out = dev_sets(e)
    pool = out["tl_pool"][0]  # the 3,379 tools pooled as the dev sets pool them
    if split == "dev":
        m0 = [q for q in multi_q if metatool_slice(q[0]) == 0]
        out["mtm"] = (mt_r, m0, multi_r)
        out["mtm_pool"] = (pool, m0, multi_r)
        return out
    tl, lm, cl = e / "toollens/normalized", e / "livemcpbench/normalized", HERE / "crosslang"
    tlq, tlr = load_queries(tl / "queries_test.jsonl"), load_qrels(tl / "qrels_test.tsv")
    lmq, lmr = load_queries(lm / "queries.jsonl"), load_qrels(lm / "qrels.tsv")
    mtq = [q for q in load_queries(mt / "queries_single.jsonl") if metatool_slice(q[0]) in (3, 4)][::4]
    mtr = load_qrels(mt / "qrels_single.tsv")
    mm = [q for q in multi_q if metatool_slice(q[0]) != 0]
    dk = to_records(load_tools(e / "docker-mcp-registry/normalized/tools.jsonl"))
    clr = load_qrels(cl / "qrels.tsv")
    out.clear()
    for name, own, qs, qrels in (
        ("tl_test", to_records(load_tools(tl / "tools.jsonl")), tlq, tlr),
        ("lmb", to_records(load_tools(lm / "tools.jsonl")), lmq, lmr),
        ("mt_test", mt_r, mtq, mtr),
        ("mtm_test", mt_r, mm, multi_r),
        ("zh", dk, load_queries(cl / "queries_zh.jsonl"), clr),
        ("es", dk, load_queries(cl / "queries_es.jsonl"), clr),
    ):
        qs = [q for q in qs if q[0] in qrels]
        out[name] = (own, qs, qrels)
        out[f"{name}_pool"] = (pool, qs, qrels)
    return out


def prepare(split: str) -> dict:
    embs = embedders()
    return {name: prepare_set(name, records, q2id, qs, qrels, embs)
            for name, ((records, q2id), qs, qrels) in set_specs(EVAL_DIR, split).items()}


def fused(d: dict, anchor: LexicalAnchor | None) -> np.ndarray:
    """As ``fuse_parts`` then ``anchor_lexical``: (n queries, n tools) fused scores."""
    normalised(d)
    wb, wu, wm = WEIGHTS
    bm, du, dm = d["bm"], d["dn"][("use", "server")], d["dn"][("minilm", "server")]
    wm_q = np.where(d["english"], wm, 0.0)[:, None]
    lex = wb / (wb + wu + wm)
    score = lex * bm + (1 - lex) * (wu * du + wm_q * dm) / (wu + wm_q)
    if anchor is None:
        return score
    out = score.copy()
    for i in range(len(out)):
        s = np.flatnonzero(d["present"][i])
        if not len(s) or not d["english"][i]:  # as SearchIndex: English queries only
            continue
        slots, scores = anchor_lexical(s, d["bm_raw"][i, s], np.arange(out.shape[1]), out[i], anchor)
        out[i, slots] = scores
    return out


def bootstrap(diff: np.ndarray, rounds: int = 2000, seed: int = 7) -> tuple[float, float]:
    """95 % percentile interval of the mean of ``diff`` (paired, resampling queries)."""
    if len(diff) == 0:
        return 0.0, 0.0
    rng = np.random.default_rng(seed)
    means = diff[rng.integers(0, len(diff), (rounds, len(diff)))].mean(axis=1)
    return float(np.percentile(means, 2.5)), float(np.percentile(means, 97.5))


def kinds(d: dict) -> dict[str, np.ndarray]:
    short = d["ntok"] <= SHORT
    return {"all": np.ones(len(short), dtype=bool), "short": short, "long": ~short}


def table(data: dict, label: str) -> None:
    """Lexical, fusion without and with the shipped anchor, per set and query kind; each Δ is
    against lexical with its paired bootstrap 95 % interval (R@5 points)."""
    print(f"\n{label}\n")
    print("| set | kind | queries | lexical R@5 | fusion R@5 | Δ [95 %] | fusion + anchor R@5 | Δ [95 %] |")
    print("|---|---|---:|---:|---:|---|---:|---|")
    for name, d in data.items():
        lx, _ = metrics(d, d["bm_raw"])
        plain, _ = metrics(d, fused(d, None))
        anch, _ = metrics(d, fused(d, DEFAULT_ANCHOR))
        for kind, sel in kinds(d).items():
            if not sel.any():
                continue
            cells = []
            for r5 in (plain, anch):
                diff = 100 * (r5[sel] - lx[sel])
                lo, hi = bootstrap(diff)
                cells.append(f"{100 * r5[sel].mean():.1f} | {diff.mean():+.2f} [{lo:+.2f}, {hi:+.2f}]")
            print(f"| {name} | {kind} | {sel.sum()} | {100 * lx[sel].mean():.1f} | " + " | ".join(cells) + " |",
                  flush=True)


def grid(data: dict) -> None:
    """Each line: mean R@5 over the sets, the worst Δ against lexical over every set and kind."""
    lexical = {name: metrics(d, d["bm_raw"])[0] for name, d in data.items()}

    def line(label: str, anchor: LexicalAnchor | None) -> None:
        per, worst = [], float("inf")
        for name, d in data.items():
            r5 = metrics(d, fused(d, anchor))[0]
            per.append(r5.mean())
            for sel in kinds(d).values():
                if sel.any():
                    worst = min(worst, 100 * (r5[sel].mean() - lexical[name][sel].mean()))
        cells = " ".join(f"{n}={100 * v:.2f}" for n, v in zip(data, per, strict=True))
        print(f"{label:<34} {cells}  mean={100 * np.mean(per):.2f}  min Δlex={worst:+.2f}", flush=True)

    line("fusion (no anchor)", None)
    for ranks, within in itertools.product((1, 2, 3), (3, 5, 10)):
        line(f"anchor ranks={ranks} within={within}", LexicalAnchor(ranks=ranks, within=within))


def main(argv: list[str] | None = None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--split", choices=("dev", "test", "both"), default="both")
    ap.add_argument("--grid", action="store_true", help="the dev grid of the anchor (dev split only)")
    ap.add_argument("--data", type=Path, help="keep the prepared scores in this pickle (one per split)")
    args = ap.parse_args(argv)
    for split in ("dev", "test") if args.split == "both" else (args.split,):
        path = args.data.with_suffix(f".{split}.pkl") if args.data is not None else None
        if path is not None and path.exists():
            data = pickle.loads(path.read_bytes())
        else:
            data = prepare(split)
            if path is not None:
                path.write_bytes(pickle.dumps(data))
        if args.grid and split == "dev":
            grid(data)
        table(data, f"{split} sets")
    return 0


if __name__ == "__main__":
    sys.exit(main())
