"""Train the learned poisoned-definition probe (``registry/safety/data/probe.npz``).

    .venv/bin/python bench/definition_scan_train.py [--eval-dir ../shared/eval-data] [--write]
        [--synthetic-split] [--leave-out blind4]

Data (every text unit of a tool, :func:`registry.safety.learned.definition_units`):

* positives: every case of ``tests/registry/fixtures/poisoned_tools.json``, the poisoned cases of
  the spent blind sets v2, v3 and v4, and the synthetic poisoned tools of
  ``bench/definition_scan_synth.py`` (9 attack moves × 18 languages × 5 placements);
* negatives: the even-numbered real tools of ``<eval-dir>`` from the *shippable* corpora
  (MetaTool, LiveMCPBench, the Docker MCP registry; ToolLens states no licence, so it is only
  evaluated on, never trained on), the benign cases of the blind sets, the synthetic honest tools
  (the same 18 languages) and the cover units of poisoned tools;
* the odd-numbered real tools and every ToolLens tool are never trained on: their false-positive
  rates are the report.

Positives: a synthetic tool's payload unit is known (the unit carrying the payload text); a
fixture's is not, so those are chosen as in multiple-instance learning (MI-SVM, Andrews et al.,
NIPS 2002): round 1 trains on every unit of a poisoned tool, later rounds on its highest-scoring unit
(a poisoned tool's units under ``MIN_ATTACK_WORDS`` words are its cover, negatives). Features: the
multilingual USE embedding (:class:`host.search.embedder.UseEmbedder`, 512-d); model: scikit-learn
``LogisticRegression`` (``class_weight="balanced"``, fixed ``C``, ``random_state=0``); deterministic.
Tools are scored on :func:`registry.safety.learned.scored_units` (English prose in descriptions is
left to the rules), as the shipped scorer does. Threshold: the lowest score at which at most
:data:`MAX_EVEN_FP` of the even shippable real tools
(tool score = highest unit score) are held, each scored *out of fold* (:data:`FOLDS` models, each
trained without a quarter of them): a threshold set on the training negatives' own scores held three
times more of the unseen odd half than promised.

``--synthetic-split`` trains without the synthetic tools of
:data:`definition_scan_synth.HELD_OUT_LANGUAGES` and reports on them: recall on languages the probe
never saw an attack (or an honest sentence) in. ``--leave-out blind4`` trains without blind v4 and
reports on it. ``--write`` stores the model (only without a held-out part). Embeddings are cached in
``/tmp/toolhost-probe-cache-<model>.npz`` between runs.
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
from definition_scan_synth import HELD_OUT_LANGUAGES, synth_tools  # noqa: E402
from search_data import EVAL_DIR  # noqa: E402

from registry.safety.definition_scan import scan_definition  # noqa: E402
from registry.safety.learned import definition_units, scored_units  # noqa: E402

TRAIN_SETS = {"blind2": FIXTURE_DIR / "poisoned_holdout_v2.json", "blind3": FIXTURE_DIR / "poisoned_holdout_v3.json",
              "blind4": FIXTURE_DIR / "poisoned_holdout_v4.json"}
"""The blind sets trained on (spent); a later blind set is never listed here before it is measured."""
UNSHIPPABLE = ("tl_", "g3_")
"""Id prefixes of the ToolLens corpora (no licence stated): evaluated on, never trained on."""
PROBE_PATH = ROOT / "registry" / "safety" / "data" / "probe.npz"
MAX_EVEN_FP = 0.0
"""Share of the even real tools the threshold may hold (out of fold). 0: just above the highest; at
0.13 % the probe also held 7/240 honest tools in the held-out languages (``--synthetic-split``)."""
C = 3.0
"""Inverse regularisation, chosen with ``--synthetic-split --leave-out blind4`` (0.3, 1, 3): at 3 the
unseen languages lose 2/240 against 1 and the odd real half holds half as many tools."""
MIL_ROUNDS = 3
MIN_ATTACK_WORDS = 5
SYNTH_PER_LANGUAGE = 40
FOLDS = 4


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


def payload_units(tool: dict, cover: set[str]) -> tuple[list[str], list[str]]:
    """(units carrying the payload, cover units) of a synthetic poisoned tool: a unit is cover when
    its text is one of the honest cover sentences' units."""
    units = [u for _, u in definition_units(tool)]
    return [u for u in units if u not in cover], [u for u in units if u in cover]


