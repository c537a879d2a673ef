"""Did a trajectory reach its task's end state? An LLM-free verdict from the world's state.

A trajectory's tool calls are answered in order by the world from the task's initial state,
the state carried through. The final state is then compared with the task's reference end
state in the forge's form (:mod:`judge_service.forge.end_states`): states, not call lists,
so runs that reach the same state through other calls or another order agree.

- ``type=id``: the entity, field by field (:mod:`judge_service.world.state_diff`). The forge
  and the world may key one object differently (the forge wants an id-named field), so the
  candidates are the world keys of the objects the trajectory's answers showed under that
  forge key, and the key itself; the closest one is compared. None: ``missing``.
- ``new:<tool>:<n>``: an entity the trajectory created (a key its start lacks), matched by
  its state without its fresh id.
- ``write:<tool>``: a blind write; the canonical arguments of the trajectory's successful
  calls of that tool whose id arguments name no reference entity, sorted, must be the same.
- An entity that a successful write was about (its answer showed it, else its id arguments
  name it), not in the reference, and changed from its start: ``unrequested``. Entities a
  write changes beside the one it is about (a refund reaching the customer's balance) are
  left out, as the forge leaves them out of the reference.

A recorded trajectory (:func:`verify`) may show entities the world never saw; they join
its start state as its own answers first showed them (:func:`seeded`), so that its writes
on them are answered and judged rather than refused as "not found".

A recorded write that nothing learned answers takes, in :func:`replay`, the states its
recorded answer shows (path ``recorded``), as the forge took them for the reference: a
recording is evidence of what the backend did. A write answered by ``model_needed`` (one
whose answer shows no entity, or an episode's) leaves its effect unknown: the verdict is
undetermined
(``reward`` None) unless it already fails for a reason that write cannot change: an
``unrequested`` change, or a difference in an entity that no such write names (only when
every such write names some entity: one that names none could have changed anything).
"""

from __future__ import annotations

from collections.abc import Collection, Mapping, Sequence
from dataclasses import replace
from typing import Any

from pydantic import BaseModel, Field

from judge_service.forge.calls import ToolCall, tool_calls
from judge_service.forge.entities import answer_entities, entity_key, id_arguments
from judge_service.forge.traces import Trace
from judge_service.world.lookup import argument_values, merge
from judge_service.world.model import Answer, Call
from judge_service.world.observe import identify, recorded_call, shown
from judge_service.world.state_diff import changes, clock_fields, reference_diff
from judge_service.world.values import same
from judge_service.world.world import World

State = dict[str, Any]


class Verdict(BaseModel):
    """``reward`` 1.0 reached, 0.0 not, None undetermined (or no reference). ``diff``:
    ``{"entity", "field" (dotted, "" for the whole entity), "want", "got", "why"}``, ``why``
    one of ``missing`` (entity or field absent), ``differs``, ``unrequested``."""

    reward: float | None
    reached: bool | None
    diff: list[dict[str, Any]] = Field(default_factory=list)
    touched: list[str] = Field(default_factory=list)
    undetermined: list[str] = Field(default_factory=list)


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
        forge = answer_entities(replace(call, payload=obj if whole else [obj]))
        world_key = identify(call, obj, whole, world.key_fields)
        out.append((forge[0][0] if forge else None, world_key))
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


