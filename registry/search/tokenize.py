"""Text → search tokens, the same pipeline for tool documents and for queries.

Steps (each chosen by measurement on the dev data, see ``bench/search_tune.py``):

1. Unicode NFKC folding, so full-width letters and ligatures match their plain forms.
2. Word splitting on anything that is not a letter or digit (so ``snake_case``, ``kebab-case``,
   ``dotted.names`` and ``/paths`` split), then identifier splitting inside each word:
   ``getWeatherForecast`` → ``get weather forecast``, ``HTTPServer`` → ``http server``,
   ``base64Encode`` → ``base 64 encode``. A word that mixes letters and digits is also kept whole
   (``mp3``, ``s3``, ``gpt4``) so exact identifiers still match.
3. Case folding (``str.casefold``, Unicode-aware).
4. Stop-word removal (:data:`STOP_WORDS`: English function words plus request filler such as
   "please", "want", "help"); single letters are dropped too.
5. Snowball English stemming (PyStemmer, the C build of the Snowball stemmers): ``recipes`` and
   ``recipe`` become one token.
6. CJK runs (Han, kana, Hangul) become overlapping character bigrams (``搜索结果`` → 搜索 索结 结果),
   as Lucene's CJKAnalyzer does, so Chinese text is searchable in Chinese with no dictionary.
   jieba word segmentation (``cjk="jieba"``) was measured against it: the eval data has no
   Chinese queries to separate them on quality, and jieba costs 61 MiB of dictionary and 0.5 s
   to load, so bigrams are the default.

All functions are pure and deterministic; :func:`tokenize` caches stems per word.
"""

from __future__ import annotations

import re
import unicodedata
from collections.abc import Iterable
from functools import lru_cache

import Stemmer

__all__ = ["STOP_WORDS", "Tokenizer", "split_identifier", "tokenize"]

STOP_WORDS: frozenset[str] = frozenset(
    """
    a about above after again against all am an and any are as at be because been before being
    below between both but by can could did do does doing down during each few for from further
    had has have having he her here hers herself him himself his how i if in into is it its itself
    just me more most my myself no nor not now of off on once only or other our ours ourselves out
    over own same she should so some such than that the their theirs them themselves then there
    these they this those through to too under until up very was we were what when where which
    while who whom why will with would you your yours yourself yourselves im ive id youre dont
    also may might must shall etc via e g ie eg
    please want wants need needs help like let lets know give tell show
    """.split()
)
"""English function words and request filler, removed from documents and queries alike.

Verbs that name tool actions (get, list, search, find, create, delete, send) are kept: they
carry meaning in tool text and BM25's IDF already discounts them where they are common.
"""

_WORD = re.compile(r"[^\W_]+")
_CJK_CHAR = r"\u3040-\u30ff\u3400-\u4dbf\u4e00-\u9fff\uf900-\ufaff\uac00-\ud7af"
_CJK_SPLIT = re.compile(f"([{_CJK_CHAR}]+)")
_IS_CJK = re.compile(f"[{_CJK_CHAR}]")
# Identifier pieces: acronym before a capitalized word, capitalized/lower word, acronym, number.
_PIECE = re.compile(r"[A-Z]+(?=[A-Z][^\W\d_A-Z])|[A-Z]?[^\W\d_A-Z]+|[A-Z]+|\d+")
_HAS_DIGIT = re.compile(r"\d")
_HAS_ALPHA = re.compile(r"[^\W\d_]")


def split_identifier(word: str) -> list[str]:
    """Split one letters-and-digits run into its identifier pieces, case kept.

    ``"getWeatherForecast"`` → ``["get", "Weather", "Forecast"]``; ``"HTTPServer2"`` →
    ``["HTTP", "Server", "2"]``; a run without case or digit boundaries is returned whole.
    """
    pieces = _PIECE.findall(word)
    return pieces or [word]


@lru_cache(maxsize=4)
def _stemmer(language: str) -> Stemmer.Stemmer:
    return Stemmer.Stemmer(language)


def _cjk_words_jieba(run: str) -> list[str]:
    import jieba  # lazy: heavy dictionary, loaded only when CJK text shows up

    jieba.setLogLevel(60)
    return [w for w in jieba.lcut_for_search(run) if w.strip()]


def _cjk_bigrams(run: str) -> list[str]:
    if len(run) == 1:
        return [run]
    return [run[i : i + 2] for i in range(len(run) - 1)]


class Tokenizer:
    """A configured tokenizer; call it on text to get tokens.

    Args:
        stem: apply Snowball English stemming.
        stop_words: tokens to drop (after case folding, before stemming).
        keep_compound: also emit a letters-and-digits word whole when identifier splitting cut it
            (``getWeather`` also yields ``getweather``).
        cjk: ``"bigram"`` (overlapping character bigrams) or ``"jieba"`` (word segmentation; needs jieba).
        min_len: shortest non-CJK, non-digit token kept (characters).
    """

    def __init__(
        self,
        *,
        stem: bool = True,
        stop_words: Iterable[str] = STOP_WORDS,
        keep_compound: bool = True,
        cjk: str = "bigram",
        min_len: int = 2,
    ) -> None:
        if cjk not in ("jieba", "bigram"):
            raise ValueError(f"cjk must be 'jieba' or 'bigram', got {cjk!r}")
        self.stem = stem
        self.stop_words = frozenset(stop_words)
        self.keep_compound = keep_compound
        self.cjk = cjk
        self.min_len = min_len
        self._cache: dict[str, tuple[str, ...]] = {}
        self._stem_fn = _stemmer("english").stemWord if stem else (lambda w: w)
        self._cjk_fn = _cjk_words_jieba if cjk == "jieba" else _cjk_bigrams

    def __call__(self, text: str) -> list[str]:
        """Tokens of ``text`` in order (duplicates kept: they are term frequencies)."""
        if not text:
            return []
        out: list[str] = []
        text = unicodedata.normalize("NFKC", text)
        for word in _WORD.findall(text):
            toks = self._cache.get(word)
            if toks is None:
                toks = self._word_tokens(word)
                if len(self._cache) < 200_000:
                    self._cache[word] = toks
            out.extend(toks)
        return out

    def _word_tokens(self, word: str) -> tuple[str, ...]:
        if _IS_CJK.search(word):
            toks: list[str] = []
            for part in _CJK_SPLIT.split(word):
                if not part:
                    continue
                if _IS_CJK.match(part):
                    toks.extend(w.casefold() for w in self._cjk_fn(part))
                else:
                    toks.extend(self._word_tokens(part))
            return tuple(toks)
        pieces = split_identifier(word)
        toks = [self._norm(p) for p in pieces]
        if (
            self.keep_compound
            and len(pieces) > 1
            and _HAS_ALPHA.search(word)
            and (_HAS_DIGIT.search(word) or len(pieces) <= 3)
        ):
            toks.append(self._norm(word))
        return tuple(t for t in toks if t)

    def _norm(self, piece: str) -> str:
        low = piece.casefold()
        if low in self.stop_words:
            return ""
        if len(low) < self.min_len and not low.isdigit():
            return ""
        return self._stem_fn(low)


_DEFAULT = Tokenizer()


def tokenize(text: str) -> list[str]:
    """Tokens of ``text`` with the default :class:`Tokenizer` (what the index uses)."""
    return _DEFAULT(text)
