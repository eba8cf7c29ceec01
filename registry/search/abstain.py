""""No tool fits": the calibrated decision over a free-text search's :class:`Signals`.

:class:`Abstain` turns the signals (``registry.search.abstain_signals``) into a "weak" flag with
models behind the :class:`NoFitModel` seam - :class:`Logistic` (weights in this file) and
:class:`TreeEnsemble` (gradient-boosted trees in ``registry/search/data/abstain.npz``) - fitted on
DEV data only (``bench/search_abstain_tune.py``), then frozen. Pure apart from reading the
packaged trees once, at import.
"""

from __future__ import annotations

import math
from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from importlib import resources
from pathlib import Path
from typing import Protocol, runtime_checkable

import numpy as np

from registry.search.abstain_signals import FEATURES, Signals
from registry.search.trees import leaf_sums

__all__ = [
    "DEFAULT_ABSTAIN",
    "DENSE_FEATURES",
    "FEATURES",
    "LEXICAL_FEATURES",
    "PREVIOUS_ABSTAIN",
    "TREES_MIN_TOOLS",
    "Abstain",
    "Logistic",
    "NoFitModel",
    "Signals",
    "TreeEnsemble",
    "load_tree_ensemble",
    "packaged_tree_ensemble",
]

LEXICAL_FEATURES = FEATURES[:4]
"""What the first lexical models read (the first four of :data:`FEATURES`)."""
DENSE_FEATURES = FEATURES[4:11]
"""What the first dense model read (the first model's cosine signals and whether the lexical and
dense parts agree on the best tool)."""


def _sigmoid(z: float) -> float:
    return 1.0 / (1.0 + math.exp(-max(-60.0, min(60.0, z))))


@runtime_checkable
class NoFitModel(Protocol):
    """One model of :class:`Abstain`: the probability (0..1) that no tool fits, from
    :meth:`Signals.features`; it says "no fit" at 0.5 or more (thresholds are folded in)."""

    def probability(self, features: Mapping[str, float]) -> float: ...


@dataclass(frozen=True)
class Logistic:
    """One logistic model over named features: ``P(no fit) = sigmoid(bias + Σ w·feature)``; it
    says "no fit" when that is at least 0.5 (the threshold is folded into ``bias``).

    Attributes:
        bias: the intercept.
        weights: ``(feature name, weight)`` pairs, names from :data:`FEATURES`.

    Raises:
        ValueError: a name is not a feature.
    """

    bias: float = 0.0
    weights: tuple[tuple[str, float], ...] = ()

    def __post_init__(self) -> None:
        unknown = [name for name, _w in self.weights if name not in FEATURES]
        if unknown:
            raise ValueError(f"Logistic model reads unknown feature(s) {', '.join(unknown)}; "
                             f"known: {', '.join(FEATURES)}")

    @classmethod
    def over(cls, names: Sequence[str], numbers: Sequence[float]) -> Logistic:
        """The model ``(bias, w_1, ..., w_k)`` over the features ``names`` (k of them).

        Raises:
            ValueError: ``numbers`` is not one longer than ``names``, or a name is unknown."""
        if len(numbers) != len(names) + 1:
            raise ValueError(f"a logistic model over {len(names)} features needs {len(names) + 1} numbers "
                             f"(bias + one weight per feature), got {len(numbers)}")
        return cls(float(numbers[0]), tuple((n, float(w)) for n, w in zip(names, numbers[1:], strict=True)))

    def probability(self, features: Mapping[str, float]) -> float:
        """``P(no fit)`` for :meth:`Signals.features`."""
        return _sigmoid(self.bias + sum(w * features[name] for name, w in self.weights))


