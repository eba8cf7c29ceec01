"""A deterministic test double of ``registry.search.Embedder``: each concept (a set of words in
several languages) is one dimension, so "邮件" and "email" share a vector direction."""

from __future__ import annotations

from collections.abc import Sequence

import numpy as np

CONCEPTS = (
    ("email", "mail", "邮件", "correo"),
    ("order", "orders", "订单", "pedido"),
    ("cancel", "取消", "cancelar"),
    ("weather", "forecast", "天气", "tiempo"),
    ("commit", "git", "repository", "提交"),
    ("refund", "payment", "退款", "reembolso"),
)


class FakeEmbedder:
    model_id = "fake-concepts@1"
    dim = len(CONCEPTS) + 1 + 8

    def __init__(self) -> None:
        self.calls = 0
        self.texts: list[str] = []

    def embed(self, texts: Sequence[str]) -> np.ndarray:
        self.calls += 1
        self.texts.extend(texts)
        out = np.zeros((len(texts), self.dim), dtype=np.float32)
        for i, text in enumerate(texts):
            low = text.lower()
            for d, words in enumerate(CONCEPTS):
                out[i, d] = sum(low.count(w) for w in words)
            if not out[i].any():  # no known concept: one of 8 "other" directions, by a stable hash
                out[i, len(CONCEPTS) + 1 + sum(map(ord, low)) % 8] = 1.0
            out[i, len(CONCEPTS)] = 0.2  # a shared direction, so unrelated texts are not orthogonal
            out[i] /= np.linalg.norm(out[i])
        return out

    def embed_query(self, text: str) -> np.ndarray:
        return self.embed([text])[0]


def embed_all(index) -> None:
    """Give every tool of ``index`` (a ``SearchIndex``) its vector from the index's own embedder."""
    missing = index.missing_vectors()
    vecs = index.embedder.embed([t for _n, _h, t in missing])
    index.set_vectors((n, h, vecs[i]) for i, (n, h, _t) in enumerate(missing))
