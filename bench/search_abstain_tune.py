"""How "no tool fits" was fitted: gradient-boosted trees over the search signals
(``registry.search.abstain_signals``), on DEV data only, exported for numpy.

    pip install -e '.[search-train]'                       # LightGBM: training only
    python bench/search_abstain_tune.py [--compare] [--write]

Data: ``search_abstain_data.py``'s rows (collected on first use). Training uses the DEV query
sets only (ToolLens train every 4th query, MetaTool slice 0):

* answerable (label 0): each set on its own catalog and on the 3,379-tool pool, weighted by the
  query's R@5 (flagging a query whose gold tool was not in the top five anyway costs nothing);
* unanswerable (label 1): each set on every catalog holding none of its gold tools - ToolLens on
  MetaTool, LiveMCPBench and Docker MCP registry tools, MetaTool on ToolLens, LiveMCPBench and
  Docker - every pairing weighing the same. Some of these do have a fitting tool (24 of 84
  hand-labelled ToolLens↔MetaTool rows, none of 24 →Docker: ``bench/abstain_labels.tsv``); the
  trees learn the signals of four catalogs of different size and domain, not one catalog.

Operating point, by rule: five folds grouped by query (a query's rows in every catalog share a
fold); each fold's queries are scored by trees fitted on the other four; the threshold is the
lowest at which every dev answerable set (ToolLens, MetaTool, each on its own tools and pooled)
loses at most ``--loss`` R@5 points out of fold. The shipped trees are then fitted on all dev
rows and the threshold folded into their bias. Numbers are out-of-fold; test is
``search_abstain_eval.py``'s.

``--compare`` prints the candidates tried (logistic models, trees of other sizes) under the same
rule; ``--held-out docker`` also fits without one catalog's unanswerable rows (how the trees do
on a catalog they never saw); ``--write`` saves the hybrid trees to
``registry/search/data/abstain.npz`` after checking that the numpy walk gives LightGBM's scores.
BM25-only search is fitted and printed too, but keeps its logistic model (``abstain.py``).
"""

from __future__ import annotations

import argparse
import hashlib
import sys
from collections.abc import Callable, Sequence
from pathlib import Path

import numpy as np
from search_abstain_data import CATALOGS, DEV, EVAL_DIR, OWN, default_out, load, require_eval_data
from search_rerank import export

from registry.search import FEATURES
from registry.search.abstain import TreeEnsemble

DATA = Path(__file__).resolve().parent.parent / "registry/search/data"
DENSE_ONLY = ("dense_top", "dense_z", "dense_margin", "hit_cosine", "log1p_lex_dense_rank", "log1p_dense_lex_rank",
              "fused_margin", "dense_spread", "has_minilm", "minilm_top", "minilm_z", "minilm_margin", "minilm_spread",
              "agree5")
HYBRID_COLS = tuple(f for f in FEATURES if f not in ("has_minilm", "log10_tools"))
"""What the hybrid trees read: every signal but the catalog size (the answerable pool is the only
large catalog, so its size would tell the trees "answerable") and ``has_minilm`` (constant here)."""
LEXICAL_COLS = tuple(f for f in HYBRID_COLS if f not in DENSE_ONLY)
FOLDS = 5
SEED = 7


def answerable_keys(rows: dict) -> list[tuple[str, str]]:
    return [(q, c) for q in DEV for c in (OWN[q], "pool") if (q, c) in rows]


def unanswerable_keys(rows: dict, held_out: str | None = None) -> list[tuple[str, str]]:
    return [(q, c) for q in DEV for c in CATALOGS if c not in (OWN[q], "pool", held_out) and (q, c) in rows]


def fold_of(qset: str, qid: str) -> int:
    return int(hashlib.sha256(f"{qset}:{qid}".encode()).hexdigest(), 16) % FOLDS


def matrix(rows: dict, key: tuple[str, str], cols: Sequence[str]) -> np.ndarray:
    idx = [FEATURES.index(c) for c in cols]
    return rows[key][1][:, idx]


