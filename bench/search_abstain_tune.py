"""How the "no tool fits" model was fitted: a logistic model over the search signals
(``registry.search.abstain``), on DEV data only.

    python bench/search_abstain_tune.py [--every 2] [--loss 1.5]

Dev data (``bench/search_tune.py``'s dev sets; no test query, no LiveMCPBench query is used):

* answerable: ToolLens train queries (every 4th) and the 20 % MetaTool dev slice, each over its
  own tools;
* unanswerable: the same queries over catalogs where they have no gold tool: ToolLens queries over
  the MetaTool tools and over the Docker MCP registry tools, MetaTool queries over the ToolLens
  tools and over the Docker MCP registry tools. Many of these do have a fitting tool there: in a
  hand-labelled random sample (``bench/abstain_labels.tsv``: 25 ToolLens queries on the MetaTool
  tools, 25 MetaTool queries on the ToolLens tools) 15 of 50 (30 %) do ("weather update for the
  festival at ..." → WeatherTool, "how much is 20 USD in CAD" → a currency API), so about 70 %
  is the most a perfect "no tool fits" could flag on this protocol.

Training: unanswerable queries are positives; answerable ones are negatives weighted by their
R@5 (flagging a query whose gold tool was not in the top five anyway costs no R@5, so it does not
count). The threshold is the one flagging the most unanswerable queries while the worst dev set
loses at most ``--loss`` R@5 points. Two models: hybrid (all features) and lexical (BM25
features only, for indexes without the dense part). A two-fold check (fit on the ToolLens half,
evaluate on the MetaTool half and back) shows how well it carries to other data. Prints the
frozen ``Abstain(...)`` to paste into ``registry/search/abstain.py``.
"""

from __future__ import annotations

import argparse
import sys
from pathlib import Path

import numpy as np
from search_data import EVAL_DIR, load_tools, recall_at, to_records
from search_hybrid import build_index
from search_tune import dev_sets

from registry.search import FEATURES, Abstain

LABELS = Path(__file__).resolve().parent / "abstain_labels.tsv"
DENSE_FEATURES = tuple(i for i, f in enumerate(FEATURES))
LEXICAL_FEATURES = tuple(i for i, f in enumerate(FEATURES) if f in ("bm25_confidence", "coverage", "coverage5", "log1p_tokens"))


def collect(index, queries, q2id, qrels) -> list[tuple[list[float], float]]:
    """Per query: (signal vector, R@5 of the query; -1 when ``qrels`` is None: unanswerable)."""
    out = []
    for qid, text in queries:
        res = index.search(text, limit=5)
        ranked = [q2id[h.tool.qualified_name] for h in res.hits]
        r5 = recall_at(ranked, qrels[qid], 5) if qrels is not None else -1.0
        out.append((res.signals.vector(), r5))
    return out


def fit_logistic(x: np.ndarray, y: np.ndarray, w: np.ndarray, l2: float = 1e-2, iters: int = 50) -> np.ndarray:
    """Weighted L2-regularised logistic regression by Newton's method on standardised features;
    returns ``(bias, weights...)`` on the raw features."""
    mu, sd = x.mean(0), x.std(0)
    sd[sd < 1e-9] = 1.0
    xs = np.hstack([np.ones((len(x), 1)), (x - mu) / sd])
    beta = np.zeros(xs.shape[1])
    reg = l2 * np.eye(xs.shape[1])
    reg[0, 0] = 0.0
    for _ in range(iters):
        p = 1 / (1 + np.exp(-np.clip(xs @ beta, -60, 60)))
        g = xs.T @ (w * (p - y)) + reg @ beta
        h = (xs * (w * p * (1 - p))[:, None]).T @ xs + reg
        step = np.linalg.solve(h, g)
        beta -= step
        if np.abs(step).max() < 1e-8:
            break
    raw = beta[1:] / sd
    return np.concatenate([[beta[0] - float(raw @ mu)], raw])


def prob(model: np.ndarray, x: np.ndarray) -> np.ndarray:
    return 1 / (1 + np.exp(-np.clip(model[0] + x @ model[1:], -60, 60)))


def evaluate(model: np.ndarray, data: dict, threshold: float) -> tuple[float, dict]:
    """(flagged % of unanswerable, R@5 points lost per answerable set)."""
    un = data["un"]
    flagged = 100 * float((prob(model, un[:, :-1]) >= threshold).mean())
    lost = {}
    for name, arr in data["ans"].items():
        weak = prob(model, arr[:, :-1]) >= threshold
        lost[name] = 100 * float((arr[:, -1] * weak).sum() / len(arr))
    return flagged, lost


def best_threshold(model: np.ndarray, data: dict, max_loss: float) -> tuple[float, float, dict]:
    best = (0.999, 0.0, {})
    for t in np.linspace(0.02, 0.98, 97):
        flagged, lost = evaluate(model, data, t)
        if max(lost.values()) <= max_loss and flagged > best[1]:
            best = (float(t), flagged, lost)
    return best


