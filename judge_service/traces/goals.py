"""A conversation's user goals: where each starts, what the user asked, the facts they gave.

The unit is the goal, not the user turn. A goal starts at the first user turn with text.
Every later user turn continues it (answers to the agent's questions, of any length,
confirmations, corrections) unless the user clearly turns to a *different* goal: the turn
opens, after at most a word of thanks, with a cue such as "Also", "One more thing",
"Next, I'd like" or "I also need", and the agent's last words before it asked nothing
(or only "anything else?"), so the goal before was done.

A goal's request is the opening request plus the facts the user supplied while the agent
asked for them: the later user sentences that carry content (not "yes", "thanks"). Its
entities are the id-like tokens of its user turns (anything with a digit, e-mail addresses),
and the names the user gives for themselves: the handles that keep two goals on different
records, or of different people, apart. An id-like token counts only where the user brought
it: one that the agent's words, a tool's answer or a call showed before the user said it is
an echo ("yes, item 1569765161"), and a failed run's agent shows other ids than a successful
one's, so echoes would keep one goal's repeats apart. A later goal of a conversation also
carries the e-mail addresses and names given in the goals before it (the same person asks),
not their record ids (the later goal is about another record).
"""

from __future__ import annotations

import itertools
import re
from dataclasses import dataclass, field
from typing import Any

from judge_service.traces.conversation import STOP_TOKEN as STOP_TOKEN  # where it was first
from judge_service.traces.conversation import Trace, content_text, user_words
from judge_service.traces.requested import normal, said_after_shown

_THANKS = (
    r"(?:(?:ok(?:ay)?|great|perfect|awesome|wonderful|excellent|cool|alright|good|nice|"
    r"thanks?(?: you)?(?: so much| very much)?|thank you|got it|that'?s (?:great|perfect|"
    r"helpful|good))\b[^.!?\n]{0,60}?[.!?,;:]+\s*)*"
)
NEW_GOAL = re.compile(
    r"^\W*" + _THANKS + r"(?:(?:and|so|oh|now),?\s+)?"
    r"(?:also\b|one more\b|another\b|additionally\b|separately\b|besides\b|next\b|"
    r"on (?:a|another) (?:different|separate) note|while (?:i have you|you'?re at it)|"
    r"i (?:also|have (?:another|one more|a second|a different))\b|i'?d also\b|i would also\b|"
    r"i (?:want|need|would like) to also\b|(?:can|could|would) you also\b|"
    r"now,? (?:i|can|could|please)\b)",
    re.IGNORECASE,
)
CLOSING_QUESTION = re.compile(
    r"(anything else|any other|anything more|further (?:assistance|help|questions?)|"
    r"else (?:i|we) can|help you with (?:today|anything))",
    re.IGNORECASE,
)
ENTITY = re.compile(
    r"[\w.+-]+@[\w-]+\.[\w.-]+|#?[A-Za-z_-]*\d[\w#-]*",
)
NAME = re.compile(
    r"\b(?i:my name is|my name,|name'?s|under the name|i am|i'?m|this is|it'?s|called)\s+"
    r"((?:[A-Z][a-z'-]+\s+){1,2}[A-Z][a-z'-]+)"
)
SENTENCE = re.compile(r"(?<=[.!?])\s+|\n+")
PLEASANTRY = re.compile(
    r"^\W*(yes|yeah|yep|yup|no|nope|sure|ok(ay)?|please( do| go ahead| proceed)?|go ahead|"
    r"proceed|correct|right|exactly|confirm(ed)?|that'?s (right|correct|all|it)|thanks?"
    r"( you)?( so much| very much)?|thank you|great|perfect|awesome|bye|goodbye|hi|hello|hey|"
    r"that'?s all( i needed)?|have a (nice|good|great) day)\b[\W]*$",
    re.IGNORECASE,
)


@dataclass
class Goal:
    """One user goal of a trace: messages ``[start, end)``."""

    trace_id: str
    start: int
    end: int
    request: str
    opening: str
    facts: list[str]
    entities: list[str]
    user_text: str
    prompt: list[dict[str, Any]]
    tools: list[Any] | None
    rest: list[dict[str, Any]]
    failures: list[Any] = field(default_factory=list)
    #: The people of the conversation's earlier goals (e-mails, names).
    context: list[str] = field(default_factory=list)
    #: What the user asked for in the tools' terms (:mod:`judge_service.traces.requested`).
    requested: list[str] = field(default_factory=list)

    @property
    def turn(self) -> int:
        return self.start

    def line(self, limit: int = 240) -> str:
        """The rule's one-line goal: the opening request and the facts' entities."""
        head = " ".join(self.opening.split())
        if len(head) > 160:
            head = head[:159] + "\u2026"
        shown = [e[5:].title() if e.startswith("name:") else e for e in self.entities[:8]]
        tail = ", ".join(shown)
        line = f"{head} [{tail}]" if tail else head
        return line if len(line) <= limit else line[: limit - 1] + "\u2026"