def training_set(rows: dict, cols: Sequence[str], keep: Callable[[tuple[str, str]], np.ndarray],
                 held_out: str | None = None):
    """``(X, y, weight)``: each unanswerable pairing (none on the ``held_out`` catalog) and each
    answerable set weighs the same in total; answerable rows by R@5. ``keep(key)`` selects the
    rows of a key."""
    xs, ys, ws = [], [], []
    un, ans = unanswerable_keys(rows, held_out), answerable_keys(rows)
    for key in un:
        sel = keep(key)
        n = int(sel.sum())
        xs.append(matrix(rows, key, cols)[sel])
        ys.append(np.ones(n))
        ws.append(np.full(n, 1.0 / max(1, n) / len(un)))
    for key in ans:
        sel = keep(key)
        r5 = rows[key][2][sel]
        xs.append(matrix(rows, key, cols)[sel])
        ys.append(np.zeros(len(r5)))
        ws.append(r5 / max(1e-9, r5.sum()) / len(ans))
    w = np.concatenate(ws)
    return np.vstack(xs), np.concatenate(ys), w / w.mean()


def fit_trees(x, y, w, trees: int, leaves: int, lr: float = 0.05):
    import lightgbm as lgb

    params = {"objective": "binary", "num_leaves": leaves, "learning_rate": lr, "min_data_in_leaf": 40,
              "bagging_fraction": 0.8, "bagging_freq": 1, "feature_fraction": 0.8, "lambda_l2": 1.0, "seed": SEED,
              "num_threads": 1, "verbose": -1, "deterministic": True, "force_row_wise": True}
    booster = lgb.train(params, lgb.Dataset(x, y, weight=w), num_boost_round=trees)
    return booster, lambda a: booster.predict(a, raw_score=True)


def fit_logistic(x: np.ndarray, y: np.ndarray, w: np.ndarray, l2: float = 1e-2, iters: int = 50):
    """Weighted L2-regularised logistic regression by Newton's method on standardised features."""
    mu, sd = x.mean(0), x.std(0)
    sd[sd < 1e-9] = 1.0
    xs = np.hstack([np.ones((len(x), 1)), (x - mu) / sd])
    beta = np.zeros(xs.shape[1])
    reg = l2 * np.eye(xs.shape[1])
    reg[0, 0] = 0.0
    for _ in range(iters):
        p = 1 / (1 + np.exp(-np.clip(xs @ beta, -60, 60)))
        step = np.linalg.solve((xs * (w * p * (1 - p))[:, None]).T @ xs + reg, xs.T @ (w * (p - y)) + reg @ beta)
        beta -= step
        if np.abs(step).max() < 1e-8:
            break
    return None, lambda a: beta[0] + ((a - mu) / sd) @ beta[1:]


def out_of_fold(rows: dict, cols: Sequence[str], fit: Callable, held_out: str | None = None) -> dict:
    """Per dev key: each row's score from the model fitted on the other folds (and never on the
    ``held_out`` catalog's rows)."""
    keys = answerable_keys(rows) + unanswerable_keys(rows)
    folds = {k: np.array([fold_of(k[0], q) for q in rows[k][0]]) for k in keys}
    out = {k: np.zeros(len(rows[k][0])) for k in keys}
    for f in range(FOLDS):
        _model, score = fit(*training_set(rows, cols, lambda k, f=f: folds[k] != f, held_out))
        for k in keys:
            sel = folds[k] == f
            out[k][sel] = score(matrix(rows, k, cols)[sel])
    return out


def lost(r5: np.ndarray, weak: np.ndarray) -> float:
    """R@5 points lost when the flagged queries count as misses."""
    return 100.0 * float((r5 * weak).sum()) / max(1, len(r5))


def threshold(rows: dict, scores: dict, max_loss: float) -> float:
    """The lowest score threshold at which every dev answerable set loses at most ``max_loss``
    (lowering the threshold only flags more, so walk down until the budget breaks)."""
    ans = answerable_keys(rows)
    best = float(max(scores[k].max() for k in scores)) + 1e-9
    for t in np.unique(np.concatenate([scores[k] for k in ans]))[::-1]:
        if max(lost(rows[k][2], scores[k] >= t) for k in ans) > max_loss:
            break
        best = float(t)
    return best


def describe(rows: dict, scores: dict, t: float) -> str:
    un = " ".join(f"{q}->{c} {100 * (scores[(q, c)] >= t).mean():.1f}" for q, c in unanswerable_keys(rows))
    ans = " ".join(f"{q}/{c} {lost(rows[(q, c)][2], scores[(q, c)] >= t):.2f}" for q, c in answerable_keys(rows))
    return f"flagged % {un} | R@5 lost {ans}"


