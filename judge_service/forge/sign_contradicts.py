"""``contradicts_user``: a write that used another value than the one the user asked for.

A write's argument is compared with the values the user could have meant for it, by shape,
never by its name: its *candidates* are the tokens of the same shape seen before the write
(in tool answers, the user's words, the agent's words). A token's shape is its digits' runs by
length with each run of letters as one letter: ``paypal_7644869`` and ``credit_card_9513926``
are both ``a#7``, ``#W2378156`` is ``#a#7``, ``1151293680`` is ``#10``. A candidate is
*named* by a text when the text holds the token itself, or one of its marks that no other
candidate has: a word of its letters (``paypal``, ``gift``) or a short word or number of the
record that carries it in a tool answer (``visa``, ``7285``).

The write contradicts the user when the user's answer to the agent's last question before it
(the turns :func:`~judge_service.forge.sign_writes.write_confirmed` reads) named a candidate
of a shape and none of the write's values of that shape, no call after that answer used the
candidate it named (it was asked for another call), the user never named the write's values
anywhere, and the agent, after that answer, never named them either (an agent that said "the
refund can only go to your Visa ending 7285" told the user, who went on). A token that
served as a call's argument before the write (the zip code the user gave to be found, the
order they named and the agent looked up) has been used for what it was said for, and names
nothing here. So the user who asked for PayPal and got, unannounced, a credit card is
flagged; the user who asked to change item A to item B, and got B, is not.
"""

from __future__ import annotations

import re
from collections.abc import Collection, Iterator, Sequence
from typing import Any

from judge_service.forge.sign_writes import is_write, write_confirmed
from judge_service.traces.calls import ToolCall
from judge_service.traces.conversation import FailureSign, Trace, content_text, excerpt, user_words

TOKEN = re.compile(r"[#A-Za-z0-9_-]*\d[#A-Za-z0-9_-]*")
WORD = re.compile(r"[a-z0-9]+")
_LETTERS = re.compile(r"[A-Za-z][A-Za-z_\- ]*")
_DIGITS = re.compile(r"\d+")
#: Marks shorter than this, or these, tell nothing apart.
MIN_MARK = 3
COMMON = frozenset({"the", "and", "for", "with", "card", "number", "account", "true", "false"})
#: Record values longer than this are descriptions, not marks.
MAX_MARK = 24


def _letters(run: re.Match[str]) -> str:
    """A run of letters as ``a``, with the mark that ends it (``_``, ``-``, a space)."""
    last = run.group(0)[-1]
    return "a" + (last if not last.isalpha() else "")


def shape(token: str) -> str:
    """The token's shape (module docstring): letters' runs as ``a``, digits' by length. The
    mark that ends a run of letters before its digits stays: ``RZ-8660475`` (``a-#7``) is
    no ``credit_card_2112420`` (``a_#7``), though the words of both are one letter each."""
    lettered = _LETTERS.sub(_letters, token)
    return _DIGITS.sub(lambda m: f"#{len(m.group(0))}", lettered)


def _norm(token: str) -> str:
    return token.lower().lstrip("#")


def scalars(value: Any) -> Iterator[str]:
    """The text and integer leaves of a JSON value, in document order, as text."""
    if isinstance(value, dict):
        for item in value.values():
            yield from scalars(item)
    elif isinstance(value, list):
        for item in value:
            yield from scalars(item)
    elif isinstance(value, str | int) and not isinstance(value, bool):
        yield str(value)


def _records(value: Any) -> Iterator[dict[str, Any]]:
    """Every object of a tool answer, at any depth."""
    if isinstance(value, dict):
        yield value
        for item in value.values():
            yield from _records(item)
    elif isinstance(value, list):
        for item in value:
            yield from _records(item)


#: Each call's answer as its objects (:func:`_records`), by the call's index: read once per
#: trace, for every token of every write looks through them.
Records = dict[int, list[dict[str, Any]]]


def _own_records(token: str, records: list[dict[str, Any]]) -> Iterator[dict[str, Any]]:
    """The objects of an answer that are the token's own record: listed under it as a key
    (``{"paypal_1": {...}}``), or holding it as their ``id``."""
    for record in records:
        if isinstance(record.get(token), dict):
            yield record[token]
        if str(record.get("id")) == token:
            yield record


