"""Text normalisation and the answer checks that need no model: match, support, leak."""

from __future__ import annotations

import re
import unicodedata

_QUOTES = str.maketrans({"\u2018": "'", "\u2019": "'", "\u201c": '"', "\u201d": '"'})
_DASHES = re.compile(r"[\u2010-\u2015\u2212]")
_NON_WORD = re.compile(r"[^0-9a-z]+")
#: Words that carry no content: an answer is "supported" when its other words are quoted.
STOPWORDS = frozenset(
    {"a", "an", "the", "of", "to", "in", "on", "at", "by", "for", "and", "or", "is", "are"}
    | {"was", "were", "be", "it", "its", "this", "that", "with", "as", "from", "into", "than"}
)


def normalise(text: str) -> str:
    """Lower case, NFKC, plain quotes and dashes, punctuation as spaces, single spaces."""
    text = unicodedata.normalize("NFKC", text).translate(_QUOTES)
    text = _DASHES.sub("-", text).lower()
    return " ".join(_NON_WORD.sub(" ", text).split())


def tokens(text: str) -> list[str]:
    return normalise(text).split()


def content_tokens(text: str) -> list[str]:
    return [t for t in tokens(text) if t not in STOPWORDS]


def contains_phrase(haystack: str, needle: str) -> bool:
    """Whether normalised ``needle`` occurs in normalised ``haystack`` on word boundaries."""
    hay, pin = normalise(haystack), normalise(needle)
    return bool(pin) and f" {pin} " in f" {hay} "


def token_f1(prediction: str, reference: str) -> float:
    """SQuAD-style token overlap F1 over content words."""
    pred, ref = content_tokens(prediction), content_tokens(reference)
    if not pred or not ref:
        return 0.0
    common = sum(min(pred.count(t), ref.count(t)) for t in set(ref))
    if common == 0:
        return 0.0
    precision, recall = common / len(pred), common / len(ref)
    return 2 * precision * recall / (precision + recall)


#: Token F1 at or above which an answer counts as the reference.
MATCH_F1 = 0.8


def answers_match(answer: str, reference: str) -> bool:
    """An answer matches the reference when, normalised, it equals it, contains it as a
    phrase (``"It is 42 days"`` for ``"42 days"``), or overlaps it with token F1 >= 0.8."""
    if not normalise(answer) or not normalise(reference):
        return False
    return contains_phrase(answer, reference) or token_f1(answer, reference) >= MATCH_F1


def quote_in(chunk: str, quote: str) -> bool:
    """The grounding check's first half: the quote, normalised, appears in the chunk."""
    return contains_phrase(chunk, quote)


def supported_by(answer: str, quote: str) -> bool:
    """The second half: every content word of the answer appears in the quote."""
    words = content_tokens(answer) or tokens(answer)
    quoted = set(tokens(quote))
    return bool(words) and all(word in quoted for word in words)


def leaks(question: str, answer: str) -> bool:
    """Whether the question gives its own answer away (contains it as a phrase)."""
    return contains_phrase(question, answer)
