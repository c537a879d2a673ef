"""Literal hints of one text, each looked up once: cheap gates in front of costly patterns.

A tool output of a few KB is read by several checks (the outcome parser, the false-claim
check) that each gate their patterns on literal hints ("fail", "FAIL", "Traceback",
"exit ", ...). Every ``hint in text`` scans the whole text (1-2 us for 3 KB), so on a clean
output (none present) the gates cost more than the rest of the checks. Here each hint is
looked up at most once per text, and only after its rarest character is found: a search
for one character runs at memchr speed, and a text without it cannot hold the hint (source
code has no capitals to match "FAILED" or "Traceback", no "x" for "exit "). The answers
are exactly ``hint in text``; only how often and how slowly the text is scanned changes.
"""

from __future__ import annotations

import re
from collections.abc import Callable

# Characters from most to least common in English prose, code and logs; any other
# character (capitals, most punctuation) counts as rarer than all of them.
_COMMON = " etaonirsl\nhdcu_mpf.=(),gy0b1w:v2-'\"3k\t5x"
# Below this many characters a scan costs less than the bookkeeping: look hints up directly.
_SHORT = 256
_GATE: dict[str, str] = {}  # hint -> its rarest character (hints are the checks' constants)


def _gate(hint: str) -> str:
    """The character of ``hint`` least likely to occur in a text (its cheapest test)."""
    gate = _GATE.get(hint)
    if gate is None:
        gate = _GATE[hint] = max(hint, key=lambda c: _COMMON.find(c) % (len(_COMMON) + 1))
    return gate


class Hints:
    """``hint in text`` for one text, memoised per hint and gated on the hint's rarest char."""

    __slots__ = ("_low", "_seen", "text")

    def __init__(self, text: str) -> None:
        self.text = text
        self._low: str | None = None
        self._seen: dict[str, bool] = {}

    @property
    def low(self) -> str:
        """The lower-cased text (computed once)."""
        if self._low is None:
            self._low = self.text.lower()
        return self._low

    def has(self, hint: str) -> bool:
        """Exactly ``hint in self.text``."""
        seen = self._seen.get(hint)
        if seen is None:
            text = self.text
            seen = self._seen[hint] = _gate(hint) in text and hint in text
        return seen

    def has_folded(self, hint: str) -> bool:
        """Exactly ``hint in self.low`` for a lower-case ``hint``."""
        key = "\0" + hint  # folded look-ups keyed apart from the plain ones
        seen = self._seen.get(key)
        if seen is None:
            low = self.low
            seen = self._seen[key] = _gate(hint) in low and hint in low
        return seen

    def contains(self) -> Callable[[str], bool]:
        """``hint in text`` as a function: on a short text the plain look-up (cheaper than
        any bookkeeping), on a long one the memoised, gated :meth:`has`."""
        return self.text.__contains__ if len(self.text) < _SHORT else self.has

    def contains_folded(self) -> Callable[[str], bool]:
        """``hint in text.lower()`` as a function, as :meth:`contains`."""
        return self.low.__contains__ if len(self.text) < _SHORT else self.has_folded


def may_match(text: str, hints: tuple[str, ...]) -> bool:
    """False only when a case-blind pattern, every match of which holds one of the
    lower-case ``hints``, cannot match ``text``: an ASCII text that holds none of them.

    A text with any non-ASCII character always may (``re.IGNORECASE`` matches some
    non-ASCII letters, the long s U+017F or the dotted capital I U+0130, to ASCII
    ones that ``str.lower`` leaves apart).
    """
    if not text.isascii():
        return True
    low = text.lower()
    return any(map(low.__contains__, hints))


def gated(pattern: re.Pattern[str], hints: tuple[str, ...]) -> Callable[[str], bool]:
    """``bool(pattern.search(text))`` as a function that tries the case-blind ``pattern`` only
    on a text that :func:`may_match` its ``hints`` (lower-case words every match holds)."""

    def search(text: str) -> bool:
        return may_match(text, hints) and pattern.search(text) is not None

    search.__doc__ = f"``{pattern.pattern[:60]}…`` found in the text (gated on its hints)."
    return search
