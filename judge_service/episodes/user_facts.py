"""The facts in a user's words, and the words that label them.

A user turn carries facts: a word with a digit (an order number, a zip code, an amount) or
an e-mail address. Which fact a turn carries is told by the words just before it ("my zip
code is 46236": zip, code), so an agent asking for "your name and zip code" can be answered
with the turn whose facts those words label, though another turn shares more of its words
(:mod:`judge_service.episodes.user_answers`). English function words label nothing; no
rule names a field of any domain.
"""

from __future__ import annotations

import functools
import re

#: A fact in a user's words: a word with a digit, or an e-mail address.
FACT = re.compile(r"[\w.+-]+@[\w-]+(?:\.[\w-]+)+|[\w+-]*\d[\w+-]*")
WORD = re.compile(r"[a-z]+")
#: Words that label nothing: English function words.
FUNCTION_WORDS = frozenset(
    re.findall(
        r"\w+",
        "a an the my is are was it its this that of for to in on at and "
        "or with by be as i me you your our we us his her their them please here "
        "there just also can could would should will have has had do does did not no yes any some",
    )
)
#: Words before a fact that label it ("my zip code is 46236": zip, code).
LABEL_REACH = 4


@functools.lru_cache(maxsize=8192)
def fact_labels(turn: str) -> frozenset[str]:
    """The words that label the facts of a user turn: up to :data:`LABEL_REACH` content words
    before each fact, and an e-mail's own word ("email")."""
    labels: set[str] = set()
    low = turn.lower()
    for found in FACT.finditer(low):
        if "@" in found.group():
            labels.add("email")
        before = WORD.findall(low[max(0, found.start() - 60) : found.start()])
        labels.update(w for w in before[-LABEL_REACH:] if w not in FUNCTION_WORDS)
    return frozenset(labels)


def requested_words(asked: str, read: int) -> frozenset[str]:
    """The content words of the agent's message (its read end): what a fact must be
    labelled by to answer it. The whole message, not only its questions: "or I can use your
    name and zip code" asks too."""
    return frozenset(w for w in WORD.findall(asked[-read:].lower()) if w not in FUNCTION_WORDS)