def entities_in(text: str) -> list[str]:
    """Id-like tokens of ``text`` in order, once each, and the names people give for
    themselves ("my name is Ada Lovelace" gives ``name:ada lovelace``)."""
    found = [f"name:{m.group(1).lower()}" for m in NAME.finditer(text)]
    for match in ENTITY.finditer(text):
        token = match.group(0).strip(".-_,;:")
        digits = sum(ch.isdigit() for ch in token)
        if "@" in token or (len(token) >= 3 and digits >= 3) or (digits and len(token) >= 5):
            found.append(token)
    return list(dict.fromkeys(found))


def facts_in(text: str) -> list[str]:
    """The sentences of a user turn that carry content."""
    return [
        s.strip()
        for s in SENTENCE.split(user_words(text))
        if s.strip() and not PLEASANTRY.match(s.strip())
    ]


def _last_assistant_text(messages: list[dict[str, Any]], before: int) -> str:
    for message in reversed(messages[:before]):
        if message.get("role") == "assistant":
            text = content_text(message.get("content")).strip()
            if text:
                return text
    return ""


def opens_new_goal(messages: list[dict[str, Any]], turn: int) -> bool:
    """Whether the user turn at ``turn`` turns to a different goal (module docstring)."""
    text = user_words(content_text(messages[turn].get("content")))
    if not NEW_GOAL.match(text):
        return False
    last = _last_assistant_text(messages, turn)
    if not last:
        return False
    tail = last.rstrip()[-200:]
    asked = "?" in tail and not CLOSING_QUESTION.search(tail)
    return not asked


def brought_entities(messages: list[dict[str, Any]], start: int, end: int) -> list[str]:
    """The :func:`entities_in` of the user turns in ``[start, end)``, without the id-like
    tokens an earlier message showed the user (module docstring); names and e-mails stay."""
    found: list[str] = []
    for said, shown in said_after_shown(messages, start, end):
        for entity in entities_in(said):
            person = "@" in entity or entity.startswith("name:")
            if person or normal(entity).lstrip("#") not in shown:
                found.append(entity)
    return list(dict.fromkeys(found))


def _goal(trace: Trace, start: int, end: int) -> Goal:
    messages = trace.messages
    turns = [
        user_words(content_text(m.get("content")))
        for m in messages[start:end]
        if m.get("role") == "user"
    ]
    turns = [t for t in turns if t]
    opening_index = 0
    # a bare greeting ("Hi!") is no request: the next user turn opens the goal with it
    while opening_index + 1 < len(turns) and not facts_in(turns[opening_index]):
        opening_index += 1
    opening = " ".join(turns[: opening_index + 1])
    facts = [f for t in turns[opening_index + 1 :] for f in facts_in(t)]
    request = opening if not facts else opening + "\n" + "\n".join(facts)
    return Goal(
        trace_id=trace.id,
        start=start,
        end=end,
        request=request,
        opening=opening,
        facts=facts,
        entities=brought_entities(messages, start, end),
        user_text=" ".join(turns),
        prompt=messages[: start + 1],
        tools=trace.tools,
        rest=messages[start + 1 : end],
    )


def goals(trace: Trace) -> list[Goal]:
    """The trace's goals, in order: none when the user said nothing but stop tokens (the
    job sets such a trace aside, :func:`judge_service.traces.conversation.unforgeable`)."""
    messages = trace.messages
    users = [
        i
        for i, m in enumerate(messages)
        if m.get("role") == "user" and user_words(content_text(m.get("content")))
    ]
    if not users:
        return []
    starts = [users[0]] + [i for i in users[1:] if opens_new_goal(messages, i)]
    ends = [*starts[1:], len(messages)]
    found = [_goal(trace, s, e) for s, e in zip(starts, ends, strict=True)]
    for earlier, later in itertools.pairwise(found):
        people = [e for e in earlier.entities if "@" in e or e.startswith("name:")]
        later.context = list(dict.fromkeys([*earlier.context, *people]))
    return found
