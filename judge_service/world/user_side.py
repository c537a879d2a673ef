"""The user's own side: tools that only the user called, and the entity they show.

In some domains the user acts too: they toggle a setting on their phone, restart it, check
what it shows, and the agent only tells them what to do. Such a tool (``ToolModel.caller ==
"user"``) acts on what the user holds, and its answers are mostly text that names no entity
("Airplane Mode: OFF", "Your messaging app cannot send MMS messages."), so no read rule or
transition explains them.

**The user's side is an entity** (:data:`SIDE_KEY`): its fields are what the user's tools
showed, each labelled line of an answer (``Label: value``) and each stated setting
("Airplane Mode is now ON.") a field, named by its label in lower case, and a read's answer
that shows neither a field named by the tool. A write that says what it set changes that
field: "Airplane Mode is now ON." after "Airplane Mode: OFF". Each trace's side starts as
its user's tools first showed it before any write (``World.sides``), so a task's episode
starts from its runs' phone; each user call changes it by the fields its answer shows.

**A user tool's call is answered by what was done and what the side shows.** The world keeps,
for each user tool, every traced call with the successful writes its run had made before it
(the agent's and the user's, as ``tool:arguments``) and the side as its run had seen it.
The call gets the traced answer of the same call (same arguments) whose writes before it
are the episode's own (else those overlapping most, Jaccard), then whose side agrees most
with the episode's, then from the task's own runs, then the earliest: "can I send a
picture?" is answered "no" before the fix and "yes" after it. A call with arguments no trace
used is left to the other paths. A user's write changes the entities its traced run saw it
change too (a bill the user paid); the verdict sees it as the write it is (the forge's
``write:<tool>`` reference keys), and the side's entity is never compared with a reference.
Nothing here knows a domain: which tools are the user's comes from who called them.
"""

from __future__ import annotations

import re
from collections.abc import Collection, Iterable, Mapping, Sequence
from typing import Any

from judge_service.traces.calls import parse_payload
from judge_service.traces.entities import canonical
from judge_service.world.model import Answer, Call, SideAnswer
from judge_service.world.observe import Step

#: Traced calls kept per user tool (distinct arguments, answer, writes and side before).
KEPT = 500
#: Traces kept per such call (for the tie that goes to a task's own runs).
TRACES_KEPT = 20
#: The state key of the user's side (``@`` is no id character: no traced entity has it).
SIDE_KEY = "user_side=@user"
#: A labelled line: a short label, a colon, a value.
LABELLED = re.compile(r"^\s*([A-Za-z][\w ()/'-]{0,60}?)\s*:\s+(\S.*?)\s*$")
#: A stated setting: "Airplane Mode is now ON.", "VPN is turned OFF." (one word of value, a
#: remark in brackets allowed: "Data Saver mode is ON (limits data usage).").
STATED = re.compile(
    r"^\s*(?:the\s+)?([A-Za-z][\w /'-]{0,40}?)\s+(?:is|are)\s+(?:now\s+|currently\s+)?"
    r"(?:turned\s+|set\s+to\s+)?([\w-]+)\s*(?:\([^)]*\))?\s*\.?\s*$"
)
SENTENCES = re.compile(r"(?<=\.)\s+|\n")

Fields = dict[str, str]


def side_fields(tool: str, text: str | None, read: bool) -> Fields:
    """What an answer of a user tool shows of the user's side (module docstring)."""
    if not text:
        return {}
    found = {}
    for line in text.splitlines():
        match = LABELLED.match(line)
        if match and "//" not in match.group(1):
            found[match.group(1).lower()] = match.group(2)
            continue
        for sentence in SENTENCES.split(line):
            stated = STATED.match(sentence)
            if stated:
                found[stated.group(1).lower()] = stated.group(2)
    if not found and read:
        found[tool] = text.strip()
    return found


def write_mark(tool: str, arguments: Mapping[str, Any]) -> str:
    """A successful write as the user's side remembers it."""
    return f"{tool}:{canonical(dict(arguments))}"