def _marks(token: str, calls: Sequence[ToolCall], before: int, records: Records) -> set[str]:
    """The words of a token and of the records that carry it (as a value or a key) in the
    answers before message ``before``."""
    marks = {w for w in WORD.findall(_LETTERS.sub(lambda m: " " + m.group(0) + " ", token).lower())}
    marks.add(_norm(token))
    for call in calls:
        if call.answer_turn is None or call.answer_turn >= before or call.error:
            continue
        for record in _own_records(token, records[call.index]):
            for value in record.values():
                if isinstance(value, str | int) and not isinstance(value, bool):
                    text = str(value).lower()
                    if len(text) <= MAX_MARK:
                        marks.update(WORD.findall(text))
    return {m for m in marks if len(m) >= MIN_MARK and m not in COMMON}


def _named(text_words: set[str], marks: set[str]) -> bool:
    return bool(marks & text_words)


def _turn_words(message: dict[str, Any]) -> set[str]:
    text = content_text(message.get("content"))
    if message.get("role") == "user":
        text = user_words(text)
    return set(WORD.findall(text.lower())) | {_norm(t) for t in TOKEN.findall(text)}


def _write_values(call: ToolCall) -> dict[str, set[str]]:
    """The write's token values by shape."""
    found: dict[str, set[str]] = {}
    for value in scalars(call.arguments):
        if TOKEN.fullmatch(value):
            found.setdefault(shape(value), set()).add(value)
    return found


def _candidates(
    trace: Trace, calls: Sequence[ToolCall], before: int, kind: str, records: Records
) -> set[str]:
    seen: set[str] = set()
    for message in trace.messages[:before]:
        if message.get("role") in ("system", "developer"):
            continue
        seen.update(
            t for t in TOKEN.findall(content_text(message.get("content"))) if shape(t) == kind
        )
    for call in calls:
        if call.answer_turn is not None and call.answer_turn < before:
            seen.update(t for t in scalars(call.payload) if TOKEN.fullmatch(t) and shape(t) == kind)
            for record in records[call.index]:
                seen.update(k for k in record if TOKEN.fullmatch(k) and shape(k) == kind)
    return seen


def _contradiction(
    trace: Trace,
    calls: Sequence[ToolCall],
    write: ToolCall,
    kind: str,
    used: set[str],
    records: Records,
) -> str | None:
    """Why ``write``'s values of shape ``kind`` contradict the user, or ``None``."""
    candidates = _candidates(trace, calls, write.turn, kind, records) | used
    if len(candidates) < 2:
        return None
    consumed = {_norm(v) for c in calls if c.turn < write.turn for v in scalars(c.arguments)} - {
        _norm(u) for u in used
    }
    all_marks = {c: _marks(c, calls, write.turn, records) for c in candidates}
    own = {
        c: marks - set().union(*(m for o, m in all_marks.items() if o != c)) - consumed
        for c, marks in all_marks.items()
    }
    users = [
        (turn, _turn_words(m))
        for turn, m in enumerate(trace.messages[: write.turn])
        if m.get("role") == "user" and user_words(content_text(m.get("content")))
    ]
    used_marks = set().union(*(own[u] for u in used))
    if any(_named(words, used_marks) for _, words in users):
        return None  # the user asked for what was used, at some point
    _, proposal = write_confirmed(trace, write)
    answer = [(t, w) for t, w in users if proposal is None or t > proposal]
    latest = next(
        ((t, w) for t, w in reversed(answer) if any(_named(w, own[c]) for c in candidates)), None
    )
    if latest is None:
        return None
    turn, words = latest
    # a value that a call after that turn used was asked for another call
    later = {_norm(v) for c in calls if c.turn > turn for v in scalars(c.arguments)}
    asked = sorted(c for c in candidates - used if _named(words, own[c]) and _norm(c) not in later)
    told = any(
        m.get("role") == "assistant" and _named(_turn_words(m), used_marks)
        for m in trace.messages[turn + 1 : write.turn + 1]
    )
    if told or not asked:
        return None
    return f"{write.name} used {', '.join(sorted(used))}; the user asked for {', '.join(asked)}"


def contradicts_user(
    trace: Trace, calls: Sequence[ToolCall], writes: Collection[str] | None = None
) -> list[FailureSign]:
    """A ``contradicts_user`` sign for each successful write whose values the user's own
    words contradict (module docstring), at the write's turn."""
    signs = []
    records: Records | None = None
    for call in calls:
        if call.error or call.caller != "assistant" or not is_write(call.name, writes):
            continue
        if records is None:
            records = {c.index: list(_records(c.payload)) for c in calls}
        for kind, used in sorted(_write_values(call).items()):
            why = _contradiction(trace, calls, call, kind, used, records)
            if why is not None:
                signs.append(FailureSign("contradicts_user", call.turn, excerpt(why)))
                break
    return signs
