"""An agent's message: the words it says, however wrapped, and what it does with them.

Some agents answer in JSON (``{"summary": "...", "next_step": "Please reply with ..."}``):
read raw, its sentences run together through escaped line breaks, so "Let me know which
option you prefer" is not seen as asking anything and the user leaves while the agent asks.
Such a message is read for its string values, in order, one per line (:func:`spoken`). Keys
are left out: they name the agent's layout, not what it says to the user.

What the message does (:func:`act_of`: proposes, asks, works or reports) and whether a user
turn decides on a proposal (:func:`is_decision`) are read from English phrasing only; none
names a tool, a field or an id of any domain. The replayed user chooses its answer by them
(:mod:`judge_service.episodes.user_answers`).
"""

from __future__ import annotations

import functools
import json
import re
from collections.abc import Iterator
from typing import Any, Literal

from judge_service.episodes.user_facts import FACT

Act = Literal["proposes", "asks", "works", "reports"]

#: A question that asks the other party for a decision on an action ("would you like to ..."
#: without "me" asks for a choice, not a decision).
PROPOSAL_QUESTION = re.compile(
    r"\b(?:confirm(?!\s+(?:your|the|that\s+your|which|whether))|proceed|go\s+ahead|shall\s+i"
    r"|should\s+i|would\s+you\s+like\s+me\s+to|do\s+you\s+want\s+me\s+to"
    r"|is\s+(?:that|this)\s+(?:ok|okay|correct|right|fine|alright)|are\s+you\s+sure)\b",
    re.IGNORECASE,
)
#: An explicit call for a yes, with or without a question mark ("please confirm if you'd
#: like me to proceed").
CALLS_FOR_YES = re.compile(
    r"yes\s*/\s*no|\(\s*yes\s*\)|\breply\s+(?:with\s+)?[\"'“]?yes|\bsay\s+[\"'“]?yes"
    r"|\bconfirm\s+(?:with\s+)?[\"'“]?yes"
    r"|\b(?:confirm|let\s+me\s+know)\s+(?:if|whether)\b[^.?!\n]*"
    r"\b(?:proceed|go\s+ahead)\b",
    re.IGNORECASE,
)
#: Where a sentence ends (split after it, so each piece keeps its mark).
SENTENCE_END = re.compile(r"(?<=[.?!\n])")
#: How much of a message's end is read: where its questions are; and a bound on the work a
#: step does for an agent that sends megabytes.
READ_CHARS = 4000
#: A request for something, where no question mark says so.
REQUESTS = re.compile(
    r"\b(?:please\s+(?:provide|share|tell|give|send|let\s+me\s+know|specify|choose|select"
    r"|confirm|reply|respond|verify|indicate|clarify|double[\s-]check)"
    r"|could\s+you|can\s+you|would\s+you|may\s+i\s+have|let\s+me\s+know|i\s+need\s+(?:your|the))\b",
    re.IGNORECASE,
)
#: The agent says it is doing something now: the user waits for it, it does not leave.
WORKS = re.compile(
    r"\b(?:let\s+me|i'?ll|i\s+will|i\s+am\s+going\s+to|i'?m\s+going\s+to|one\s+moment"
    r"|just\s+a\s+moment|a\s+moment|please\s+(?:wait|hold)|bear\s+with\s+me|checking|looking\s+(?:up|into))\b",
    re.IGNORECASE,
)
#: A user turn that agrees to an action: it opens with agreement ("sure" or "ok" only with a
#: word that agrees to act: "Sure, here are my details" agrees to nothing).
CONSENT = re.compile(
    r"^\W*(?:yes|yeah|yep|yup|i\s+confirm|confirm(?:ed)?|correct|that'?s\s+(?:right|correct)"
    r"|go\s+ahead|please\s+(?:go\s+ahead|proceed)|proceed"
    r"|(?:sure|ok|okay|alright|all\s+right)\W+(?:please\s+)?(?:go\s+ahead|proceed|do\s+it|confirm))\b",
    re.IGNORECASE,
)
#: A user turn that refuses: it opens with a no.
REFUSAL = re.compile(r"^\W*(?:no|nope)\b", re.IGNORECASE)
#: An offer of more help ("Is there anything else I can help you with?", a bare "More?"):
#: the one kind of question a user's closing turn answers.
OFFER = re.compile(
    r"\b(?:anything\s+(?:else|more|further)|something\s+else|any\s+other"
    r"|further\s+(?:assistance|help|questions?))\b|^\W*more\s*\?",
    re.IGNORECASE,
)


