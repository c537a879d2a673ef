"""Literal hints of one text, each looked up once: cheap gates in front of costly patterns.

A tool output of a few KB is read by several checks (the outcome parser, the false-claim
check) that each gate their patterns on a dozen literal hints ("fail", "FAIL", "Traceback",
"exit ", ...). Every ``hint in text`` scans the whole text, so on a clean output (none
present) the gates alone cost more than the rest of the checks. Here each hint is looked
up at most once per text, and first through a lower-case *root* it contains ("fail" for
"FAIL", "FAILED" and " 0 failed"): a root missing from the lower-cased text rules out
every hint that holds it, so a clean output costs about one scan per root, not per hint.
The answers are exactly ``hint in text``; only how often the text is scanned changes.
"""

from __future__ import annotations

import functools
from collections.abc import Iterable

# Lower-case roots shared by several hints of the outcome and status checks.
_ROOTS = ("fail", "rror", "err", "pass", "ok", "exit", "test", "traceback", "fatal", "success")
# Below this many characters a scan costs less than the bookkeeping: look hints up directly.
_SHORT = 256


@functools.lru_cache(maxsize=1024)
def _root(hint: str) -> str | None:
    """The root a hint holds once lower-cased (hints are the checks' constants)."""
    folded = hint.lower()
    return next((root for root in _ROOTS if root in folded), None)


class Hints:
    """``hint in text`` for one text, memoised per hint and gated by lower-case roots."""

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
        if len(self.text) < _SHORT:
            return hint in self.text
        seen = self._seen.get(hint)
        if seen is None:
            root = _root(hint)
            if root is not None and root != hint and not self.has_folded(root):
                seen = False
            else:
                seen = hint in self.text
            self._seen[hint] = seen
        return seen

    def has_folded(self, hint: str) -> bool:
        """Exactly ``hint in self.low`` for a lower-case ``hint``."""
        if len(self.text) < _SHORT:
            return hint in self.low
        key = "\0" + hint  # folded look-ups keyed apart from the plain ones
        seen = self._seen.get(key)
        if seen is None:
            seen = self._seen[key] = hint in self.low
        return seen

    def any(self, hints: Iterable[str]) -> bool:
        """Whether the text holds any of ``hints``."""
        return any(map(self.has, hints))

    def any_folded(self, hints: Iterable[str]) -> bool:
        """Whether the lower-cased text holds any of the lower-case ``hints``."""
        return any(map(self.has_folded, hints))
