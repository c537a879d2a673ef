"""Failure signs from what a run did against what its user said: writes, claims, hand-offs.

- ``claimed_without_write``: the agent says a change is done ("your order has been
  cancelled", "I've updated …") while no call that could change anything has succeeded yet,
  neither the agent's nor the user's own (a user with tools of their own).
- ``transfer_without_trying``: a hand-off to a human (a call named like one, or one that
  changes nothing and answers in a few words that the hand-off is done) before anything
  was tried: no call that could change anything, by the agent or the user, no tool that
  refused, and no word of the agent that the request cannot be done.
- ``consented_not_done``: the agent's last words propose a change and ask the user to
  confirm it ("Would you like me to proceed with the return?"), the user's last words say
  yes, and nothing that could change anything was called after the proposal, by the agent or
  the user: the run ended with what the user had just agreed to undone. Words that report a
  change done propose nothing, and a hand-off (proposed or asked for) changes nothing.
- ``unconfirmed_write`` (a weak cue, not a failure: :func:`unconfirmed_writes`): a write
  with no "yes" from the user between the agent's last words and the call. On the real
  τ²-bench retail runs such writes failed about as often as confirmed ones (a third), so it
  is reported beside the failures and marks nothing failed.

A write is a call of a tool in ``writes`` (the classes of :mod:`judge_service.traces.effects`;
with none given, tools whose names read as writes), never one whose name reads as a read
(``get_``, ``find_``): the evidence that classes tools can blame the read that showed a
change. Where a sign only needs to know that nothing changed, any call whose name does not
read as a read, nor as a hand-off, counts as one that could have, unless the tools are classed
and it is no write (:func:`may_write`): another domain's names may read as neither (``op_3``),
and a lookup whose name says nothing would then back every claim of a change done. On the real
retail runs with every tool renamed ``op_<n>`` and every field in the other case style
(``bench/real_traces_figures.renamed``), the signs keep their figures to the last digit
(balanced accuracy 0.770; 0.735 while names decided).
"""

from __future__ import annotations

import re
from collections.abc import Collection, Iterator, Sequence
from typing import Any

from judge_service.traces.calls import ToolCall
from judge_service.traces.conversation import FailureSign, Trace, content_text, excerpt, user_words
from judge_service.traces.effects import HANDOFF, name_prior

_DONE = (
    r"(?:cancell?ed|processed|refunded|updated|modified|exchanged|returned|submitted|changed|"
    r"completed|enabled|disabled|placed|booked|reserved|applied|issued|initiated|added|"
    r"removed|reverted|sent|activated|deactivated|resumed|suspended|upgraded|downgraded|"
    r"rebooked|rescheduled|scheduled|created|deleted|paid|charged|credited|restored|"
    r"unlocked|reset|renewed|approved|registered|opened|closed)"
)
#: A sentence that says a change is done: "… has been cancelled", "I've updated …".
CLAIM = re.compile(
    r"\b(?:has|have)\s+(?:now\s+|just\s+)?been\s+(?:now\s+)?(?:successfully\s+)?" + _DONE + r"\b"
    r"|\bI(?:'ve| have)\s+(?:now\s+|just\s+)?(?:successfully\s+)?" + _DONE + r"\b"
    r"|\bsuccessfully\s+" + _DONE + r"\b",
    re.IGNORECASE,
)
#: Words that make a sentence a condition, a question, a negation or a plan, not a claim.
HEDGE = re.compile(
    r"\b(?:if|once|after|when|whether|until|before|unless|no|not|never|cannot|will|would|"
    r"can|could|should|may|might|already)\b|n't\b|\?",
    re.IGNORECASE,
)
SENTENCE = re.compile(r"[^.!?\n]+[.!?]?")
#: The agent saying the request cannot be done (a reason to hand off without trying).
REFUSAL = re.compile(
    r"\b(?:cannot|can ?not|unable|not (?:possible|allowed|permitted|eligible|able|supported)|"
    r"against (?:our|the) polic|polic(?:y|ies) (?:does not|doesn't|do not|don't)|"
    r"only (?:be|possible|allowed)|must (?:go|be))\b|can't\b|(?:is|are)n't (?:possible|"
    r"allowed|eligible)",
    re.IGNORECASE,
)
#: A user turn that says yes to what the agent proposed.
AFFIRM = re.compile(
    r"\b(?:yes|yeah|yep|yup|confirm(?:ed)?|proceed|go ahead|do it|sounds (?:good|great|"
    r"perfect|right)|that (?:works|is (?:right|correct|fine))|that'?s (?:right|correct|fine|"
    r"perfect|good)|please do|absolutely|approved?)\b|^\W*(?:sure|ok(?:ay)?|correct|right|"
    r"alright|perfect|great|fine|agreed)\b",
    re.IGNORECASE,
)
#: Agent words that ask the user something: a question or a request to confirm.
ASKS = re.compile(r"\?|\b(?:confirm|shall i|should i|would you like|do you want)\b", re.IGNORECASE)
#: Agent words that propose an action and ask for the go-ahead (not "anything else?").
PROPOSES = re.compile(
    r"\b(?:confirm|proceed|go ahead|shall i|should i|would you like me to|do you want me to|"
    r"(?:may|can) i (?:go ahead|proceed))\b",
    re.IGNORECASE,
)
#: A sentence that asks for the go-ahead without a question mark ("Please confirm if you'd
#: like to proceed.", "Let me know if you want me to go ahead.").
CONFIRM_REQUEST = re.compile(
    r"^\W*(?:please |kindly )?confirm\b|\bplease confirm\b|\blet me know if you(?:'d| would)? "
    r"(?:like|want)",
    re.IGNORECASE,
)
REFUSE_ACTION = re.compile(r"^\W*(?:no\b|nope\b|don'?t\b|do not\b|wait\b|hold on\b|stop\b)", re.I)
#: A user turn that turns the offer down, wherever it says so ("Perfect. No need to …").
DECLINES = re.compile(r"\b(?:no need|not necessary|(?:don'?t|do not) need|no,? thanks?)\b", re.I)