@dataclass(frozen=True)
class TreeEnsemble:
    """Gradient-boosted binary trees over named features, as flat node arrays:
    ``P(no fit) = sigmoid(bias + Σ leaf values)`` (LightGBM's binary objective; ``bias`` also
    holds the folded-in threshold). Walking every tree at once takes at most ``depth`` vectorised
    steps over the trees not at a leaf yet (about 0.2 ms CPU for the shipped 600 trees).

    Attributes:
        features: the feature each column of ``feature`` indexes (names from :data:`FEATURES`).
        feature, threshold, left, right, value: per node; an inner node goes left when
            ``x[feature] <= threshold`` (LightGBM's numerical split without missing values); a leaf
            has ``feature == -1`` and its score in ``value``.
        roots: the first node of each tree.
        depth: the deepest tree's number of levels.
        bias: added to the sum of leaf values.

    Raises:
        ValueError: unknown feature names, or node arrays of different lengths.
    """

    features: tuple[str, ...]
    feature: np.ndarray
    threshold: np.ndarray
    left: np.ndarray
    right: np.ndarray
    value: np.ndarray
    roots: np.ndarray
    depth: int
    bias: float = 0.0

    def __post_init__(self) -> None:
        unknown = [name for name in self.features if name not in FEATURES]
        if unknown:
            raise ValueError(f"tree model reads unknown feature(s) {', '.join(unknown)}: retrain it with "
                             "bench/search_abstain_tune.py")
        sizes = {len(a) for a in (self.feature, self.threshold, self.left, self.right, self.value)}
        if len(sizes) != 1:
            raise ValueError(f"tree model node arrays differ in length: {sorted(sizes)}")

    def logit(self, features: Mapping[str, float]) -> float:
        """``bias`` plus every tree's leaf value for these features."""
        x = np.array([[features[name] for name in self.features]], dtype=np.float64)
        return self.bias + float(leaf_sums(x, self)[0])

    def probability(self, features: Mapping[str, float]) -> float:
        """``P(no fit)`` for :meth:`Signals.features`."""
        return _sigmoid(self.logit(features))

    def save(self, path: Path | str) -> None:
        """Write the model to an ``.npz`` file (read back by :func:`load_tree_ensemble`)."""
        np.savez_compressed(path, features=np.asarray(self.features), feature=self.feature, threshold=self.threshold,
                            left=self.left, right=self.right, value=self.value, roots=self.roots,
                            depth=np.int64(self.depth), bias=np.float64(self.bias))


def load_tree_ensemble(path: Path | str) -> TreeEnsemble:
    """The model saved at ``path`` by :meth:`TreeEnsemble.save`.

    Raises:
        OSError: the file cannot be read; KeyError: an array is missing; ValueError: see
        :class:`TreeEnsemble`.
    """
    with np.load(path, allow_pickle=False) as z:
        return TreeEnsemble(
            features=tuple(str(s) for s in z["features"]), feature=z["feature"].astype(np.int32),
            threshold=z["threshold"].astype(np.float64), left=z["left"].astype(np.int32),
            right=z["right"].astype(np.int32), value=z["value"].astype(np.float64), roots=z["roots"].astype(np.int32),
            depth=int(z["depth"]), bias=float(z["bias"]),
        )


def packaged_tree_ensemble(name: str) -> TreeEnsemble:
    """A model shipped in ``registry/search/data/`` (``name``: the file name)."""
    with resources.as_file(resources.files("registry.search") / "data" / name) as path:
        return load_tree_ensemble(path)


@dataclass(frozen=True)
class Abstain:
    """When a free-text search says "no tool fits" (:attr:`SearchResult.weak`).

    ``hybrid`` models decide hybrid searches, ``lexical_only`` ones BM25-only searches; the result
    is weak only when *every* model of its kind says "no fit" (so one kind of evidence can vouch
    for a hit: a Chinese query has no words in common with English tools, yet its cosine shows
    the fit). No model: never weak.

    Searches outside the conditions these models were fitted in go to ``fallback`` (when set):
    fewer than ``min_tools`` visible tools, or a hybrid search the English model did not run on
    (a query in another language, or an index with the multilingual model alone).
    """

    hybrid: tuple[NoFitModel, ...] = ()
    lexical_only: tuple[NoFitModel, ...] = ()
    fallback: Abstain | None = None
    min_tools: int = 0

    def __post_init__(self) -> None:
        for name, models in (("hybrid", self.hybrid), ("lexical_only", self.lexical_only)):
            for model in models:
                if not isinstance(model, NoFitModel):
                    raise ValueError(f"Abstain.{name} holds NoFitModel models, got {type(model).__name__}")

    def probabilities(self, s: Signals) -> tuple[float, ...]:
        """``P(no fit)`` of each model that decides these signals, in order."""
        return self.feature_probabilities(s.features(), hybrid=s.dense_top is not None)

    def feature_probabilities(self, features: Mapping[str, float], *, hybrid: bool) -> tuple[float, ...]:
        """The same from :meth:`Signals.features` (``hybrid``: a dense stage ran)."""
        if self.fallback is not None and (
            features["log10_tools"] < math.log10(max(1, self.min_tools)) or (hybrid and not features["has_minilm"])
        ):
            return self.fallback.feature_probabilities(features, hybrid=hybrid)
        return tuple(m.probability(features) for m in (self.hybrid if hybrid else self.lexical_only))

    def weak(self, s: Signals) -> bool:
        """Whether these signals of a search's best hits mean "no tool fits"."""
        return self.weak_features(s.features(), hybrid=s.dense_top is not None)

    def weak_features(self, features: Mapping[str, float], *, hybrid: bool) -> bool:
        """The same from :meth:`Signals.features` (``hybrid``: a dense stage ran)."""
        ps = self.feature_probabilities(features, hybrid=hybrid)
        return bool(ps) and all(p >= 0.5 for p in ps)


