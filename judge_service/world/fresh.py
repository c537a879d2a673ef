"""A new id for an entity a write creates, shaped like the ids the traced calls made.

The backend made its ids somehow (a counter, random letters); the world can't know how,
only what they looked like: ``TK-48213``, ``HATHAT``, ``#W0416718``. A new id keeps the
prefix every traced id shares and draws the rest character by character in the class of
the first traced id's (a digit for a digit, a capital for a capital). Drawn from a hash of
the call, so an episode replays the same ids; redrawn until it names nothing in the state.
"""

from __future__ import annotations

import hashlib
from collections.abc import Mapping, Sequence
from typing import Any

from judge_service.traces.entities import canonical
from judge_service.world.model import Call
from judge_service.world.text import as_text

#: The id drawn when the traces gave none to go by.
DEFAULT_SHAPE = "new-000000"


def _like(char: str, byte: int) -> str:
    if char.isdigit():
        return str(byte % 10)
    if char.isupper():
        return chr(ord("A") + byte % 26)
    if char.islower():
        return chr(ord("a") + byte % 26)
    return char


def _kind(char: str) -> str:
    return "9" if char.isdigit() else "A" if char.isupper() else "a" if char.islower() else char


def _prefix(texts: Sequence[str]) -> str:
    """What every id starts with, ending where the first id's characters change class
    (``TK-4`` of ``TK-48213`` and ``TK-40001`` is ``TK-``); one id keeps only up to its
    last separator."""
    first = texts[0]
    if len(texts) == 1:
        cut = max((i + 1 for i, c in enumerate(first) if not c.isalnum()), default=0)
        return first[:cut]
    size = 0
    while size < len(first) and all(len(t) > size and t[size] == first[size] for t in texts):
        size += 1
    while 0 < size < len(first) and _kind(first[size - 1]) == _kind(first[size]):
        size -= 1
    return first[:size] if size < len(first) else ""


def _typed(text: str, shapes: Sequence[str | int]) -> str | int:
    """Ids the traces gave as numbers stay numbers."""
    if shapes and all(isinstance(s, int) for s in shapes) and text.isdigit():
        return int(text)
    return text


def new_id(shapes: Sequence[str | int], entity: str, state: Mapping[str, Any], call: Call) -> Any:
    """The id of the entity ``call`` creates (module docstring); a recorded call's own id
    (:attr:`Call.created`) when it names nothing yet."""
    if call.created is not None and f"{entity}={call.created}" not in state:
        return _typed(call.created, shapes)
    texts = [as_text(s) for s in shapes] or [DEFAULT_SHAPE]
    prefix = _prefix(texts)
    rest = texts[0][len(prefix) :]
    if not any(c.isalnum() for c in rest):
        rest += "000000"
    seed = canonical([call.name, call.arguments])
    attempt = 0
    while True:  # a shape with few free ids grows a digit every 100 draws: this ends
        digest = hashlib.sha256(f"{seed}#{attempt}".encode()).digest()
        shape = rest + "0" * (attempt // 100)
        drawn = "".join(_like(c, digest[i % len(digest)]) for i, c in enumerate(shape))
        if f"{entity}={prefix + drawn}" not in state:
            return _typed(prefix + drawn, shapes)
        attempt += 1