def plain(text: str) -> str:
    """``text`` with typographic apostrophes as ASCII ones, for the patterns here."""
    return text.replace("\u2019", "'")


def says_yes(turn: str) -> bool:
    """Whether a user turn says yes to what the agent proposed (and does not open with a no)."""
    return bool(AFFIRM.search(turn)) and not REFUSE_ACTION.search(turn)


def may_write(name: str, writes: Collection[str] | None = None) -> bool:
    """Whether a call of ``name`` could change something: its name reads neither as a read
    nor as a hand-off, and, where the tools are classed (``writes``), it is a write. A
    domain's names may say nothing (``op_3``, ``customer.lookup``): a lookup that the traces
    show changing nothing is then no write, however it is named."""
    if name_prior(name) == "read" or HANDOFF.search(name):
        return False
    return writes is None or name in writes


#: A tool's short answer that reports a hand-off done ("Transfer successful"), and how long
#: such an answer may be (a longer one describes, say, a payment transfer's record).
HANDED_OFF = re.compile(r"success|complete|connected|escalated|transferred", re.IGNORECASE)
HANDOFF_ANSWER_CHARS = 80


def hands_off(call: ToolCall, writes: Collection[str] | None = None) -> bool:
    """Whether a call hands the conversation to a human: named like a hand-off, or, whatever
    its name (``op_9``), a tool that changes nothing answering in a few words that the
    hand-off is done."""
    if HANDOFF.search(call.name):
        return True
    answer = call.answer or ""
    return (
        writes is not None
        and call.name not in writes
        and len(answer) <= HANDOFF_ANSWER_CHARS
        and bool(HANDOFF.search(answer))
        and bool(HANDED_OFF.search(answer))
    )


def is_write(name: str, writes: Collection[str] | None) -> bool:
    """Whether a call of ``name`` is a write (module docstring)."""
    if name_prior(name) == "read" or HANDOFF.search(name):
        return False
    return name in writes if writes is not None else name_prior(name) == "write"


def _changed_before(
    calls: Sequence[ToolCall], turn: int, writes: Collection[str] | None = None
) -> bool:
    """Whether a call that could change something succeeded (the agent's) or was made (the
    user's) before message ``turn``. ``calls`` are both roles' (``tool_calls(trace,
    roles=("assistant", "user"))``)."""
    return any(
        c.turn < turn and may_write(c.name, writes) and (c.caller == "user" or not c.error)
        for c in calls
    )


def claims(text: str) -> Iterator[str]:
    """The sentences of an agent turn that say a change is done, plainly."""
    for match in SENTENCE.finditer(text):
        sentence = match.group(0).strip()
        if CLAIM.search(sentence) and not HEDGE.search(sentence):
            yield sentence


def claimed_without_write(
    trace: Trace, calls: Sequence[ToolCall], writes: Collection[str] | None = None
) -> list[FailureSign]:
    """The first claim of a change done before anything that could change succeeded."""
    for turn, message in enumerate(trace.messages):
        if message.get("role") != "assistant":
            continue
        for sentence in claims(plain(content_text(message.get("content")))):
            if not _changed_before(calls, turn + 1, writes):
                return [FailureSign("claimed_without_write", turn, excerpt(sentence))]
    return []