def _questions(text: str) -> list[str]:
    """The sentences of ``text`` that end with a question mark."""
    return [p for p in SENTENCE_END.split(text) if p.rstrip().endswith("?")]


def act_of(text: str) -> Act:
    """What the agent's message does (module docstring): proposes, asks, works or reports.
    It proposes when one of its questions asks for a decision, or it calls for a yes."""
    text = text[-READ_CHARS:]
    questions = _questions(text)
    if CALLS_FOR_YES.search(text) or any(PROPOSAL_QUESTION.search(q) for q in questions):
        return "proposes"
    if questions or REQUESTS.search(text):
        return "asks"
    if WORKS.search(text):
        return "works"
    return "reports"


def only_offers(text: str) -> bool:
    """Whether every sentence of the message that asks (a question, a request) offers more
    help and asks for nothing else: "Done. Anything else I can help you with?" does; "Which
    order should I cancel? Anything else?" and "Please provide your e-mail" do not."""
    asking = [
        p
        for p in SENTENCE_END.split(text[-READ_CHARS:])
        if p.rstrip().endswith("?") or REQUESTS.search(p)
    ]
    return bool(asking) and all(OFFER.search(p) for p in asking)


def asks_too(text: str) -> bool:
    """Whether a proposing message also asks for something: a question that is no proposal,
    or a request ("please provide your zip code")."""
    text = text[-READ_CHARS:]
    return bool(REQUESTS.search(text)) or any(
        not PROPOSAL_QUESTION.search(q) for q in _questions(text)
    )


def is_decision(turn: str) -> bool:
    """Whether a user turn is a decision on a proposal (it opens with a yes or a no)."""
    return bool(CONSENT.search(turn) or REFUSAL.search(turn))


def consents(turn: str) -> bool:
    """Whether a user turn agrees to an action (it opens with a yes)."""
    return bool(CONSENT.search(turn))


#: What may stand between a yes and the words beside it.
_LEAD = " ,.;:!\u2014\u2013\u2026-\n"


@functools.lru_cache(maxsize=4096)
def beside_yes(turn: str) -> str:
    """What a traced yes said beside the yes when that is no agreement of its own ("Yes,
    the order is #W52, the one with the lamp"), else "". Agreement that opens the rest
    ("Yes, please proceed. Cancel #W1 and #W2.") or closes it ("… Please go ahead.") is left
    out, and what is left must then hold a fact (a word with a digit, an e-mail address):
    "Yes, that's right. Please proceed." has nothing to say without its yes."""
    opening = CONSENT.match(turn)
    if opening is None:
        return ""
    kept: list[str] = []
    cut = False  # agreement was left out: before the words, or after them
    for sentence in SENTENCE_END.split(turn[opening.end() :]):
        words = sentence.lstrip(_LEAD)
        if is_decision(words) or PROPOSAL_QUESTION.search(words):
            cut = True
            if kept:  # agreement after the words: the rest is the decision, kept back
                break
            continue  # more agreement opening it ("Yes, please proceed. Cancel #W1.")
        kept.append(sentence)
    rest = "".join(kept).lstrip(_LEAD).rstrip()
    return "" if cut and not FACT.search(rest) else rest


def _strings(value: Any) -> Iterator[str]:
    """The string and number leaves of a JSON value, in document order."""
    if isinstance(value, str):
        yield value
    elif isinstance(value, dict):
        for item in value.values():
            yield from _strings(item)
    elif isinstance(value, list):
        for item in value:
            yield from _strings(item)
    elif isinstance(value, int | float) and not isinstance(value, bool):
        yield str(value)


#: A longer message is read as it is: parsing it would be work a step does for an agent that
#: sends megabytes.
MAX_JSON_CHARS = 65_536


def spoken(text: str) -> str:
    """The words of an agent's message: a JSON object or list read for its values (module
    docstring), any other text unchanged."""
    stripped = text.strip()
    if not stripped or stripped[0] not in "{[" or len(stripped) > MAX_JSON_CHARS:
        return text
    try:  # a text that opens with "{" or "[" parses to an object or a list, or not at all
        words = [s.strip() for s in _strings(json.loads(stripped))]
    except (ValueError, RecursionError):  # not JSON, or nested past what Python recurses
        return text
    return "\n".join(w for w in words if w)