PREVIOUS_ABSTAIN = Abstain(
    hybrid=(
        Logistic.over(LEXICAL_FEATURES, (6.2555, -15.5054, -4.6684, 0.1159, -1.0777)),
        Logistic.over(DENSE_FEATURES, (-0.0661, -14.5151, 0.602, -0.7241, 1.2852, 0.2428, 0.2155, -0.6157)),
    ),
    lexical_only=(Logistic.over(LEXICAL_FEATURES, (5.5956, -17.032, -4.6928, 0.2708, -1.2674)),),
)
"""The previous decision, now the shipped one's fallback and kept for comparison
(``bench/search_abstain_eval.py``): a lexical AND a dense logistic model fitted for the two-way
fusion (``search_abstain_tune.py --every 2 --loss 1.5`` before the trees replaced it).
Dev, hybrid: 33.6 % of unanswerable queries flagged while answerable R@5 loses 1.42 (ToolLens)
and 1.46 (MetaTool) points (37.7 % within 2 points); 51.7 % on the honest pairings (dev queries on
a catalog of another domain); of the 108 hand-labelled unanswerable dev queries, 28.6 % of those
with no fitting tool and 12.5 % of those with one. The dense model's agreement signals
(``lex_dense_rank``, ``dense_lex_rank``, ``fused_margin``) are what changed: with the cosine
signals alone (the previous model) the same fit flags 25.4 % (28.9 % within 2 points), 17.1 % /
13.3 % on the first 50 labelled queries. BM25-only: 17.3 % at 0.58 / 1.17 (unchanged).

A refit for the three-way fusion (``--every 2 --loss 2.0``: 53.6 % of the honest dev pairings at
0.90 / 1.99 points lost) was not kept: on the same test searches it flagged fewer unanswerable
queries than this model (ToolLens / MetaTool test on the Docker MCP tools 55.5 / 53.4 % against
63.3 / 55.2 %) for about the same worst loss (3.08 against 3.18 R@5 points, MetaTool pooled / own)."""

TREES_MIN_TOOLS = 199
"""The smallest catalog the trees were fitted on (MetaTool's): below it they never saw a score
distribution (on a 9-tool catalog they called nothing "no fit"), so the previous models decide."""

DEFAULT_ABSTAIN = Abstain(
    hybrid=(packaged_tree_ensemble("abstain.npz"),),
    lexical_only=PREVIOUS_ABSTAIN.lexical_only,
    fallback=PREVIOUS_ABSTAIN,
    min_tools=TREES_MIN_TOOLS,
)
"""The decision every :class:`SearchIndex` uses unless given another. Hybrid search: gradient-boosted
trees (``registry/search/data/abstain.npz``) fitted by ``bench/search_abstain_tune.py`` on DEV data
only (dev queries on their own catalogs and the pool as answerable, on three other catalogs as
unanswerable), the threshold chosen out of fold so that no dev set loses more than 1.5 R@5
points, then frozen. Outside what they were fitted on, the previous models decide: fewer than
:data:`TREES_MIN_TOOLS` visible tools, and a hybrid search the English model skipped (the
training queries are English; in the previous lexical-AND-dense pair the multilingual cosine
vouches for a Spanish or Chinese query, where the trees cost 38 % of the Spanish test queries'
R@5). BM25-only search keeps the previous logistic model: trees fitted the same way flagged
more (ToolLens test on the Docker tools 34.0 against 24.3 %, MetaTool 23.1 against 21.5 %) but
cost about 0.2 ms CPU per search, half of a lexical search. Test figures: ``bench/README.md``."""