def transfer_without_trying(
    trace: Trace, calls: Sequence[ToolCall], writes: Collection[str] | None = None
) -> list[FailureSign]:
    """A hand-off before any change was tried, refused by a tool, or said impossible."""
    handoff = next((c for c in calls if c.caller == "assistant" and hands_off(c, writes)), None)
    if handoff is None:
        return []
    tried = any(may_write(c.name, writes) or c.error for c in calls if c.index < handoff.index)
    refused = any(
        m.get("role") == "assistant" and REFUSAL.search(plain(content_text(m.get("content"))))
        for m in trace.messages[: handoff.turn + 1]
    )
    if tried or refused:
        return []
    return [
        FailureSign(
            "transfer_without_trying",
            handoff.turn,
            f"{handoff.name} before any change was tried or refused",
        )
    ]


def _spoken(message: dict[str, Any]) -> str:
    return content_text(message.get("content")).strip()


def _agent_turns(messages: list[dict[str, Any]], before: int) -> list[int]:
    return [
        t for t in range(before) if messages[t].get("role") == "assistant" and _spoken(messages[t])
    ]


def write_confirmed(trace: Trace, call: ToolCall) -> tuple[bool, int | None]:
    """Whether the user said yes to ``call``, and the turn of the agent's words it answers
    (``None``: the agent said nothing before it). Those words are the agent's last question
    or request for confirmation before the call (else its last words); the yes is a user turn
    between them and the call. A call whose own message asks something was not waited for."""
    messages = trace.messages
    if ASKS.search(_spoken(messages[call.turn])):
        return False, call.turn
    spoken = _agent_turns(messages, call.turn)
    asked = [t for t in spoken if ASKS.search(_spoken(messages[t]))]
    proposal = asked[-1] if asked else (spoken[-1] if spoken else None)
    answers = [
        plain(user_words(_spoken(m)))
        for m in messages[(proposal + 1 if proposal is not None else 0) : call.turn]
        if m.get("role") == "user" and user_words(_spoken(m))
    ]
    yes = any(says_yes(a) for a in answers)
    return yes, proposal


def unconfirmed_writes(
    trace: Trace, calls: Sequence[ToolCall], writes: Collection[str] | None = None
) -> list[FailureSign]:
    """An ``unconfirmed_write`` cue for each successful write the user did not say yes to."""
    found = []
    for call in calls:
        if call.error or call.caller != "assistant" or not is_write(call.name, writes):
            continue
        yes, spoke = write_confirmed(trace, call)
        if yes:
            continue
        said = _spoken(trace.messages[spoke]) if spoke is not None else ""
        after = f"after the agent's {excerpt(said, 100)!r}" if said else "before the agent spoke"
        found.append(FailureSign("unconfirmed_write", call.turn, f"{call.name}, no yes {after}"))
    return found


def _proposes(text: str) -> bool:
    """Whether agent words ask the go-ahead for an action: a question that proposes one, or
    a request to confirm it (not a hand-off to a human), in words that claim no change done."""
    if any(claims(text)):
        return False
    sentences = [m.group(0) for m in SENTENCE.finditer(text)]
    asks = [s for s in sentences if s.endswith("?") or CONFIRM_REQUEST.search(s)]
    return any(PROPOSES.search(s) and not HANDOFF.search(s) for s in asks)


def consented_not_done(
    trace: Trace, calls: Sequence[ToolCall], writes: Collection[str] | None = None
) -> list[FailureSign]:
    """The user's last words say yes to the agent's last proposal, and nothing was done after
    it (``consented_not_done`` above)."""
    messages = trace.messages
    spoken = _agent_turns(messages, len(messages))
    if not spoken or not _proposes(plain(_spoken(messages[spoken[-1]]))):
        return []
    proposal = spoken[-1]
    answers = [
        (t, plain(user_words(_spoken(m))))
        for t, m in enumerate(messages)
        if t > proposal and m.get("role") == "user" and user_words(_spoken(m))
    ]
    if not answers:
        return []
    turn, last = answers[-1]
    if not says_yes(last) or DECLINES.search(last):
        return []
    if HANDOFF.search(last):  # "yes, transfer me": a hand-off changes nothing
        return []
    if any(c.turn > proposal and may_write(c.name, writes) for c in calls):
        return []
    return [FailureSign("consented_not_done", turn, excerpt(last))]
