"""What a reviewer's decision does to a rubric: the next version's criteria.

Pure functions; the API applies them inside the transaction that records the decision.
"""

from __future__ import annotations

import re
from collections.abc import Iterable
from typing import Any

from judge_service.review.similarity import normalise

_NON_SLUG = re.compile(r"[^a-z0-9]+")
ID_WORDS = 6
ID_CHARS = 48


def criterion_id(text: str, taken: Iterable[str]) -> str:
    """A readable, unique id from the item's text: ``"Did the agent verify the booking
    reference?"`` -> ``"verify-the-booking-reference"`` (``-2`` and on if taken)."""
    words = _NON_SLUG.sub(" ", normalise(text)).split()[:ID_WORDS]
    base = "-".join(words)[:ID_CHARS].strip("-") or "item"
    used = set(taken)
    candidate, n = base, 1
    while candidate in used:
        n += 1
        candidate = f"{base}-{n}"
    return candidate


class DecisionError(ValueError):
    """The decision cannot apply to this item (an edit without changes, a zero weight)."""


def next_criteria(
    active: list[dict[str, Any]],
    proposed: dict[str, Any],
    *,
    text: str | None = None,
    weight: float | None = None,
) -> tuple[list[dict[str, Any]], dict[str, Any]]:
    """The active criteria plus the approved item (with an edit's text and weight applied).

    An edited text gets an id derived from it, so ``rubric/<id>`` components keep saying
    what they measure; an id already in the rubric gets a suffix.
    """
    criterion: dict[str, Any] = {
        "id": proposed.get("id") or "item",
        "text": str(proposed.get("text", "")).strip(),
        "weight": float(proposed.get("weight", 1.0)),
        "tags": list(proposed.get("tags") or []),
    }
    taken = {c["id"] for c in active}
    if text is not None and text.strip() and text.strip() != criterion["text"]:
        criterion["text"] = text.strip()
        criterion["id"] = criterion_id(criterion["text"], taken)
    if weight is not None:
        criterion["weight"] = float(weight)
    if not criterion["text"]:
        raise DecisionError("the criterion has no text")
    if criterion["weight"] == 0:
        raise DecisionError("a weight of 0 would make the criterion count for nothing")
    if criterion["id"] in taken:
        criterion["id"] = criterion_id(criterion["text"], taken)
    return [*active, criterion], criterion
