"""How the "no tool fits" model was fitted: a logistic model over the search signals
(``registry.search.abstain``), on DEV data only.

    python bench/search_abstain_tune.py [--every 2] [--loss 1.5]

Dev data (``bench/search_tune.py``'s dev sets; no test query, no LiveMCPBench query is used):

* answerable: ToolLens train queries (every 4th) and the 20 % MetaTool dev slice, each over its
  own tools;
* unanswerable: the same queries over catalogs where they have no gold tool: ToolLens queries over
  the MetaTool tools and over the Docker MCP registry tools, MetaTool queries over the ToolLens
  tools and over the Docker MCP registry tools. Many of these do have a fitting tool there: in a
  hand-labelled random sample (``bench/abstain_labels.tsv``, see ``bench/README.md``) 24 of 108
  do ("weather update for the festival at ..." → WeatherTool, "how much is 20 USD in CAD" → a
  currency API): 24 of 84 ToolLens→MetaTool / MetaTool→ToolLens rows, none of the 24 →Docker rows.
  So the script also reports the *honest* figures: the pairings of another domain (ToolLens and
  MetaTool queries on the Docker MCP registry's developer/infrastructure tools) and the labelled
  rows with no fitting tool.

Training: unanswerable queries are positives; answerable ones are negatives weighted by their
R@5 (flagging a query whose gold tool was not in the top five anyway costs no R@5, so it does not
count). Hybrid search: one model over the lexical signals and one over the dense signals, weak
when both say so (a fitted joint model put most weight on query-word coverage and flagged a
quarter of the Chinese queries, whose words no English tool has); the two thresholds are the pair
flagging the most unanswerable queries while the worst dev set loses at most ``--loss`` R@5
points. BM25-only search: one model over the lexical signals. A two-fold check (fit on the ToolLens half,
evaluate on the MetaTool half and back) shows how well it carries to other data. Prints the
frozen ``Abstain(...)`` to paste into ``registry/search/abstain.py``.
"""

from __future__ import annotations

import argparse
import sys
from pathlib import Path

import numpy as np
from search_data import EVAL_DIR, load_tools, recall_at, require_eval_data, to_records
from search_hybrid import DEFAULT_CACHE, build_index
from search_tune import dev_sets

from registry.search import FEATURES, Abstain

LABELS = Path(__file__).resolve().parent / "abstain_labels.tsv"
LEX = (0, 1, 2, 3)  # registry.search.abstain.LEXICAL_FEATURES
DEN = (4, 5, 6, 7, 8, 9, 10)  # registry.search.abstain.DENSE_FEATURES
HONEST = {("tl", "docker"), ("mt", "docker")}
"""Pairings whose domains do not overlap (consumer APIs and plugins vs the Docker MCP registry's
developer and infrastructure servers): 0 of 24 hand-labelled queries have a fitting tool there."""


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
    emb = None
    if dense:  # query vectors shared by the three catalogs' indexes, kept on disk between runs
        from search_rerank import CachedQueryEmbedder

        emb = CachedQueryEmbedder(DEFAULT_CACHE / "rerank-query-vectors.pkl")
    for name, (records, q2id) in catalogs.items():
        indexes[name] = (build_index(records, dense=dense, query_cache=0, emb=emb, reranker=None)[0], q2id)
    data: dict = {"ans": {}, "un_by": {}}
    for qset in ("tl", "mt"):
        _, queries, qrels = sets[qset]
        queries = queries[::every]
        index, q2id = indexes[qset]
        data["ans"][qset] = np.array([v + [r] for v, r in collect(index, queries, q2id, qrels)])
        rows = []
        for other in [c for c in catalogs if c != qset]:
            index, q2id = indexes[other]
            pair = np.array([v + [r] for v, r in collect(index, queries, q2id, None)])
            data.setdefault("un_pair", {})[(qset, other)] = pair
            rows.append(pair)
        data["un_by"][qset] = np.vstack(rows)
    data["un"] = np.vstack(list(data["un_by"].values()))
    data["honest"] = np.vstack([v for k, v in data["un_pair"].items() if k in HONEST])
    # The hand-labelled sample (``bench/abstain_labels.tsv``): does a tool of the other catalog fit?
    queries = {qset: dict(sets[qset][1]) for qset in ("tl", "mt")}
    rows = []
    for line in LABELS.read_text(encoding="utf-8").splitlines()[1:]:
        qset, qid, catalog, fits, _text = line.split("\t")
        index, q2id = indexes[catalog]
        rows.append(collect(index, [(qid, queries[qset][qid])], q2id, None)[0][0] + [float(fits)])
    data["labelled"] = np.array(rows)
    if emb is not None:
        emb.save()
    return data


def weak_of(models: list[tuple[np.ndarray, float]], x: np.ndarray) -> np.ndarray:
    """Weak where every ``(model, threshold)`` says so."""
    out = np.ones(len(x), dtype=bool)
    for model, t in models:
        out &= prob(model, x) >= t
    return out


