"""What the user asks for, in the tools' own terms: the values they brought that a tool knows.

Two goals of one person often differ only in what is to change: "a brighter lamp" against "a
less bright one", "the canister vacuum" against "the robotic one", "32GB" against "16GB".
Their words are alike enough for any embedding, and a failed run of either reaches yet
another end state, so neither words nor end states tell them apart. What does is a value the
user said that the tools' data also holds, under the field that holds it: the user said
"canister" and a tool answered ``{"type": "canister"}``, so this goal asks for
``type=canister``; the other asks for ``type=robotic``.

Only values the user *brought* count: said in the goal's own turns before any agent message,
tool answer or call argument showed them. A value the user repeats after the agent offered it
("yes, the 750ml one") is an echo: a failed run's agent offers other values than a successful
one, and its user echoes them, so echoes would tell a goal's repeats apart. The field names
are whatever the tools call them; nothing here knows a domain.

Each requested value is a handle ``said:<field>=<value>``
(:mod:`judge_service.forge.merge`: one kind per field). Two goals that both name values of one
field and share none ask for different things, and are two goals.
"""

from __future__ import annotations

import re
from collections.abc import Iterator, Sequence
from typing import Any

from judge_service.traces.calls import ToolCall
from judge_service.traces.conversation import Trace, content_text, user_words

PREFIX = "said:"
TOKEN = re.compile(r"[\w#@+'.-]+")
#: A value shorter than this ("no", "M") or longer ("a description of…") names nothing.
MIN_CHARS, MAX_CHARS = 3, 40
#: A value of more words than this is a description, not a value one says.
MAX_WORDS = 4


def normal(text: str) -> str:
    """Lower-case words joined by single spaces, trailing punctuation dropped."""
    words = (w.strip(".,;:!?'-") for w in TOKEN.findall(text.lower()))
    return " ".join(w for w in words if w)


def _leaves(value: Any, field: str | None = None) -> Iterator[tuple[str, str]]:
    """``(field, value)`` of every text or integer leaf, a list's items under its field."""
    if isinstance(value, dict):
        for key, item in value.items():
            yield from _leaves(item, str(key))
    elif isinstance(value, list):
        for item in value:
            yield from _leaves(item, field)
    elif field is not None and isinstance(value, str | int) and not isinstance(value, bool):
        yield field, str(value)


def tool_values(calls: Sequence[ToolCall]) -> dict[str, set[str]]:
    """Every value the calls' arguments and answers hold, normalised, with its fields."""
    found: dict[str, set[str]] = {}
    for call in calls:
        for source in (call.arguments, call.payload):
            for field, raw in _leaves(source):
                value = normal(raw)
                if MIN_CHARS <= len(value) <= MAX_CHARS and value.count(" ") < MAX_WORDS:
                    found.setdefault(value, set()).add(field)
    return found


def _grams(words: list[str]) -> set[str]:
    return {
        " ".join(words[i : i + n])
        for n in range(1, MAX_WORDS + 1)
        for i in range(len(words) - n + 1)
    }


def shown_text(message: dict[str, Any]) -> str:
    """What a message showed the user: its text and its calls' arguments."""
    parts = [content_text(message.get("content"))]
    for call in message.get("tool_calls") or []:
        if isinstance(call, dict) and isinstance(call.get("function"), dict):
            parts.append(str(call["function"].get("arguments", "")))
    return normal(" ".join(parts))


def said_after_shown(
    messages: Sequence[dict[str, Any]], start: int, end: int
) -> Iterator[tuple[str, str]]:
    """Each user turn of messages ``[start, end)``, its words, with what the messages before it
    had shown the user (:func:`shown_text` of every agent and tool message, space-separated
    and space-framed): what the user brought is what the second does not hold."""
    shown = " "
    for turn, message in enumerate(messages[:end]):
        role = message.get("role")
        if role == "user":
            if turn >= start:
                yield user_words(content_text(message.get("content"))), shown
        elif role not in ("system", "developer"):
            shown += shown_text(message) + " "


def requested(trace: Trace, values: dict[str, set[str]], start: int, end: int) -> list[str]:
    """The ``said:<field>=<value>`` handles of the goal in messages ``[start, end)``: the
    :func:`tool_values` its user brought (module docstring), sorted."""
    found: set[str] = set()
    for said, shown in said_after_shown(trace.messages, start, end):
        for value in _grams(normal(said).split()) & values.keys():
            if f" {value} " not in shown:
                found.update(f"{PREFIX}{field}={value}" for field in values[value])
    return sorted(found)


def held(state: Any) -> set[str]:
    """The ``said:<field>=<value>`` handles an end state would match: its leaves, normalised
    as :func:`requested` writes them."""
    return {f"{PREFIX}{field}={normal(value)}" for field, value in _leaves(state)}
