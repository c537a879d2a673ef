"""The signs that a trace went wrong, each with its turn and an excerpt.

- ``user_complaint``: the user says the agent was wrong ("that's not what I asked").
- ``tool_error``: a tool call failed and no later call of that tool succeeded. An error the
  agent recovered from (a typo in an e-mail, then the right one) is ordinary work.
- ``retry_loop``: the same call, name and arguments, three times.
- ``abandoned``: the conversation stops without an ending: its last word is not the agent's
  answer, nor the user's thanks or goodbye, nor a completed transfer to a human (a call
  named or answered like one: ``transfer_to_human``, "Transfer successful").
- ``disagrees_with_consensus`` (:mod:`judge_service.forge.trace_tasks`): the trace's end
  state differs from the one its task's other repeats agree on.
"""

from __future__ import annotations

import json
import re
from collections import Counter
from collections.abc import Sequence

from judge_service.forge.calls import ToolCall
from judge_service.forge.traces import (
    STOP_TOKEN,
    FailureSign,
    Trace,
    content_text,
    excerpt,
    user_words,
)

COMPLAINT = re.compile(
    r"\b(that'?s (wrong|not right|incorrect)|(is|was|it'?s) (wrong|incorrect)|not what i "
    r"(asked|wanted|meant)|you (didn'?t|did not|forgot|ignored|missed)|(doesn'?t|does not|"
    r"didn'?t|did not) work|still (broken|wrong|not working|failing)|i (said|told you)|"
    r"no,? i meant|try again|useless|that'?s not it)\b",
    re.IGNORECASE,
)
CLOSING = re.compile(
    r"\b(thanks?|thank you|thx|cheers|that'?s (all|it|everything)|that is all|all set|"
    r"good ?bye|bye|have a (nice|good|great) (day|one|evening)|nothing (else|more)|"
    r"no,? (that'?s|thank)|appreciate)",
    re.IGNORECASE,
)
HANDOFF = re.compile(r"transfer|handoff|hand_off|escalat|human", re.IGNORECASE)
#: An identical tool call (name and arguments) this many times in one trace is a retry loop.
RETRY_LOOP_CALLS = 3


def _call_key(call: ToolCall) -> str:
    return json.dumps([call.name, call.arguments], sort_keys=True)


def _tool_signs(calls: Sequence[ToolCall]) -> list[FailureSign]:
    signs = []
    repeats: Counter[str] = Counter()
    for position, call in enumerate(calls):
        repeats[_call_key(call)] += 1
        if repeats[_call_key(call)] == RETRY_LOOP_CALLS:
            signs.append(
                FailureSign("retry_loop", call.turn, f"{call.name} called {RETRY_LOOP_CALLS} times")
            )
        recovered = any(c.name == call.name and not c.error for c in calls[position + 1 :])
        if call.error and not recovered:
            turn = call.answer_turn if call.answer_turn is not None else call.turn
            signs.append(FailureSign("tool_error", turn, excerpt(call.answer or "")))
    return signs


def ended_properly(trace: Trace, calls: Sequence[ToolCall]) -> bool:
    """Whether the conversation has an ending (see ``abandoned`` above)."""
    spoken = [
        (turn, m)
        for turn, m in enumerate(trace.messages)
        if content_text(m.get("content")).strip() or m.get("tool_calls")
    ]
    if not spoken:
        return False
    _turn, last = spoken[-1]
    role, text = last.get("role"), content_text(last.get("content"))
    if role == "assistant" and text.strip() and not last.get("tool_calls"):
        return True
    if role == "user":
        return bool(CLOSING.search(text) or STOP_TOKEN.search(text))
    handed_off = [
        c
        for c in calls
        if not c.error and (HANDOFF.search(c.name) or HANDOFF.search(c.answer or ""))
    ]
    return bool(handed_off) and handed_off[-1].turn >= max(c.turn for c in calls)


def failure_signs(trace: Trace, calls: Sequence[ToolCall]) -> list[FailureSign]:
    """Every sign of the trace but consensus, in message order."""
    signs: list[FailureSign] = []
    seen_assistant = False
    for turn, message in enumerate(trace.messages):
        role = message.get("role")
        if role == "user" and seen_assistant:
            text = user_words(content_text(message.get("content")))
            if COMPLAINT.search(text):
                signs.append(FailureSign("user_complaint", turn, excerpt(text)))
        seen_assistant = seen_assistant or role == "assistant"
    signs.extend(_tool_signs(calls))
    if trace.metadata.get("abandoned") is True or not ended_properly(trace, calls):
        signs.append(
            FailureSign("abandoned", len(trace.messages) - 1, "the conversation has no ending")
        )
    return sorted(signs, key=lambda s: s.turn)
