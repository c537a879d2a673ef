"""``invented_value``: a write that used a value of words no one had said.

A choice the user must make (why an order is cancelled, which cabin, which kind of trip) goes
into a write's arguments as words. When those words appear nowhere before the write, not in
the user's turns, nor the agent's, nor any tool's answer, nor an earlier call's arguments,
the agent chose for the user without asking and without saying so: the user never had the
chance to say otherwise. A system prompt does not count: a policy lists the choices
("no longer needed", "ordered by mistake"), it makes none. On the real retail runs 8 runs
made such a write (a cancellation's reason that nobody mentioned, a state's code the user
never said), and 6 of them failed.

Only short values of words count (:data:`MAX_WORDS`, no digit): ids, amounts and dates are
looked up or computed, and :mod:`~judge_service.forge.sign_contradicts` checks those against
the user's words; long free text (a summary for a human agent) is the agent's own. Words
compare without case or punctuation: ``one_way`` was said as "one-way".
"""

from __future__ import annotations

import json
import re
from collections.abc import Collection, Iterator, Sequence
from typing import Any

from judge_service.forge.sign_contradicts import scalars
from judge_service.forge.sign_writes import is_write
from judge_service.traces.calls import ToolCall
from judge_service.traces.conversation import FailureSign, Trace, content_text, excerpt

#: Values of more words than this are free text, not a choice.
MAX_WORDS = 4
_NON_WORD = re.compile(r"[^a-z0-9]+")
_DIGIT = re.compile(r"\d")


def _words(text: str) -> str:
    """``text`` lowercased, each run of other characters one space, padded to match words."""
    return f" {_NON_WORD.sub(' ', text.lower()).strip()} "


def _choices(arguments: Any) -> Iterator[str]:
    """The argument values that are short words (module docstring), nested ones included."""
    for value in scalars(arguments):
        words = _words(value)
        if not _DIGIT.search(value) and 0 < len(words.split()) <= MAX_WORDS:
            yield words


def invented_values(
    trace: Trace, calls: Sequence[ToolCall], writes: Collection[str] | None = None
) -> list[FailureSign]:
    """An ``invented_value`` sign at the first successful write of the agent's that used a
    value no earlier message or call held (module docstring)."""
    said: list[str] = []  # the words of each message and call, in message order
    by_turn: dict[int, list[ToolCall]] = {}
    for call in calls:
        by_turn.setdefault(call.turn, []).append(call)
    for turn, message in enumerate(trace.messages):
        for call in by_turn.get(turn, []):
            if not call.error and call.caller == "assistant" and is_write(call.name, writes):
                before = "".join(said)
                for value in _choices(call.arguments):
                    if value not in before:
                        why = f"{call.name}: {value.strip()!r} was said by no one before"
                        return [FailureSign("invented_value", call.turn, excerpt(why))]
            said.append(_words(json.dumps(call.arguments)))
        if message.get("role") != "system":  # a policy lists the choices, it makes none
            said.append(_words(content_text(message.get("content"))))  # a tool's answer too
    return []
