"""How deep a JSON document may nest, and JSON reading that keeps to it.

Why: Python's ``json`` recurses once per level, so a body of a few kilobytes nested
a thousand levels deep ends in ``RecursionError`` (a 500), and deep values make every
later walk over them (validation, storage, templates) costly. Real payloads nest a
handful of levels; :data:`MAX_DEPTH` leaves ample room. Imports nothing of the package.
"""

from __future__ import annotations

import json
from typing import Any

#: Most levels of nested arrays and objects accepted in a request (a scalar is depth 0).
MAX_DEPTH = 64


class TooDeep(ValueError):
    """A JSON document nested deeper than :data:`MAX_DEPTH`."""

    def __init__(self, limit: int = MAX_DEPTH) -> None:
        super().__init__(f"JSON nested deeper than {limit} levels")
        self.limit = limit


def exceeds(value: Any, limit: int = MAX_DEPTH) -> bool:
    """True when ``value`` nests arrays and objects deeper than ``limit``.

    Iterative, so any depth is safe to measure; only containers are stacked, and it
    stops at the first one too deep.
    """
    if not isinstance(value, dict | list):
        return False
    stack: list[tuple[Any, int]] = [(value, 0)]
    while stack:
        node, depth = stack.pop()
        children = node.values() if isinstance(node, dict) else node
        depth += 1
        for child in children:
            if isinstance(child, dict | list):
                if depth >= limit:
                    return True
                stack.append((child, depth))
    return False


def check(value: Any, limit: int = MAX_DEPTH) -> Any:
    """``value`` itself; :class:`TooDeep` when it nests deeper than ``limit``."""
    if isinstance(value, dict | list) and exceeds(value, limit):
        raise TooDeep(limit)
    return value


def loads(text: str | bytes, limit: int = MAX_DEPTH) -> Any:
    """``json.loads`` that raises :class:`TooDeep` instead of recursing past ``limit``
    (a ``RecursionError`` in the parser means the same)."""
    try:
        value = json.loads(text)
    except RecursionError as exc:
        raise TooDeep(limit) from exc
    return check(value, limit)
