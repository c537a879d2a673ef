"""Who asks: the person behind a conversation, as the agent's own lookups found them.

Users name themselves in many ways (an e-mail, a name and a zip code, a phone number), and two
runs of one user's goal often use different ones. The agent's lookup turns each into the same
record. So the person is the id that the conversation's first successful lookup *made with the
user's own words* answered: a call whose every argument value the user said before it (an
e-mail, a name, a phone number: ``find_user(email=…)``, ``get_customer_by_phone(…)``), and
whose answer is an id (a bare one, or the answered object's own id) that the user did not give:
a lookup of a record the user named (``get_order(order_id=…)`` answering that order) found
no one, it only read back what was said. It is the goal's handle
``who:<id>``; two goals with different ``who:`` handles are of different people and never
one task. A conversation with no such lookup names no one this way, and its goals fall back
to the people and ids in the user's words (:mod:`judge_service.traces.goals`).
"""

from __future__ import annotations

import re
from collections.abc import Sequence
from typing import Any

from judge_service.traces.calls import ToolCall
from judge_service.traces.conversation import Trace, content_text, user_words
from judge_service.traces.entities import answer_entities

#: A bare answer that is an id: one token of letters, digits and ``_.-@#:``, with a digit.
BARE_ID = re.compile(r"^[\w.@#:-]*\d[\w.@#:-]*$")


def _values(arguments: dict[str, Any]) -> list[str]:
    found: list[str] = []
    for value in arguments.values():
        if isinstance(value, list):
            found += [str(v) for v in value if isinstance(v, str | int) and str(v)]
        elif isinstance(value, str | int) and not isinstance(value, bool) and str(value):
            found.append(str(value))
        else:
            return []  # an object or a null: not a lookup by what the user said
    return found


def _said_before(trace: Trace, turn: int) -> str:
    return " ".join(
        user_words(content_text(m.get("content")))
        for m in trace.messages[:turn]
        if m.get("role") == "user"
    ).lower()


def _answered_id(call: ToolCall) -> str | None:
    payload = call.payload
    if isinstance(payload, str | int) and not isinstance(payload, bool):
        text = str(payload).strip().strip('"')
        return text if BARE_ID.match(text) else None
    if isinstance(payload, dict):
        found = answer_entities(call)
        return found[0][0].split("=", 1)[1] if found else None
    text = (call.answer or "").strip().strip('"')
    return text if text and BARE_ID.match(text) else None


def who(trace: Trace, calls: Sequence[ToolCall]) -> str | None:
    """The ``who:<id>`` handle of the conversation's person, or ``None`` (module docstring)."""
    for call in calls:
        if call.error or call.caller != "assistant" or call.answer is None:
            continue
        values = _values(call.arguments)
        if not values:
            continue
        said = _said_before(trace, call.turn)
        if all(v.lower() in said for v in values):
            found = _answered_id(call)
            if found is not None and found.lower() not in {v.lower() for v in values}:
                return f"who:{found}"
    return None