def candidates(lexical: bool) -> dict[str, tuple[Sequence[str], Callable]]:
    cols = LEXICAL_COLS if lexical else HYBRID_COLS
    out: dict[str, tuple[Sequence[str], Callable]] = {
        "logistic": (cols, fit_logistic),
    }
    for trees, leaves in ((100, 7), (300, 7), (200, 15), (400, 15), (300, 31), (600, 31), (400, 63)):
        out[f"trees {trees}x{leaves}"] = (cols, lambda x, y, w, t=trees, n=leaves: fit_trees(x, y, w, t, n))
    return out


def ship(rows: dict, cols: Sequence[str], trees: int, leaves: int, max_loss: float) -> tuple[TreeEnsemble, str]:
    """The trees fitted on all dev rows with the out-of-fold threshold folded into the bias."""
    oof = out_of_fold(rows, cols, lambda x, y, w: fit_trees(x, y, w, trees, leaves))
    t = threshold(rows, oof, max_loss)
    booster, score = fit_trees(*training_set(rows, cols, lambda k: np.ones(len(rows[k][0]), dtype=bool)), trees, leaves)
    flat = export(booster)
    model = TreeEnsemble(tuple(cols), flat.feature, flat.threshold, flat.left, flat.right, flat.value, flat.roots,
                         flat.depth, bias=-t)
    x = np.vstack([matrix(rows, k, cols) for k in answerable_keys(rows)[:1] + unanswerable_keys(rows)[:1]])
    walked = np.array([model.logit(dict(zip(cols, r, strict=True))) for r in x]) + t
    gap = float(np.abs(walked - score(x)).max())
    if gap > 1e-9:
        raise SystemExit(f"numpy tree walk differs from LightGBM by {gap:g}")
    return model, f"threshold {t:.4f} (logit), out of fold: {describe(rows, oof, t)}"


def held_out_check(rows: dict, cols: Sequence[str], trees: int, leaves: int, max_loss: float, catalog: str) -> str:
    """How the trees do on a catalog they never saw as unanswerable: fitted without its rows
    (the threshold by the same rule), out of fold."""
    oof = out_of_fold(rows, cols, lambda x, y, w: fit_trees(x, y, w, trees, leaves), held_out=catalog)
    t = threshold(rows, oof, max_loss)
    return f"{catalog} held out: {describe(rows, oof, t)}"


def main(argv: list[str] | None = None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--eval-dir", type=Path, default=EVAL_DIR)
    ap.add_argument("--loss", type=float, default=1.5, help="most R@5 points a dev set may lose out of fold")
    ap.add_argument("--trees", type=int, default=600)
    ap.add_argument("--leaves", type=int, default=31)
    ap.add_argument("--compare", action="store_true", help="print every candidate under the same rule")
    ap.add_argument("--write", action="store_true", help="save the hybrid trees to registry/search/data/")
    ap.add_argument("--held-out", metavar="CATALOG", help="also fit without this catalog's unanswerable rows")
    args = ap.parse_args(argv)
    e = require_eval_data(args.eval_dir)
    for lexical in (False, True):
        rows = load(e, default_out(not lexical), dense=not lexical)["rows"]
        label = "BM25-only search" if lexical else "hybrid search"
        if args.compare:
            for cand, (cols, fit) in candidates(lexical).items():
                oof = out_of_fold(rows, cols, fit)
                t = threshold(rows, oof, args.loss)
                print(f"{label}, {cand}: {describe(rows, oof, t)}", flush=True)
        model, text = ship(rows, LEXICAL_COLS if lexical else HYBRID_COLS, args.trees, args.leaves, args.loss)
        print(f"{label}, trees {args.trees}x{args.leaves}: {text}", flush=True)
        if args.held_out:
            cols = LEXICAL_COLS if lexical else HYBRID_COLS
            print("   " + held_out_check(rows, cols, args.trees, args.leaves, args.loss, args.held_out), flush=True)
        if args.write and not lexical:  # BM25-only search keeps its logistic model (the trees cost ~0.2 ms)
            model.save(DATA / "abstain.npz")
            print(f"   wrote {DATA / 'abstain.npz'}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