def end_state_verdict(
    world: World,
    start: State,
    final: State,
    touched: Collection[str],
    reference: Mapping[str, Any] | None,
    calls: Sequence[Mapping[str, Any]] = (),
) -> Verdict:
    """The verdict on ``final`` (see the module docstring). ``touched``: the keys the
    trajectory's successful writes changed; ``calls``: its :func:`call_record` s (for key
    aliases, blind writes, what each write was about, and the writes answered by
    ``model_needed``; without them every touched key counts as one a write was about)."""
    touched = list(dict.fromkeys(touched))
    calls = [{**c, "write": c.get("write", is_write(world, str(c.get("tool"))))} for c in calls]
    pending = [c for c in calls if c["write"] and c.get("path") == "model_needed"]
    undetermined = list(dict.fromkeys(str(c.get("tool")) for c in pending))
    if reference is None:
        return Verdict(reward=None, reached=None, touched=touched, undetermined=undetermined)
    ignore = clock_fields(world)
    diff, matched = reference_diff(reference, start, final, calls, ignore)
    ok = [c for c in calls if c["write"] and not c.get("error") and c.get("path") != "model_needed"]
    blind = {k.split(":", 1)[1] for k in reference if k.startswith("write:")}
    about = {k for c in ok if c.get("tool") not in blind for k in c.get("about") or []}
    if not calls or any("about" not in c for c in ok):
        about = set(touched)
    for key in touched:
        mine = key in reference or key in matched.values()
        if key in about and not mine and key in final:
            diff += changes(key, start.get(key), final[key], ignore)
    reward: float | None = 0.0 if diff else 1.0
    if pending and not _fails_anyway(diff, pending, matched):
        reward = None
    reached = None if reward is None else reward == 1.0
    return Verdict(
        reward=reward, reached=reached, diff=diff, touched=touched, undetermined=undetermined
    )


def _fails_anyway(
    diff: Sequence[Mapping[str, Any]],
    pending: Sequence[Mapping[str, Any]],
    matched: Mapping[str, str],
) -> bool:
    """Whether a difference stands whatever the unknown writes did (module docstring)."""
    if any(d["why"] == "unrequested" for d in diff):
        return True
    if any(not c.get("about") for c in pending):
        return False
    named = {k for c in pending for k in c["about"]}
    entities = {matched.get(d["entity"], d["entity"]) for d in diff}
    return any("=" in k and not k.startswith("new:") and k not in named for k in entities)


def _calls(messages: Sequence[Mapping[str, Any]]) -> list[ToolCall]:
    trace = Trace("verify", 0, [dict(m) for m in messages if isinstance(m, Mapping)], None, {})
    return tool_calls(trace)


def seeded(world: World, start: State, messages: Sequence[Mapping[str, Any]]) -> State:
    """``start`` with the entities it lacks as the trajectory's own answers first showed
    them, before any successful write named them: a recorded trajectory is one more trace,
    and a world knows only the entities its traces showed. Known entities are never
    replaced, so the answers cannot move the reference."""
    named: set[str] = set()
    extra: State = {}
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


def _as_recorded(world: World, state: State, traced: ToolCall) -> Answer | None:
    """A recorded write's own answer, and the state with the entities it shows (``None``:
    it failed or shows none)."""
    found = shown(traced, world.key_fields) if traced.answer is not None else []
    if not found:
        return None
    after = dict(state)
    for key, value in found:
        after[key] = merge(after.get(key), value)
    return Answer.model_construct(
        text=traced.answer,
        payload=traced.payload,
        path="recorded",
        error=False,
        state_after=after,
        note="nothing learned answers this write: the state its recorded answer shows",
    )


def replay(
    world: World, start: State, messages: Sequence[Mapping[str, Any]]
) -> tuple[State, list[dict[str, Any]]]:
    """The messages' tool calls answered in order by the world from ``start``: the final
    state and each call's :func:`call_record`."""
    state, records = start, []
    for traced in _calls(messages):
        call = recorded_call(traced, world.key_fields)
        answer = world.answer(state, call)
        if answer.path == "model_needed" and is_write(world, call.name):
            answer = _as_recorded(world, state, traced) or answer
        records.append(call_record(world, state, call, answer))
        state = answer.state_after
    return state, records


def verify(
    world: World, start: State, messages: Sequence[Mapping[str, Any]], reference: Any
) -> tuple[Verdict, list[dict[str, Any]]]:
    """Replay a recorded trajectory's tool calls (OpenAI format) from ``start`` (with the
    entities only its answers show, :func:`seeded`) and judge its end state against
    ``reference``; per call ``{"tool", "path", "error"}``."""
    start = seeded(world, start, messages)
    final, records = replay(world, start, messages)
    touched = [k for r in records for k in r["changed"]]
    verdict = end_state_verdict(world, start, final, touched, reference, records)
    return verdict, [{k: r[k] for k in ("tool", "path", "error")} for r in records]
