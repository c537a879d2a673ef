"""A trajectory's tool calls answered by the world: what each call did, and a trajectory
recorded elsewhere replayed.

:func:`call_record` keeps what a verdict needs of one answered call (episodes and
:func:`replay` both make them). A recorded trajectory (:func:`replay`) is one more trace:
the entities only its answers show join its start (:func:`seeded`); each call is replayed
under the ids its answer gave; and where the world and the recording disagree about a write,
the recording is the evidence of what the backend did (path ``recorded``):

- the recorded call failed and the world would have made it: it changes nothing;
- nothing learned answers it, or the world would refuse it: the states its recorded answer
  shows, as the forge took them for the reference. An answer that shows none leaves it
  ``model_needed`` (the verdict undetermined).
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from typing import Any

from judge_service.traces.calls import ToolCall, tool_calls
from judge_service.traces.conversation import Trace
from judge_service.traces.entities import entity_key, id_arguments, object_key
from judge_service.world.lookup import argument_values, merge
from judge_service.world.model import Answer, Call
from judge_service.world.observe import USER_AND_AGENT, identify, recorded_call, shown
from judge_service.world.user_side import done_writes
from judge_service.world.values import same
from judge_service.world.world import World

State = Mapping[str, Any]


def is_write(world: World, name: str) -> bool:
    tool = world.tools.get(name)
    return tool is not None and tool.effect == "write"


def creates(world: World, name: str) -> bool:
    """Whether the tool's learned write makes a new entity."""
    tool = world.tools.get(name)
    return tool is not None and tool.transition is not None and tool.transition.creates


def _views(world: World, call: ToolCall) -> list[tuple[str | None, str | None]]:
    """``(forge key, world key)`` of each object an answer shows."""
    payload = call.payload
    whole = isinstance(payload, dict)
    objects = [payload] if whole else payload if isinstance(payload, list) else []
    out = []
    for obj in (o for o in objects if isinstance(o, dict)):
        forge = object_key(call, obj, whole)
        out.append((forge, identify(call, obj, whole, world.key_fields)))
    return out


def call_record(world: World, before: State, call: Call, answer: Answer) -> dict[str, Any]:
    """What a verdict needs of one answered call: ``tool``, ``path``, ``error``, ``write``,
    ``arguments``, ``changed`` (keys a successful write changed), ``about`` (keys the write
    is about: those its answer shows, else those its id arguments name) and ``aliases``
    (``[forge key, world key]`` of the objects its answer shows, where the two differ)."""
    write = is_write(world, call.name)
    record = {"tool": call.name, "path": answer.path, "error": answer.error, "write": write}
    record.update(arguments=dict(call.arguments), changed=[], about=[], aliases=[])
    if answer.error:
        return record
    parsed = ToolCall(
        index=0,
        turn=0,
        name=call.name,
        arguments=dict(call.arguments),
        answer=answer.text,
        payload=answer.payload if answer.text is not None else None,
        answer_turn=None,
        error=False,
    )
    views = _views(world, parsed)
    record["aliases"] = [[f, w] for f, w in views if f and w and f != w]
    if not write:
        return record
    after = answer.state_after
    record["changed"] = [
        k for k, v in after.items() if v is not before.get(k) and not same(before.get(k), v)
    ]
    record["about"] = [w for _, w in views if w]
    if not record["about"]:
        named = [entity_key(n, v) for n, v in id_arguments(parsed)]
        record["about"] = [k for k in named if k in after or k in before]
    return record


def _calls(messages: Sequence[Mapping[str, Any]]) -> list[ToolCall]:
    """The agent's calls and the user's (on their own side), in order."""
    trace = Trace("verify", 0, [dict(m) for m in messages if isinstance(m, Mapping)], None, {})
    return tool_calls(trace, USER_AND_AGENT)


def seeded(world: World, start: State, messages: Sequence[Mapping[str, Any]]) -> State:
    """``start`` with the entities it lacks as the trajectory's own answers first showed
    them, before any successful write named them: a recorded trajectory is one more trace,
    and a world knows only the entities its traces showed. Known entities are never
    replaced, so the answers cannot move the reference."""
    named: set[str] = set()
    extra: dict[str, Any] = {}
    for call in _calls(messages):
        found = shown(call, world.key_fields)
        if is_write(world, call.name) and not call.error:
            named |= argument_values(call.arguments)
            if creates(world, call.name) and found:  # the entity it made was not there before
                named.add(found[0][0].split("=", 1)[1])
        for key, value in found:
            if key not in start and key not in extra and key.split("=", 1)[1] not in named:
                extra[key] = value
    return {**start, **extra} if extra else start


def _recorded(traced: ToolCall, state: State, error: bool, note: str) -> Answer:
    return Answer.model_construct(
        text=traced.answer,
        payload=traced.payload,
        path="recorded",
        error=error,
        state_after=state,
        note=note,
    )


def _reconciled(world: World, state: State, traced: ToolCall, answer: Answer) -> Answer:
    """The world's answer to a recorded write, or the recording's where they disagree
    (module docstring)."""
    if traced.error:
        if answer.error or answer.path == "model_needed":
            return answer
        return _recorded(traced, state, True, "the recorded call failed: nothing changed")
    if answer.path != "model_needed" and not answer.error:
        return answer
    found = shown(traced, world.key_fields)
    if not found:
        if traced.caller == "user":  # on the user's own side, the recording says what they did
            return _recorded(traced, state, False, "the user's own call, as recorded")
        if answer.error:  # the world refused what the backend did: its effect is unknown
            return Answer.model_construct(
                text=None, payload=None, path="model_needed", error=False, state_after=state
            )
        return answer
    after = dict(state)
    for key, value in found:
        after[key] = merge(after.get(key), value)
    return _recorded(traced, after, False, "the state the recorded answer shows")


def replay(
    world: World, start: State, messages: Sequence[Mapping[str, Any]]
) -> tuple[State, list[dict[str, Any]]]:
    """The messages' tool calls answered in order by the world from ``start``: the final
    state and each call's :func:`call_record`."""
    state: State = start
    records: list[dict[str, Any]] = []
    done: list[str] = []  # the successful writes so far, for the user's own calls
    for traced in _calls(messages):
        call = recorded_call(traced, world.key_fields)
        answer = world.answer(state, call, done=done)
        if is_write(world, call.name) and traced.answer is not None:
            answer = _reconciled(world, state, traced, answer)
        record = call_record(world, state, call, answer)
        if traced.caller == "user":
            record["by"] = "user"
        records.append(record)
        done += done_writes([record])
        state = answer.state_after
    return state, records