def score(models: list[tuple[np.ndarray, float]], data: dict) -> tuple[float, dict]:
    flagged = 100 * float(weak_of(models, data["un"][:, :-1]).mean())
    lost = {k: 100 * float((v[:, -1] * weak_of(models, v[:, :-1])).sum() / len(v)) for k, v in data["ans"].items()}
    return flagged, lost


def best_pair(models: list[np.ndarray], data: dict, max_loss: float) -> tuple[tuple[float, ...], float, dict]:
    """Thresholds (one per model) flagging the most unanswerable queries within ``max_loss``."""
    grid = np.linspace(0.3, 0.98, 35)
    best: tuple[tuple[float, ...], float, dict] = ((0.999,) * len(models), 0.0, {})
    for ts in (np.array(np.meshgrid(*[grid] * len(models))).reshape(len(models), -1).T):
        flagged, lost = score(list(zip(models, ts, strict=True)), data)
        if max(lost.values()) <= max_loss and flagged > best[1]:
            best = (tuple(float(t) for t in ts), flagged, lost)
    return best


def report(label: str, data: dict, groups: list[tuple[int, ...]], max_loss: float) -> list[np.ndarray]:
    """Fit one logistic model per feature group (weak when all say so), pick the thresholds."""
    models = [fit(data, cols) for cols in groups]
    ts, flagged, lost = best_pair(models, data, max_loss)
    print(f"{label}: thresholds {', '.join(f'{t:.2f}' for t in ts)}: unanswerable flagged {flagged:.1f} %, "
          "answerable R@5 lost " + ", ".join(f"{k} {v:.2f}" for k, v in lost.items()), flush=True)
    for bound in (0.5, 1.0, 2.0, 3.0, 5.0):
        _ts, fb, lb = best_pair(models, data, bound)
        print(f"   max loss <= {bound}: flagged {fb:.1f} % lost " + ", ".join(f"{k} {v:.2f}" for k, v in lb.items()))
    # Two-fold check: fit on one query set (its answerable + unanswerable), apply to the other.
    for train, test in (("tl", "mt"), ("mt", "tl")):
        half = {"ans": {train: data["ans"][train]}, "un": data["un_by"][train]}
        other = {"ans": {test: data["ans"][test]}, "un": data["un_by"][test]}
        ms = [fit(half, cols) for cols in groups]
        th, fh, lh = best_pair(ms, half, max_loss)
        fo, lo = score(list(zip(ms, th, strict=True)), other)
        print(f"   fit on {train} ({fh:.1f} % flagged, lost {lh.get(train, 0):.2f}) -> on {test}: flagged {fo:.1f} %, "
              f"lost {lo[test]:.2f}")
    chosen = list(zip(models, ts, strict=True))
    for (qset, cat), arr in data["un_pair"].items():
        print(f"   {qset} queries on the {cat} tools: flagged {100 * weak_of(chosen, arr[:, :-1]).mean():.1f} %"
              + (" (honest pairing)" if (qset, cat) in HONEST else ""))
    print(f"   honest pairings ({len(data['honest'])} queries): flagged "
          f"{100 * weak_of(chosen, data['honest'][:, :-1]).mean():.1f} %")
    lab = data["labelled"]
    weak = weak_of(chosen, lab[:, :-1])
    nofit = lab[:, -1] == 0
    print(
        f"   hand-labelled sample ({len(lab)} 'unanswerable' queries, {int((~nofit).sum())} of which do have a fitting "
        f"tool there): flagged {100 * weak[nofit].mean():.1f} % of those with no fitting tool, "
        f"{100 * weak[~nofit].mean():.1f} % of those with one"
    )
    out = []
    for model, cols, t in zip(models, groups, ts, strict=True):
        m = np.concatenate([[model[0] - np.log(t / (1 - t))], model[1:][list(cols)]])  # threshold into the bias
        print("   model over " + ", ".join(FEATURES[c] for c in cols) + ": (" + ", ".join(f"{v:.4g}" for v in m) + ")")
        out.append(m)
    return out


def main(argv: list[str] | None = None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--eval-dir", type=Path, default=EVAL_DIR)
    ap.add_argument("--every", type=int, default=2, help="use every N-th dev query")
    ap.add_argument("--loss", type=float, default=1.5, help="most R@5 points a dev set may lose")
    args = ap.parse_args(argv)
    print(f"features: {', '.join(FEATURES)}")
    args.eval_dir = require_eval_data(args.eval_dir)
    dense = gather(args.eval_dir, args.every, dense=True)
    hl, hd = report("hybrid (lexical model AND dense model)", dense, [LEX, DEN], args.loss)
    lex = gather(args.eval_dir, args.every, dense=False)
    (lx,) = report("lexical-only search", lex, [LEX], args.loss)

    def r(m: np.ndarray) -> tuple[float, ...]:
        return tuple(round(float(v), 4) for v in m)

    ab = Abstain(lexical=r(hl), dense=r(hd), lexical_only=r(lx))
    print(repr(ab))
    return 0


if __name__ == "__main__":
    sys.exit(main())
