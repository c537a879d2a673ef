"""Whole-phrase acceptance for ``reference_match``: a short answer that states the reference.

"The capital of France is Paris." states ``Paris``. "Paris, Lyon or Nice" names it among
alternatives, "It is not Paris" denies it, and "1425" does not contain the number 42.
Text is read as tokens: words (case-folded, accents kept, articles dropped), numbers in
canonical form ("1,234.50" -> "1234.5", "42.0" -> "42"), symbols, and clause separators.
:func:`states` holds the rule.
"""

from __future__ import annotations

import re
import unicodedata
from dataclasses import dataclass
from decimal import Decimal, InvalidOperation

#: The most words an answer may have for the reference to count as stated inside it.
MAX_WORDS = 12

_TOKEN = re.compile(
    r"(?P<number>(?<![\w.])[-+]?(?:\d{1,3}(?:,\d{3})+|\d+)(?:\.\d+)?(?!\w))"
    r"|(?P<word>\w+(?:['-]\w+)*)"
    r"|(?P<sep>[,;/&|\n]|[.!?](?=\s|$))"
    r"|(?P<symbol>[^\s\w.,:;!?'\"()\[\]{}*_`~\\])"
)
_ARTICLES = frozenset({"a", "an", "the"})
#: Words that join clauses: each side is read as its own clause.
_JOINERS = frozenset({"and", "or", "nor", "but", "then", "though", "although", "however"})
#: Words that offer an alternative: an answer with one does not commit to the reference.
_ALTERNATIVES = frozenset({"or", "either", "nor", "versus", "vs"})
_NEGATIONS = frozenset(
    {"not", "no", "never", "neither", "isn't", "wasn't", "aren't", "cannot", "can't", "won't"}
)
#: Words that carry no candidate: a clause made only of these competes with nothing.
_FILLER_WORDS = """
    i i'm i'd i'll me my we our you it it's its this that that's these those there here
    is are was were be been being am do does did has have had will would shall should can could
    may might must so yes yeah ok okay well sure indeed of course thus hence therefore final
    finally answer answers correct right done think believe say guess suppose let let's in on
    at to for with by from as also too just only maybe perhaps possibly probably likely
    definitely certainly surely obviously clearly exactly simply actually
"""
_FILLER = _ARTICLES | _JOINERS | _NEGATIONS | frozenset(_FILLER_WORDS.split())


@dataclass(frozen=True)
class Token:
    """One token: its kind (word, number, symbol, sep), normal form, and text as written."""

    kind: str
    norm: str
    raw: str


def _number(text: str) -> str:
    try:
        value = Decimal(text.replace(",", "")).normalize()
    except InvalidOperation:
        return text
    return format(value, "f") if value != 0 else "0"


def tokens(text: str) -> list[Token]:
    """The tokens of ``text``, articles dropped ("The Paris." -> [paris, .])."""
    text = unicodedata.normalize("NFKC", text).replace("\u2019", "'")
    found = []
    for match in _TOKEN.finditer(text):
        kind = match.lastgroup or "symbol"
        raw = match.group()
        norm = _number(raw) if kind == "number" else raw.casefold()
        if kind == "word" and norm in _JOINERS:
            kind = "sep"
        if kind == "word" and norm in _ARTICLES:
            continue
        found.append(Token(kind, norm, raw))
    return found


def words(items: list[Token]) -> int:
    return sum(t.kind in ("word", "number") for t in items)


def same(answer: list[Token], reference: list[Token]) -> bool:
    """True when both say the same thing, clause separators left out."""
    return [t.norm for t in answer if t.kind != "sep"] == [
        t.norm for t in reference if t.kind != "sep"
    ]


def offers_alternative(items: list[Token]) -> bool:
    """True when the text offers an alternative ("or", "either", "nor", "vs")."""
    return any(t.norm in _ALTERNATIVES for t in items)


def _occurrences(answer: list[Token], reference: list[Token]) -> list[int]:
    wanted = [t.norm for t in reference]
    size = len(wanted)
    norms = [t.norm for t in answer]
    return [i for i in range(len(norms) - size + 1) if norms[i : i + size] == wanted]


def _clauses(answer: list[Token], start: int, end: int) -> tuple[list[Token], list[list[Token]]]:
    """The clause holding ``answer[start:end]`` (up to it), and every other clause."""
    own_from = start
    while own_from > 0 and answer[own_from - 1].kind != "sep":
        own_from -= 1
    own_to = end
    while own_to < len(answer) and answer[own_to].kind != "sep":
        own_to += 1
    others: list[list[Token]] = [[]]
    for token in [*answer[:own_from], Token("sep", "", ""), *answer[own_to:]]:
        if token.kind == "sep":
            others.append([])
        else:
            others[-1].append(token)
    return answer[own_from:start], [c for c in others if c]


def _competes(clause: list[Token], reference: list[Token]) -> bool:
    """A clause that names another candidate of the reference's kind: any number against a
    numeric reference; against a text one, a bare phrase no longer than the reference."""
    if all(t.kind == "number" for t in reference if t.kind != "symbol"):
        return any(t.kind == "number" for t in clause)
    content = [t for t in clause if t.kind in ("word", "number") and t.norm not in _FILLER]
    return 1 <= len(content) <= max(1, words(reference))


def _run_together(neighbour: Token | None, reference: list[Token]) -> bool:
    """A number, or a capitalised non-filler word, written right next to the reference:
    "41 42", "Paris Hilton", "Paris Lyon Nice" name something else than the reference."""
    if neighbour is None:
        return False
    if neighbour.kind == "number":
        return True
    numeric = all(t.kind == "number" for t in reference if t.kind != "symbol")
    return (
        not numeric
        and neighbour.kind == "word"
        and neighbour.norm not in _FILLER
        and neighbour.raw[:1].isupper()
    )


def states(answer: list[Token], reference: list[Token]) -> tuple[bool, str]:
    """Whether a short answer states the reference as its one answer, and why not.

    The rule: the answer has at most :data:`MAX_WORDS` words; the reference occurs in it
    exactly once, as whole tokens; the answer offers no alternative ("or", "either",
    "vs"); no negation precedes the reference in its clause; no other clause names a
    competing candidate (:func:`_competes`); and no number or capitalised word is written
    right next to the reference (:func:`_run_together`).
    """
    if not reference:
        return False, "the reference has no words"
    if words(answer) > MAX_WORDS:
        return False, f"longer than {MAX_WORDS} words"
    found = _occurrences(answer, reference)
    if len(found) != 1:
        return False, "the reference is not in it" if not found else "the reference is repeated"
    start, end = found[0], found[0] + len(reference)
    if offers_alternative(answer[:start] + answer[end:]):
        return False, "it offers alternatives"
    before, others = _clauses(answer, start, end)
    if any(t.norm in _NEGATIONS for t in before):
        return False, "it denies the reference"
    if any(_competes(clause, reference) for clause in others):
        return False, "it names other candidates"
    left = answer[start - 1] if start > 0 and answer[start - 1].kind != "sep" else None
    right = answer[end] if end < len(answer) and answer[end].kind != "sep" else None
    if _run_together(left, reference) or _run_together(right, reference):
        return False, "the reference is part of a longer name or list"
    return True, "it states the reference"
