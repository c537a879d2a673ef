"""The user's own side: tools that only the user called, answered from what was done before.

In some domains the user acts too: they toggle a setting on their phone, restart it, check
what it shows, and the agent only tells them what to do. Such a tool (``ToolModel.caller ==
"user"``) acts on what the user holds, and its answers are mostly text that shows no entity
("Airplane Mode is now ON."), so no read rule or transition explains them. What explains
them is what was done before: "can I send a picture?" is answered one way before the fix and
another after it.

So the world keeps, for each user tool, every traced call with the successful writes that its
run had made before it (the agent's and the user's, as ``tool:arguments``): the user's side
is the state those writes left. A user tool's call is answered by the traced answer of the
same call (same arguments) whose writes before it are the episode's own, else the one
whose writes overlap the episode's most (Jaccard; ties go to the task's own runs, whose
user's side started as the episode's did, then to the earlier trace); a call with
arguments no trace used is left to the other paths. A write answered so changes no
entity but those its traced run saw it change (a bill the user paid): the verdict sees it as
the write it is (the forge's ``write:<tool>`` reference keys).
Nothing here knows a domain: which tools are the user's comes from who called them.
"""

from __future__ import annotations

from collections.abc import Collection, Iterable, Mapping, Sequence
from typing import Any

from judge_service.traces.calls import parse_payload
from judge_service.traces.entities import canonical
from judge_service.world.model import Answer, Call, SideAnswer
from judge_service.world.observe import Step

#: Traced calls kept per user tool (distinct arguments, answer and writes before).
KEPT = 200


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


def learn_side(
    runs: Iterable[Sequence[Step]], users: frozenset[str]
) -> dict[str, list[SideAnswer]]:
    """Per user tool, its traced calls with the writes before each (``runs``: each trace's
    steps, in order). A user's write keeps the entity states it changed (paying a bill)."""
    found: dict[str, dict[str, SideAnswer]] = {}
    for steps in runs:
        before: list[str] = []
        for step in steps:
            call = step.call
            if call.name in users and call.answer is not None:
                effects = step.changed if step.write and not call.error else {}
                entry = SideAnswer(
                    arguments=canonical(dict(call.arguments)),
                    text=call.answer,
                    error=call.error,
                    before=sorted(before),
                    effects=dict(effects),
                    trace=step.trace_id,
                )
                kept = found.setdefault(call.name, {})
                if len(kept) < KEPT:
                    kept.setdefault(entry.model_dump_json(), entry)
            if step.write and not call.error:
                before.append(write_mark(call.name, call.arguments))
    return {tool: list(entries.values()) for tool, entries in found.items()}


def _overlap(before: Sequence[str], done: set[str]) -> float:
    mine = set(before)
    union = mine | done
    return len(mine & done) / len(union) if union else 1.0


def side_answer(
    side: Sequence[SideAnswer],
    state: Mapping[str, Any],
    call: Call,
    done: Sequence[str],
    runs: Collection[str] = (),
) -> Answer | None:
    """The traced answer for ``call`` after the writes ``done`` (module docstring), or
    ``None`` when no traced call had its arguments. ``runs``: the task's own traces, whose
    answers win a tie (the user's side starts as the task's runs found it)."""
    wanted = canonical(dict(call.arguments))
    pool = [s for s in side if s.arguments == wanted]
    if not pool:  # another call's answer would name what was not asked: never invented
        return None
    made = set(done)
    best = max(
        range(len(pool)),
        key=lambda i: (_overlap(pool[i].before, made), pool[i].trace in runs, -i),
    )
    chosen = pool[best]
    payload = parse_payload(chosen.text)
    return Answer.model_construct(
        text=chosen.text,
        payload=chosen.text if payload is None else payload,
        path="replay",
        error=chosen.error,
        state_after={**state, **chosen.effects} if chosen.effects else state,
        note="the user's side: the traced answer after the same writes",
    )
