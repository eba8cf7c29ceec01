"""Train the learned poisoned-definition probe (``registry/safety/data/probe.npz``).

    .venv/bin/python bench/definition_scan_train.py [--eval-dir ../shared/eval-data] [--write]
        [--leave-out blind3]

Data (tool level; every text unit of a tool, :func:`registry.safety.learned.definition_units`):

* positives: every case of ``tests/registry/fixtures/poisoned_tools.json`` and the poisoned cases
  of blind v2 and blind v3 (both spent, so training data now);
* negatives: the even-numbered real tools of ``<eval-dir>`` (same order as
  ``bench/definition_scan.py``) and the benign cases of blind v2 / v3;
* the odd-numbered real tools are never trained on: their false-positive rate is the report.

Only the tool is labelled, not the unit that carries the attack, so positives are chosen as in
multiple-instance learning (MI-SVM, Andrews et al., NIPS 2002): round 1 trains on every unit of a
poisoned tool, later rounds on its highest-scoring unit (plus every unit of a negative tool as a
negative; a poisoned tool's units under ``MIN_ATTACK_WORDS`` words are its cover, negatives).
Features: the multilingual USE embedding (:class:`host.search.embedder.UseEmbedder`,
512-d); model: scikit-learn ``LogisticRegression`` (``class_weight="balanced"``, fixed ``C``,
``random_state=0``); the run is deterministic. Threshold: the lowest score at which at most
0.3 % of the even real tools (tool score = highest unit score) are held.

``--leave-out blind3`` trains without blind v3 and reports on it: an honest estimate of recall
on a set of unseen phrasings. ``--write`` stores the model (only without ``--leave-out``).
Embeddings are cached in ``/tmp/toolhost-probe-cache-<model>.npz`` between runs.
"""

from __future__ import annotations

import argparse
import hashlib
import json
import sys
from pathlib import Path

import numpy as np

ROOT = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(ROOT))
sys.path.insert(0, str(ROOT / "bench"))

from definition_scan import FIXTURE_DIR, FIXTURES, real_tools  # noqa: E402
from search_data import EVAL_DIR  # noqa: E402

from registry.safety.learned import definition_units  # noqa: E402

TRAIN_SETS = {"blind2": FIXTURE_DIR / "poisoned_holdout_v2.json", "blind3": FIXTURE_DIR / "poisoned_holdout_v3.json"}
"""The blind sets trained on (spent); a later blind set is never listed here."""
PROBE_PATH = ROOT / "registry" / "safety" / "data" / "probe.npz"
MAX_EVEN_FP = 0.003
C = 3.0
"""Inverse regularisation, chosen with ``--leave-out blind3`` (1, 3, 10, 30, 100; hashed character
n-grams beside USE held 0.65–3.2 % of the odd real tools and were dropped). At 3, with short units
of poisoned tools as negatives: 0.30 % of the odd real tools held, rules-alone recall on the
left-out set 22/40 → 31/40 with the probe (benign cases held 4/40 → 12/40)."""
MIL_ROUNDS = 3
MIN_ATTACK_WORDS = 5


def _key(text: str) -> str:
    return hashlib.sha1(text.encode("utf-8")).hexdigest()


def embed_all(texts: list[str]) -> tuple[dict[str, np.ndarray], str]:
    """``{sha1(text): vector}`` for every text (cached on disk) and the model id."""
    from host.search.embedder import UseEmbedder

    embedder = UseEmbedder()
    cache_path = Path(f"/tmp/toolhost-probe-cache-{_key(embedder.model_id)[:8]}.npz")
    cache: dict[str, np.ndarray] = {}
    if cache_path.exists():
        with np.load(cache_path) as z:
            cache = dict(zip(z["keys"].tolist(), z["vectors"], strict=True))
    todo = sorted({t for t in texts if _key(t) not in cache})
    for i in range(0, len(todo), 256):
        batch = todo[i:i + 256]
        for t, v in zip(batch, embedder.embed(batch), strict=True):
            cache[_key(t)] = v
        print(f"# embedded {min(i + 256, len(todo))}/{len(todo)}", file=sys.stderr)
    if todo:
        keys = sorted(cache)
        np.savez(cache_path, keys=np.array(keys), vectors=np.stack([cache[k] for k in keys]))
    return cache, embedder.model_id


def tool_scores(model, groups: list[np.ndarray]) -> np.ndarray:
    return np.array([model.predict_proba(g)[:, 1].max() if len(g) else 0.0 for g in groups])


