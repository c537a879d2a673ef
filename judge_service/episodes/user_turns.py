"""What the traced user said: a run's user turns, and the turn most like a text.

A run's user turns are read from the messages of its goal (``[start, end]`` spans, ends
included, as a forge task's evidence records them), without simulator stop tokens
(``###STOP###``). Each turn is kept with what the agent asked just before it (an exchange).
What the user did on their own side (their tool calls, each with the turn they said
next) is read too (:func:`run_acts`). The user ends the conversation with its last turn
when that turn ended the traced conversation: the run's last user turn, or one with a stop
token. A goal that the run followed with another one did not end it; its user borrows the
run's closing turn (its last user turn, when that turn opens no new goal) and ends with
that.

Kept apart from :mod:`judge_service.episodes.script` (which builds an episode's script from
them) and :mod:`judge_service.episodes.user` (which says them), so neither imports the other.
"""

from __future__ import annotations

import functools
import math
import re
from collections import Counter
from collections.abc import Sequence
from typing import Any

from judge_service.episodes.agent_acts import spoken
from judge_service.traces.calls import tool_calls
from judge_service.traces.conversation import Trace, content_text
from judge_service.traces.goals import STOP_TOKEN, opens_new_goal, user_words

WORD = re.compile(r"\w+")


def _spans_messages(trace: Trace, spans: Sequence[Sequence[int]]) -> list[int]:
    """The message indexes of the spans (``[start, end]``, end included), in order, once."""
    size = len(trace.messages)
    indexes = [i for s in spans for i in range(max(0, s[0]), min(size - 1, s[1]) + 1)]
    return sorted(set(indexes))


def _last_user_turn(trace: Trace) -> int | None:
    return next(
        (
            i
            for i in range(len(trace.messages) - 1, -1, -1)
            if trace.messages[i].get("role") == "user"
            and user_words(content_text(trace.messages[i].get("content")))
        ),
        None,
    )


def run_turns(
    trace: Trace, spans: Sequence[Sequence[int]]
) -> tuple[list[str], list[dict[str, str]], bool]:
    """The user turns of a run's goal (``spans`` of messages), their exchanges, and whether
    the last of them ends the conversation (module docstring)."""
    turns: list[str] = []
    exchanges: list[dict[str, str]] = []
    asked = ""
    ends = False
    indexes = _spans_messages(trace, spans)
    for index in indexes:
        message = trace.messages[index]
        if message.get("role") == "assistant":
            asked = spoken(content_text(message.get("content"))).strip() or asked
        elif message.get("role") == "user":
            raw = content_text(message.get("content"))
            said = user_words(raw)
            if said:
                turns.append(said)
                exchanges.append({"asked": asked, "said": said})
                asked = ""  # a user's own tool call between keeps what was asked
            if STOP_TOKEN.search(raw):
                ends = bool(turns)
                break
    last = _last_user_turn(trace)
    if not ends and last is not None and turns:
        if last in indexes:
            ends = True
        elif indexes and last > indexes[-1] and not opens_new_goal(trace.messages, last):
            said = user_words(content_text(trace.messages[last].get("content")))
            before = [
                spoken(content_text(m.get("content"))).strip()
                for m in trace.messages[indexes[-1] + 1 : last]
                if m.get("role") == "assistant"
            ]
            turns.append(said)
            exchanges.append({"asked": next((t for t in reversed(before) if t), ""), "said": said})
            ends = True
    return turns, exchanges, ends


def _words(text: str) -> set[str]:
    return set(WORD.findall(text.lower()))


@functools.lru_cache(maxsize=1024)
def _corpus(
    documents: tuple[str, ...],
) -> tuple[list[set[str]], list[float], dict[str, float], float]:
    """The documents' words and norms, each word's IDF, and the IDF of a word none of them
    holds: the same at every step of a task's episodes (the traced turns), so read once per
    process. Its callers never change what it returns."""
    docs = [_words(d) for d in documents]
    frequency = Counter(w for d in docs for w in d)
    size = len(docs)
    idf = {w: math.log((1 + size) / (1 + count)) + 1.0 for w, count in frequency.items()}
    norms = [math.sqrt(sum(idf[w] ** 2 for w in doc)) for doc in docs]
    return docs, norms, idf, math.log(1 + size) + 1.0


def similarities(documents: Sequence[str], query: str) -> list[float]:
    """TF-IDF cosine of each document with ``query``, over words (0.0: no word shared).

    Hand-written rather than scikit-learn's ``TfidfVectorizer``: it runs inside an episode
    step over a dozen short turns (microseconds), and importing scikit-learn costs a process
    about a second of CPU that the service otherwise never pays on this path."""
    docs, norms, known, unseen = _corpus(tuple(documents))

    def idf(word: str) -> float:
        return known.get(word, unseen)

    words = _words(query)
    query_norm = math.sqrt(sum(idf(w) ** 2 for w in words)) or 1.0
    scores = []
    for doc, norm in zip(docs, norms, strict=True):
        shared = sum(idf(w) ** 2 for w in words & doc)
        scores.append(shared / (query_norm * norm) if shared else 0.0)
    return scores


def closest(texts: Sequence[str], query: str) -> int | None:
    """The index of the text most like ``query`` (:func:`similarities`; ties, and no overlap
    at all, go to the later text)."""
    if not texts:
        return None
    scores = similarities(texts, query)
    best = max(range(len(texts)), key=lambda i: (scores[i], i))
    return best


def run_acts(trace: Trace, spans: Sequence[Sequence[int]]) -> list[dict[str, Any]]:
    """What the traced user did on their own side within the goal: each of their tool calls
    (``tool``, ``arguments``, ``answer``) with the agent's words that asked for it (``asked``:
    its last text before the call) and the turn the user said next (``said``; "" if none)."""
    indexes = _spans_messages(trace, spans)
    inside = set(indexes)
    acts = []
    texts = [(i, _text(trace, i)) for i in indexes]
    for call in tool_calls(trace, ("user",)):
        if call.turn not in inside:
            continue
        asked = next(
            (
                t
                for i, t in reversed(texts)
                if i < call.turn and t and _role(trace, i) == "assistant"
            ),
            "",
        )
        said = next(
            (
                user_words(t)
                for i, t in texts
                if i > call.turn and _role(trace, i) == "user" and user_words(t)
            ),
            "",
        )
        acts.append(
            {
                "tool": call.name,
                "arguments": call.arguments,
                "answer": call.answer,
                "asked": asked,
                "said": said,
            }
        )
    return acts


def _text(trace: Trace, index: int) -> str:
    return content_text(trace.messages[index].get("content")).strip()


def _role(trace: Trace, index: int) -> Any:
    return trace.messages[index].get("role")
