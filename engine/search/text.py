"""Search terms of a text: Chinese words from jieba (rjieba), other words lowercased and
Snowball-stemmed (PyStemmer); and whether a term carries content (not a stop word).

Every piece here is an established library's: rjieba segments (search mode, so 今天天气 also
yields 天气), PyStemmer stems, the stop-word lists come from jionlp and the `stopwords`
package (Chinese; English: the Snowball list), the commonest Chinese words from jionlp's IDF
table and the commonest English words from wordfreq. Nothing is loaded at import time.
"""

from __future__ import annotations

import functools
import re

_HAN = re.compile(r"[\u3400-\u4dbf\u4e00-\u9fff\uf900-\ufaff]")
_WORD = re.compile(r"\w", re.UNICODE)
MAX_TERM_CHARS = 40
"""Longer runs (URLs, base64) are not useful terms and would bloat the vocabulary."""


@functools.cache
def _stemmer():
    import Stemmer

    return Stemmer.Stemmer("english")


@functools.cache
def _jieba():
    import rjieba

    return rjieba


@functools.cache
def _stop_terms() -> frozenset[str]:
    """Stop words of both languages, in term form (English ones stemmed like document words)."""
    from stopwords import get_stopwords

    from engine.adapters.jio import jionlp

    english = [w.lower() for w in get_stopwords("english") if w]
    stemmed = _stemmer().stemWords(english)
    chinese = set(jionlp().stopwords_loader()) | set(get_stopwords("chinese"))
    return frozenset(stemmed) | frozenset(english) | frozenset(chinese)


COMMON_IDF = 6.5
"""A Chinese word whose IDF in jionlp's general table (news and web text) is below this is one of
the language's ~2,200 commonest words (真的, 喜欢, 心情, 吃饭, 颜色; not 睡觉, 生日, 软件)."""
COMMON_ENGLISH = 2000
"""The English words among wordfreq's this many commonest (of subtitles, web, news, books: really,
day, nice, weather, favorite, dinner; not camping, pottery, guitar, vacation) are the English
counterpart: about as many as the Chinese ones."""


@functools.cache
def _common_terms() -> frozenset[str]:
    """The Chinese words of jionlp's IDF table below `COMMON_IDF` and wordfreq's `COMMON_ENGLISH`
    commonest English words, as written and in term form (Snowball stems): a general-language
    prior, which a diary cannot give (in a few hundred turns 真的 is as rare as 博物馆; in a
    long English one "favorite" as rare as "pottery")."""
    from wordfreq import top_n_list

    from engine.adapters.jio import jionlp

    chinese = {word for word, idf in jionlp().idf_loader().items() if idf < COMMON_IDF}
    # "don't" -> don, t: the pieces jieba and the term splitter make of it.
    english = sorted({piece for w in top_n_list("en", COMMON_ENGLISH, wordlist="small")
                      for piece in re.findall(r"[a-z]+", w)})
    return frozenset(chinese) | frozenset(english) | frozenset(_stemmer().stemWords(english))


def is_common(term: str) -> bool:
    """A term among its language's commonest words (Chinese: `COMMON_IDF`; English:
    `COMMON_ENGLISH`, as a word or a stem); words of other languages never are here."""
    return term.lower() in _common_terms()


def only_common_words(text: str) -> bool:
    """Whether every content word of `text` is among its language's commonest (and there is one).
    Segmented in jieba's precise mode without its guess at new words, so a Chinese run it does not
    know splits into dictionary words (做些 -> 做 些) rather than standing as one rare term."""
    words = [w for w in _jieba().cut(text, False) if _WORD.search(w) and is_content(w.lower())]
    return bool(words) and all(is_common(w) for w in words)


def terms(text: str) -> list[str]:
    """The text's search terms, in order, with repeats (term frequency counts them)."""
    if not text:
        return []
    out: list[str] = []
    latin: list[str] = []
    for token in _jieba().cut_for_search(text):
        if _HAN.search(token):
            out.append(token)
        elif _WORD.search(token):
            word = token.strip().lower()
            if word and len(word) <= MAX_TERM_CHARS:
                latin.append(word)
                out.append(word)  # placeholder, replaced by its stem below
    if latin:
        stems = iter(_stemmer().stemWords(latin))
        out = [next(stems) if not _HAN.search(t) else t for t in out]
    return out


def is_content(term: str) -> bool:
    """A term that says what a text is about (not a stop word, not a lone digit or letter)."""
    if term in _stop_terms():
        return False
    if _HAN.search(term):
        return True
    return len(term) > 1 and not term.isdigit()


def content_terms(text: str) -> list[str]:
    """Distinct content terms of `text`, in order of first appearance."""
    return list(dict.fromkeys(t for t in terms(text) if is_content(t)))


def warm_up() -> None:
    """Load the segmenter's dictionary, the stemmer and the stop lists now."""
    terms("预热 warm up")
    _stop_terms()
    _common_terms()