def done_writes(records: Iterable[Mapping[str, Any]]) -> list[str]:
    """The successful writes among call records (an episode's answers), as marks."""
    return [
        write_mark(str(r.get("tool")), r.get("arguments") or {})
        for r in records
        if r.get("write") and not r.get("error") and r.get("path") != "model_needed"
    ]


def _starts(runs: Sequence[Sequence[Step]], users: frozenset[str]) -> dict[str, Fields]:
    """Each trace's side as its user's tools showed it before any write."""
    starts: dict[str, Fields] = {}
    for steps in runs:
        for step in steps:
            call = step.call
            if step.write and not call.error:
                break
            if call.name in users and not call.error:
                start = starts.setdefault(step.trace_id, {})
                for name, value in side_fields(call.name, call.answer, True).items():
                    start.setdefault(name, value)
    return starts


def learn_side(
    runs: Iterable[Sequence[Step]], users: frozenset[str]
) -> tuple[dict[str, list[SideAnswer]], dict[str, Fields]]:
    """Per user tool, its traced calls with the writes and the side before each; per trace,
    its side as first shown before any write (``runs``: each trace's steps, in order). A
    call's side is its trace's start, with what later answers showed over it."""
    runs = list(runs)
    starts = _starts(runs, users)
    found: dict[str, dict[str, SideAnswer]] = {}
    for steps in runs:
        before: list[str] = []
        side: Fields = dict(starts.get(steps[0].trace_id, {})) if steps else {}
        for step in steps:
            call = step.call
            if call.name in users and call.answer is not None:
                entry = SideAnswer(
                    arguments=canonical(dict(call.arguments)),
                    text=call.answer,
                    error=call.error,
                    before=sorted(before),
                    effects=dict(step.changed if step.write and not call.error else {}),
                    side=dict(side),
                )
                kept = found.setdefault(call.name, {})
                key = entry.model_dump_json()
                if key not in kept and len(kept) < KEPT:
                    kept[key] = entry
                if key in kept and len(kept[key].traces) < TRACES_KEPT:
                    kept[key].traces.append(step.trace_id)
                if not call.error:
                    side.update(side_fields(call.name, call.answer, not step.write))
            if step.write and not call.error:
                before.append(write_mark(call.name, call.arguments))
    return {tool: list(entries.values()) for tool, entries in found.items()}, starts


def _overlap(before: Sequence[str], done: set[str]) -> float:
    mine = set(before)
    union = mine | done
    return len(mine & done) / len(union) if union else 1.0


def _agreement(seen: Fields, now: Mapping[str, Any]) -> float:
    shared = [name for name in seen if name in now]
    return sum(seen[n] == now[n] for n in shared) / len(shared) if shared else 0.0


def side_answer(
    side: Sequence[SideAnswer],
    state: Mapping[str, Any],
    call: Call,
    done: Sequence[str],
    runs: Collection[str] = (),
    read: bool = True,
) -> Answer | None:
    """The traced answer for ``call`` after the writes ``done`` in ``state`` (module
    docstring), and the side it leaves; ``None`` when no traced call had its arguments.
    ``runs``: the task's own traces; ``read``: the tool is a read (its unlabelled answer is
    a field of the side)."""
    wanted = canonical(dict(call.arguments))
    pool = [s for s in side if s.arguments == wanted]
    if not pool:  # another call's answer would name what was not asked: never invented
        return None
    made = set(done)
    now = state.get(SIDE_KEY)
    now = now if isinstance(now, Mapping) else {}
    best = max(
        range(len(pool)),
        key=lambda i: (
            _overlap(pool[i].before, made),
            _agreement(pool[i].side, now),
            any(t in runs for t in pool[i].traces),
            -i,
        ),
    )
    chosen = pool[best]
    shown = {} if chosen.error else side_fields(call.name, chosen.text, read)
    after: Mapping[str, Any] = state  # answers copy only what they change
    if chosen.effects or shown:
        after = {**state, **chosen.effects}
        if shown:
            after[SIDE_KEY] = {**now, **shown}
    payload = parse_payload(chosen.text)
    return Answer.model_construct(
        text=chosen.text,
        payload=chosen.text if payload is None else payload,
        path="replay",
        error=chosen.error,
        state_after=after,
        note="the user's side: the traced answer after the same writes",
    )