def main(argv: list[str] | None = None) -> int:
    from sklearn.linear_model import LogisticRegression  # lazy: a training-only dependency

    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--eval-dir", type=Path, default=EVAL_DIR)
    ap.add_argument("--leave-out", choices=sorted(TRAIN_SETS), default=None)
    ap.add_argument("--synthetic-split", action="store_true",
                    help=f"keep the synthetic tools in {', '.join(HELD_OUT_LANGUAGES)} out of training; report on them")
    ap.add_argument("--c", type=float, default=C, help="inverse regularisation")
    ap.add_argument("--max-fp", type=float, default=MAX_EVEN_FP, help="share of even real tools held at most")
    ap.add_argument("--show-fp", action="store_true", help="print the units of real tools held")
    ap.add_argument("--write", action="store_true", help=f"store the model in {PROBE_PATH.relative_to(ROOT)}")
    args = ap.parse_args(argv)

    fixtures = json.loads(FIXTURES.read_text(encoding="utf-8"))["cases"]
    blind = {name: json.loads(p.read_text(encoding="utf-8"))["cases"] for name, p in TRAIN_SETS.items()}
    real = real_tools(args.eval_dir)
    shippable = [(i, {k: v for k, v in t.items() if k != "id"}) for i, t in enumerate(real)
                 if not t["id"].startswith(UNSHIPPABLE)]
    even = [t for i, t in shippable if i % 2 == 0]
    odd = [t for i, t in shippable if i % 2 == 1]
    toollens = [{k: v for k, v in t.items() if k != "id"} for t in real if t["id"].startswith(UNSHIPPABLE)]
    synth = synth_tools(seed=0, per_language=SYNTH_PER_LANGUAGE)
    held_synth = [s for s in synth if args.synthetic_split and s["lang"] in HELD_OUT_LANGUAGES]
    train_synth = [s for s in synth if s not in held_synth]

    pos = [c["tool"] for c in fixtures]
    neg = list(even)
    for name, cases in blind.items():
        if name != args.leave_out:
            pos += [c["tool"] for c in cases if c["poisoned"]]
            neg += [c["tool"] for c in cases if not c["poisoned"]]
    neg += [s["tool"] for s in train_synth if not s["poisoned"]]
    every = pos + neg + odd + toollens + [s["tool"] for s in synth] + [c["tool"] for cs in blind.values() for c in cs]
    vectors, model_id = embed_all([u for t in every for _, u in definition_units(t)])

    def group(tool: dict) -> np.ndarray:
        units = definition_units(tool)
        return np.stack([vectors[_key(u)] for _, u in units]) if units else np.zeros((0, 512), np.float32)

    def scored(tool: dict) -> np.ndarray:
        """The vectors of the units the shipped scorer scores (:func:`scored_units`)."""
        units = scored_units(tool)
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
    honest_units = {u for s in synth if not s["poisoned"] for _, u in definition_units(s["tool"])}
    synth_pos = []
    for s in train_synth:
        if s["poisoned"]:
            payload, cover_units = payload_units(s["tool"], honest_units)
            synth_pos += [vectors[_key(u)] for u in payload]
            cover += [vectors[_key(u)] for u in cover_units]
    x_cover = np.stack(cover)

    def fit(negatives: list[dict]):
        """The MIL-trained model with ``negatives`` as the negative tools (plus every cover unit)."""
        x_neg = np.concatenate([g for g in (group(t) for t in negatives) if len(g)] + [x_cover])
        model = None
        for _ in range(MIL_ROUNDS):
            if model is None:
                x_pos = np.concatenate(pos_units)
            else:  # the unit of each poisoned tool that looks most like an attack
                x_pos = np.stack([g[int(np.argmax(model.predict_proba(g)[:, 1]))] for g in pos_units])
            x_pos = np.concatenate([x_pos, np.stack(synth_pos)])
            x = np.concatenate([x_pos, x_neg])
            y = np.concatenate([np.ones(len(x_pos)), np.zeros(len(x_neg))])
            model = LogisticRegression(C=args.c, class_weight="balanced", max_iter=5000, random_state=0).fit(x, y)
        return model

    # threshold from out-of-fold scores: each even real tool scored by a model that never saw it
    # (scores of training negatives are lower than those of unseen tools: a threshold set on them
    # holds several times more of the odd half than it promised)
    others = [t for t in neg if not any(t is e for e in even)]
    oof = []
    for fold in range(FOLDS):
        held = [t for j, t in enumerate(even) if j % FOLDS == fold]
        kept = [t for j, t in enumerate(even) if j % FOLDS != fold]
        oof += tool_scores(fit(kept + others), [scored(t) for t in held]).tolist()
        print(f"# fold {fold + 1}/{FOLDS}", file=sys.stderr)
    model = fit(neg)
    even_scores = np.sort(np.array(oof))[::-1]
    allowed = int(args.max_fp * len(even_scores))
    threshold = float(np.nextafter(even_scores[allowed], 1.0))  # the (allowed+1)-th highest is not held
    print(f"threshold {threshold:.4f} (held: {allowed} of {len(even)} even shippable real tools at most, out of fold), "
          f"C={args.c}")
    rows = [("fixtures (train)", pos[:len(fixtures)])]
    for name, cases in blind.items():
        tag = "held out" if name == args.leave_out else "train"
        rows.append((f"{name} poisoned ({tag})", [c["tool"] for c in cases if c["poisoned"]]))
        rows.append((f"{name} benign ({tag})", [c["tool"] for c in cases if not c["poisoned"]]))
    for tag, part in (("train", [s for s in train_synth]), ("held-out languages", held_synth)):
        if part:
            rows.append((f"synthetic poisoned ({tag})", [s["tool"] for s in part if s["poisoned"]]))
            rows.append((f"synthetic honest ({tag})", [s["tool"] for s in part if not s["poisoned"]]))
    rows += [("real even, shippable (train)", even), ("real odd, shippable (report)", odd),
             ("real ToolLens (never trained)", toollens)]
    print(f"{'set':40} {'learned':>8} {'rules':>6} {'both':>6} {'of':>6}")
    for name, tools in rows:
        learned = tool_scores(model, [scored(t) for t in tools]) >= threshold
        rules = np.array([scan_definition(t).suspicious for t in tools])
        print(f"{name:40} {int(learned.sum()):8d} {int(rules.sum()):6d} {int((rules | learned).sum()):6d} "
              f"{len(tools):6d}")
    if args.show_fp:
        for name, tools in (("odd", odd), ("ToolLens", toollens)):
            for t in tools:
                units = scored_units(t)
                scores = model.predict_proba(scored(t))[:, 1] if units else []
                for (path, u), sc in zip(units, scores, strict=True):
                    if sc >= threshold:
                        print(f"FP {name} {t['name']} {path} {sc:.3f}: {u[:200]!r}")
    if args.write and args.leave_out is None and not args.synthetic_split:
        PROBE_PATH.parent.mkdir(parents=True, exist_ok=True)
        np.savez_compressed(PROBE_PATH, weights=model.coef_[0].astype(np.float32), bias=np.float64(model.intercept_[0]),
                            threshold=np.float64(threshold), model_id=np.array(model_id))
        print(f"wrote {PROBE_PATH.relative_to(ROOT)}")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