def fit(data: dict, cols: tuple[int, ...]) -> np.ndarray:
    xs, ys, ws = [], [], []
    un = data["un"]
    xs.append(un[:, :-1])
    ys.append(np.ones(len(un)))
    ws.append(np.full(len(un), 1.0 / len(un)))
    n_sets = len(data["ans"])
    for arr in data["ans"].values():
        xs.append(arr[:, :-1])
        ys.append(np.zeros(len(arr)))
        ws.append(arr[:, -1] / max(1e-9, arr[:, -1].sum()) / n_sets)
    x = np.vstack(xs)
    keep = np.zeros(x.shape[1], dtype=bool)
    keep[list(cols)] = True
    model = np.zeros(1 + x.shape[1])
    sub = fit_logistic(x[:, keep], np.concatenate(ys), np.concatenate(ws) * len(x))
    model[0] = sub[0]
    model[1:][keep] = sub[1:]
    return model


def gather(e: Path, every: int, dense: bool) -> dict:
    sets = dev_sets(e)
    docker = to_records(load_tools(e / "docker-mcp-registry/normalized/tools.jsonl"))
    catalogs = {"tl": sets["tl"][0], "mt": sets["mt"][0], "docker": docker}
    indexes = {}
    for name, (records, q2id) in catalogs.items():
        indexes[name] = (build_index(records, dense=dense, query_cache=100_000)[0], q2id)
    data: dict = {"ans": {}, "un_by": {}}
    for qset in ("tl", "mt"):
        _, queries, qrels = sets[qset]
        queries = queries[::every]
        index, q2id = indexes[qset]
        data["ans"][qset] = np.array([v + [r] for v, r in collect(index, queries, q2id, qrels)])
        rows = []
        for other in [c for c in catalogs if c != qset]:
            index, q2id = indexes[other]
            rows.extend(v + [r] for v, r in collect(index, queries, q2id, None))
        data["un_by"][qset] = np.array(rows)
    data["un"] = np.vstack(list(data["un_by"].values()))
    # The hand-labelled sample (``bench/abstain_labels.tsv``): does a tool of the other catalog fit?
    queries = {qset: dict(sets[qset][1]) for qset in ("tl", "mt")}
    rows = []
    for line in LABELS.read_text(encoding="utf-8").splitlines()[1:]:
        qset, qid, catalog, fits, _text = line.split("\t")
        index, q2id = indexes[catalog]
        rows.append(collect(index, [(qid, queries[qset][qid])], q2id, None)[0][0] + [float(fits)])
    data["labelled"] = np.array(rows)
    return data


def report(label: str, data: dict, cols: tuple[int, ...], max_loss: float) -> np.ndarray:
    model = fit(data, cols)
    t, flagged, lost = best_threshold(model, data, max_loss)
    print(f"{label}: threshold {t:.2f}: unanswerable flagged {flagged:.1f} %, answerable R@5 lost "
          + ", ".join(f"{k} {v:.2f}" for k, v in lost.items()), flush=True)
    for bound in (0.5, 1.0, 2.0, 3.0, 5.0):
        tb, fb, lb = best_threshold(model, data, bound)
        print(f"   max loss <= {bound}: threshold {tb:.2f} flagged {fb:.1f} % lost "
              + ", ".join(f"{k} {v:.2f}" for k, v in lb.items()))
    # Two-fold check: fit on one query set (its answerable + unanswerable), apply to the other.
    for train, test in (("tl", "mt"), ("mt", "tl")):
        half = {"ans": {train: data["ans"][train]}, "un": data["un_by"][train]}
        other = {"ans": {test: data["ans"][test]}, "un": data["un_by"][test]}
        m = fit(half, cols)
        th, fh, lh = best_threshold(m, half, max_loss)
        fo, lo = evaluate(m, other, th)
        print(f"   fit on {train} ({fh:.1f} % flagged, lost {lh.get(train, 0):.2f}) -> on {test}: flagged {fo:.1f} %, "
              f"lost {lo[test]:.2f}")
    lab = data["labelled"]
    weak = prob(model, lab[:, :-1]) >= t
    nofit = lab[:, -1] == 0
    print(f"   hand-labelled sample ({len(lab)} 'unanswerable' queries, {int((~nofit).sum())} of which do have a fitting "
          f"tool there): flagged {100 * weak[nofit].mean():.1f} % of those with no fitting tool, "
          f"{100 * weak[~nofit].mean():.1f} % of those with one")
    model[0] -= np.log(t / (1 - t))  # the threshold folded into the bias: weak when P >= 0.5
    print("   model: (" + ", ".join(f"{v:.4g}" for v in model) + ")")
    return model


def main(argv: list[str] | None = None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--eval-dir", type=Path, default=EVAL_DIR)
    ap.add_argument("--every", type=int, default=2, help="use every N-th dev query")
    ap.add_argument("--loss", type=float, default=1.5, help="most R@5 points a dev set may lose")
    args = ap.parse_args(argv)
    print(f"features: {', '.join(FEATURES)}")
    dense = gather(args.eval_dir, args.every, dense=True)
    d = report("hybrid", dense, DENSE_FEATURES, args.loss)
    lex = gather(args.eval_dir, args.every, dense=False)
    lx = report("lexical", lex, LEXICAL_FEATURES, args.loss)
    ab = Abstain(dense=tuple(round(float(v), 4) for v in d), lexical=tuple(round(float(v), 4) for v in lx))
    print(repr(ab))
    return 0


if __name__ == "__main__":
    sys.exit(main())