def main(argv: list[str] | None = None) -> int:
    from sklearn.linear_model import LogisticRegression  # lazy: a training-only dependency

    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--eval-dir", type=Path, default=EVAL_DIR)
    ap.add_argument("--leave-out", choices=sorted(TRAIN_SETS), default=None)
    ap.add_argument("--write", action="store_true", help=f"store the model in {PROBE_PATH.relative_to(ROOT)}")
    args = ap.parse_args(argv)

    fixtures = json.loads(FIXTURES.read_text(encoding="utf-8"))["cases"]
    blind = {name: json.loads(p.read_text(encoding="utf-8"))["cases"] for name, p in TRAIN_SETS.items()}
    real = [{k: v for k, v in t.items() if k != "id"} for t in real_tools(args.eval_dir)]

    pos = [c["tool"] for c in fixtures]
    neg = [t for i, t in enumerate(real) if i % 2 == 0]
    for name, cases in blind.items():
        if name != args.leave_out:
            pos += [c["tool"] for c in cases if c["poisoned"]]
            neg += [c["tool"] for c in cases if not c["poisoned"]]
    odd = [t for i, t in enumerate(real) if i % 2 == 1]
    even = [t for i, t in enumerate(real) if i % 2 == 0]
    every = pos + neg + odd + [c["tool"] for cases in blind.values() for c in cases]
    vectors, model_id = embed_all([u for t in every for _, u in definition_units(t)])

    def group(tool: dict) -> np.ndarray:
        units = definition_units(tool)
        return np.stack([vectors[_key(u)] for _, u in units]) if units else np.zeros((0, 512), np.float32)

    # an attack needs words: a poisoned tool's units shorter than MIN_ATTACK_WORDS ("Weather.", "city")
    # are its cover, not its payload, and count as negatives (else the topic of the fixtures is learned)
    pos_units, cover = [], []
    for t in pos:
        units = definition_units(t)
        long = [vectors[_key(u)] for _, u in units if len(u.split()) >= MIN_ATTACK_WORDS]
        cover += [vectors[_key(u)] for _, u in units if len(u.split()) < MIN_ATTACK_WORDS]
        if long:
            pos_units.append(np.stack(long))
    x_neg = np.concatenate([g for g in (group(t) for t in neg) if len(g)] + [np.stack(cover)])
    model = None
    for rnd in range(MIL_ROUNDS):
        if model is None:
            x_pos = np.concatenate(pos_units)
        else:  # the unit of each poisoned tool that looks most like an attack
            x_pos = np.stack([g[int(np.argmax(model.predict_proba(g)[:, 1]))] for g in pos_units])
        x = np.concatenate([x_pos, x_neg])
        y = np.concatenate([np.ones(len(x_pos)), np.zeros(len(x_neg))])
        model = LogisticRegression(C=C, class_weight="balanced", max_iter=5000, random_state=0).fit(x, y)
        print(f"# MIL round {rnd + 1}: {len(x_pos)} positive units, {len(x_neg)} negative units", file=sys.stderr)

    even_scores = np.sort(tool_scores(model, [group(t) for t in even]))[::-1]
    allowed = int(MAX_EVEN_FP * len(even_scores))
    threshold = float(np.nextafter(even_scores[allowed], 1.0))  # the (allowed+1)-th highest is not held
    print(f"threshold {threshold:.4f} (held: {allowed} of {len(even)} even real tools at most)")
    rows = [("fixtures (train)", pos[:len(fixtures)], True)]
    for name, cases in blind.items():
        tag = "held out" if name == args.leave_out else "train"
        rows.append((f"{name} poisoned ({tag})", [c["tool"] for c in cases if c["poisoned"]], True))
        rows.append((f"{name} benign ({tag})", [c["tool"] for c in cases if not c["poisoned"]], False))
    rows += [("real even (train)", even, False), ("real odd (report)", odd, False)]
    print(f"{'set':38} {'held':>6} {'of':>6} {'%':>8}")
    for name, tools, _ in rows:
        held = int((tool_scores(model, [group(t) for t in tools]) >= threshold).sum())
        print(f"{name:38} {held:6d} {len(tools):6d} {100.0 * held / len(tools):8.2f}")
    if args.leave_out is not None:
        from registry.safety.definition_scan import scan_definition

        for what, poisoned in (("poisoned", True), ("benign", False)):
            tools = [c["tool"] for c in blind[args.leave_out] if c["poisoned"] is poisoned]
            learned = tool_scores(model, [group(t) for t in tools]) >= threshold
            rules = np.array([scan_definition(t).suspicious for t in tools])
            print(f"{args.leave_out + ' ' + what + ', rules / rules+learned':38} {int(rules.sum()):6d} "
                  f"{int((rules | learned).sum()):6d} of {len(tools)}")
    if args.write and args.leave_out is None:
        PROBE_PATH.parent.mkdir(parents=True, exist_ok=True)
        np.savez_compressed(PROBE_PATH, weights=model.coef_[0].astype(np.float32), bias=np.float64(model.intercept_[0]),
                            threshold=np.float64(threshold), model_id=np.array(model_id))
        print(f"wrote {PROBE_PATH.relative_to(ROOT)}")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
