"""The signs that a trace went wrong, each with its turn and an excerpt.

Each sign kind must be precise on its own (on the real τ²-bench runs, most failed runs look
polite: a sign that also marks good runs is worse than none). Cues too weak for that are
reported apart (:func:`weak_cues`) and mark no run failed.

- ``user_complaint``: the user says the agent's last words or deed were wrong ("that's not
  what I asked", "it still doesn't work"), answering a statement of the agent's, not a
  question (a "not quite" to the agent's guess is a correction, not a complaint); or the
  user's last words say the problem is still there ("it still failed", "still no signal").
- ``tool_error``: a call failed and nothing made it good: a write (a tool whose name does not
  read as a read) that no later successful write on the same record (an id argument in
  common) replaced, or any call after which no call succeeded. A failed lookup the agent got
  past (a typo in an e-mail, then the right one) is ordinary work.
- ``retry_loop``: the same call, name and arguments, three times, not all of them successful
  reads (reading a record again is no loop).
- ``claimed_without_write``, ``transfer_without_trying``, ``consented_not_done``:
  :mod:`judge_service.forge.sign_writes`.
- ``contradicts_user``: :mod:`judge_service.forge.sign_contradicts`.
- ``invented_value``: :mod:`judge_service.forge.sign_invented`.
- ``abandoned``: the conversation stops without an ending: its last word is not the agent's
  answer, nor the user's thanks or goodbye, nor a completed transfer to a human (a call
  named or answered like one: ``transfer_to_human``, "Transfer successful").
- ``disagrees_with_consensus`` (:mod:`judge_service.forge.trace_tasks`): the trace's end
  state differs from the one its task's other repeats agree on.
"""

from __future__ import annotations

import json
import re
from collections.abc import Collection, Sequence

from judge_service.forge.sign_contradicts import contradicts_user
from judge_service.forge.sign_invented import invented_values
from judge_service.forge.sign_writes import (
    HANDOFF as HANDOFF,  # re-exported: where it was first
)
from judge_service.forge.sign_writes import (
    claimed_without_write,
    consented_not_done,
    may_write,
    plain,
    transfer_without_trying,
    unconfirmed_writes,
)
from judge_service.traces.calls import ToolCall
from judge_service.traces.conversation import (
    STOP_TOKEN,
    FailureSign,
    Trace,
    content_text,
    excerpt,
    user_words,
)
from judge_service.traces.entities import id_arguments
from judge_service.traces.goals import SENTENCE

COMPLAINT = re.compile(
    r"\b(that'?s (wrong|not right|incorrect|not what i)|not what i (asked|wanted|meant)|you "
    r"(didn'?t|did not|forgot|ignored|missed)|(doesn'?t|does not|didn'?t|did not) work|still "
    r"(broken|wrong|not working|failing|fails|doesn'?t work|isn'?t working)|i (already )?told "
    r"you|no,? i meant|that'?s not it)\b",
    re.IGNORECASE,
)
#: The user's last words saying the problem is still there ("it still failed", "still no
#: signal"): a complaint only at the end, for midway it is the next step of the work.
PERSISTS = re.compile(
    r"\bstill (failed|fails|failing|no|not working|(doesn|isn|won)'?t work(ing)?|broken)\b",
    re.IGNORECASE,
)
#: A sentence that states a condition ("if that doesn't work, …") complains of nothing yet.
CONDITION = re.compile(r"\b(if|whether|in case|unless|otherwise)\b", re.IGNORECASE)
CLOSING = re.compile(
    r"\b(thanks?|thank you|thx|cheers|that'?s (all|it|everything)|that is all|all set|"
    r"good ?bye|bye|have a (nice|good|great) (day|one|evening)|nothing (else|more)|"
    r"no,? (that'?s|thank)|appreciate)",
    re.IGNORECASE,
)
#: An identical tool call (name and arguments) this many times in one trace is a retry loop.
RETRY_LOOP_CALLS = 3


def _call_key(call: ToolCall) -> str:
    return json.dumps([call.name, call.arguments], sort_keys=True)


def _made_good(
    call: ToolCall, later: Sequence[ToolCall], writes: Collection[str] | None = None
) -> bool:
    """Whether a failed call was made good by the calls after it (``tool_error`` above)."""
    worked = [c for c in later if not c.error]
    if not worked:
        return False
    if not may_write(call.name, writes):
        return True
    if any(c.name == call.name for c in worked):
        return True
    ids = _ids(call)
    return bool(ids) and any(may_write(c.name, writes) and ids & _ids(c) for c in worked)


def _ids(call: ToolCall) -> set[str]:
    """The call's id arguments, as written loosely (``W12`` is ``#W12``)."""
    return {value.lower().lstrip("#") for _, value in id_arguments(call)}


def _tool_signs(
    every: Sequence[ToolCall], writes: Collection[str] | None = None
) -> list[FailureSign]:
    """``retry_loop`` and ``tool_error`` of the agent's calls (a user's own tool that fails
    is what the agent is there to fix)."""
    signs = []
    repeats: dict[str, list[ToolCall]] = {}
    calls = [c for c in every if c.caller == "assistant"]
    for position, call in enumerate(calls):
        same = repeats.setdefault(_call_key(call), [])
        same.append(call)
        reads = all(not c.error and c.answer is not None for c in same)
        if len(same) == RETRY_LOOP_CALLS and not (reads and not may_write(call.name, writes)):
            signs.append(
                FailureSign("retry_loop", call.turn, f"{call.name} called {RETRY_LOOP_CALLS} times")
            )
        if call.error and not _made_good(call, calls[position + 1 :], writes):
            turn = call.answer_turn if call.answer_turn is not None else call.turn
            signs.append(FailureSign("tool_error", turn, excerpt(call.answer or "")))
    return signs


def _complaints(trace: Trace) -> list[FailureSign]:
    """The user's complaints about the agent's last statement (``user_complaint`` above)."""
    signs = []
    said = None  # the agent's last words
    spoke = [
        t
        for t, m in enumerate(trace.messages)
        if m.get("role") == "user" and user_words(content_text(m.get("content")))
    ]
    for turn, message in enumerate(trace.messages):
        text = plain(content_text(message.get("content")))
        if message.get("role") == "assistant" and text.strip():
            said = text
        if message.get("role") != "user" or said is None or "?" in said[-250:]:
            continue
        words = user_words(text)
        sentences = [s for s in SENTENCE.split(words) if not CONDITION.search(s)]
        last = turn == spoke[-1]
        if any(COMPLAINT.search(s) or (last and PERSISTS.search(s)) for s in sentences):
            signs.append(FailureSign("user_complaint", turn, excerpt(words)))
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


def failure_signs(
    trace: Trace, calls: Sequence[ToolCall], writes: Collection[str] | None = None
) -> list[FailureSign]:
    """Every sign of the trace but consensus, in message order. ``writes`` names the write
    tools (:func:`judge_service.traces.effects.write_tools`); ``None``: by their names."""
    signs = _complaints(trace)
    signs.extend(_tool_signs(calls, writes))
    signs.extend(claimed_without_write(trace, calls, writes))
    signs.extend(transfer_without_trying(trace, calls, writes))
    signs.extend(consented_not_done(trace, calls, writes))
    signs.extend(contradicts_user(trace, calls, writes))
    signs.extend(invented_values(trace, calls, writes))
    if trace.metadata.get("abandoned") is True or not ended_properly(trace, calls):
        signs.append(
            FailureSign("abandoned", len(trace.messages) - 1, "the conversation has no ending")
        )
    return sorted(signs, key=lambda s: s.turn)


def weak_cues(
    trace: Trace, calls: Sequence[ToolCall], writes: Collection[str] | None = None
) -> list[FailureSign]:
    """Cues too imprecise to mark a run failed, reported beside the signs, in message order:
    ``unconfirmed_write`` (:func:`judge_service.forge.sign_writes.unconfirmed_writes`)."""
    return sorted(unconfirmed_writes(trace, calls, writes), key=lambda s: s.turn)
