"""What the traces show of the world: entity states, and the state around every call.

Entities are the objects tools returned, kept as the tool wrote them. An object is keyed by
a field holding the argument of the same name (``get_book(isbn)`` answering ``{"isbn": ...}``
is ``isbn=...``), else as :func:`judge_service.traces.entities.answer_entities` names it,
else by a field other answers were keyed by. A trace's *start* is, for each entity it shows,
the first state it saw before any write touched it; the world's *base* is each entity's
start, preferring one seen before the trace wrote anything. Each trace is then walked from
its start: every call gets the state before it, and a write also gets the first state seen
of each entity after it (its own answer, or a later read) up to the next write, so a write
whose answer shows nothing still teaches what it changed.
"""

from __future__ import annotations

from collections import ChainMap, Counter
from collections.abc import Iterable, Mapping, Sequence
from dataclasses import dataclass, field, replace
from typing import Any

from judge_service.traces.calls import ToolCall, tool_calls
from judge_service.traces.conversation import Trace
from judge_service.traces.effects import ToolEffect
from judge_service.traces.entities import entity_key, is_id_name, object_key, own_id
from judge_service.world.classify import View, classify
from judge_service.world.lookup import argument_values, merge
from judge_service.world.model import Call
from judge_service.world.text import as_text
from judge_service.world.values import jsonable, same

State = dict[str, Any]
#: Whose calls a world learns from: the agent's, and the user's on their own side (a user
#: who toggles a setting on their phone changes the state the goal is about).
USER_AND_AGENT = ("assistant", "user")


def _same_named(obj: dict[str, Any], args: Mapping[str, Any]) -> str | None:
    """The key from a field that holds the value of the argument of the same name (an id
    the call passed), an id-named one first; ``None`` if that is ambiguous."""
    fields = [
        f
        for f, v in obj.items()
        if f in args
        and not isinstance(v, dict | list)
        and v is not None
        and not isinstance(args[f], dict | list)
        and as_text(v) == as_text(args[f])
    ]
    ids = [f for f in fields if is_id_name(f)]
    chosen = ids[:1] or (fields if len(fields) == 1 else [])
    return entity_key(chosen[0], as_text(obj[chosen[0]])) if chosen else None


def identify(
    call: ToolCall, obj: dict[str, Any], whole: bool, known: Sequence[str] = ()
) -> str | None:
    """An answered object's key: a field holding the same-named argument (when the answer is
    this one object), else as the forge names entities, else a field already known as a key
    (``known``: those of other answers)."""
    if whole and own_id(obj, argument_values(call.arguments), call.name) is None:
        found = _same_named(obj, call.arguments)
        if found:
            return found
    named = object_key(call, obj, whole)
    if named is not None:
        return named
    for field_name in known:
        value = obj.get(field_name)
        if isinstance(value, str | int) and not isinstance(value, bool):
            return entity_key(field_name, as_text(value))
    return None


def shown(call: ToolCall, known: Sequence[str] = ()) -> list[tuple[str, Any]]:
    """``(key, state as written)`` of each entity in the call's answer."""
    if call.error:
        return []
    payload = call.payload
    if isinstance(payload, dict):
        key = identify(call, payload, True, known)
        return [(key, payload)] if key else []
    if not isinstance(payload, list):
        return []
    out = []
    for obj in payload:
        if isinstance(obj, dict):
            key = identify(call, obj, False, known)
            if key:
                out.append((key, obj))
    return out


def recorded_call(call: ToolCall, known: Sequence[str] = ()) -> Call:
    """A recorded call as the world answers it: with the id its answer's first entity has,
    which is the new one's if the call created an entity (:attr:`Call.created`)."""
    found = shown(call, known)[:1]
    created = found[0][0].split("=", 1)[1] if found else None
    return Call(name=call.name, arguments=dict(call.arguments), created=created)


def key_fields(calls: Iterable[ToolCall]) -> list[str]:
    """The fields that name entities in single-object answers, most used first."""
    counts: Counter[str] = Counter()
    for call in calls:
        if isinstance(call.payload, dict) and not call.error:
            key = identify(call, call.payload, True)
            if key:
                counts[key.split("=", 1)[0]] += 1
    return [name for name, _ in counts.most_common()]


def _jsonable_call(call: ToolCall) -> ToolCall:
    return replace(call, arguments=jsonable(call.arguments), payload=jsonable(call.payload))


@dataclass
class Step:
    """One traced call, the state before it, and (writes) the states seen after it."""

    trace_id: str
    call: ToolCall
    write: bool
    pre: Mapping[str, Any]
    shown: list[tuple[str, Any]]
    after: State = field(default_factory=dict)
    #: The entities seen since the trace's last write before this call (``None``: no write
    #: came before it). Any other may have been changed unseen by that write, so its state
    #: before this call is not known (two payments from one gift card, its balance read
    #: only after both).
    fresh: frozenset[str] | None = None

    def stale(self, key: str) -> bool:
        """Whether an earlier write of the trace may have changed ``key`` unseen."""
        return self.fresh is not None and key not in self.fresh

    @property
    def changed(self) -> State:
        return {k: v for k, v in self.after.items() if not same(self.pre.get(k), v)}


@dataclass
class Observed:
    effects: dict[str, ToolEffect]
    base: State
    starts: dict[str, State]
    steps: dict[str, list[Step]]
    schemas: dict[str, dict[str, Any]]
    keys: list[str]


def _starts(
    calls: Sequence[ToolCall], views: Sequence[View], writes: frozenset[str]
) -> tuple[State, dict[str, bool]]:
    start: State = {}
    clean: dict[str, bool] = {}
    touched: set[str] = set()
    wrote = False
    for call, found in zip(calls, views, strict=True):
        is_write = call.name in writes and not call.error
        if is_write:
            touched |= argument_values(call.arguments) | {k.split("=", 1)[1] for k, _ in found}
        for key, state in found:
            if key.split("=", 1)[1] in touched:
                continue
            start[key] = merge(state, start[key]) if key in start else state
            clean.setdefault(key, not wrote)
        wrote = wrote or is_write
    return start, clean


def _walk(
    trace_id: str,
    calls: list[ToolCall],
    views: Sequence[View],
    writes: frozenset[str],
    base: State,
    start: State,
) -> list[Step]:
    """The trace's steps; each state is the trace's own states over the shared base."""
    steps = []
    own = dict(start)
    fresh: set[str] | None = None  # seen since the last write (None: no write yet)
    for index, call in enumerate(calls):
        is_write = call.name in writes
        state = ChainMap(own, base)
        step = Step(trace_id, call, is_write, ChainMap(dict(own), base), views[index])
        step.fresh = None if fresh is None else frozenset(fresh)
        if is_write and not call.error:
            for later, found in zip(calls[index:], views[index:], strict=True):
                if later is not call and later.name in writes and not later.error:
                    break
                for key, seen in found:
                    if key not in step.after:
                        step.after[key] = merge(state.get(key), seen)
            fresh = set(step.after)
        for key, seen in step.shown:
            own[key] = merge(state.get(key), seen)
            if fresh is not None:
                fresh.add(key)
        own.update(step.after)
        steps.append(step)
    return steps


def observe(traces: Sequence[Trace]) -> Observed:
    """Entities, starts and every call's surrounding state (see the module docstring)."""
    calls = {t.id: [_jsonable_call(c) for c in tool_calls(t, USER_AND_AGENT)] for t in traces}
    schemas: dict[str, dict[str, Any]] = {}
    for trace in traces:
        for tool in trace.tools or []:
            function = tool.get("function", tool) if isinstance(tool, dict) else None
            if isinstance(function, dict) and isinstance(function.get("name"), str):
                schemas.setdefault(function["name"], function)
    keys = key_fields(c for found in calls.values() for c in found)
    views = {t.id: [shown(c, keys) for c in calls[t.id]] for t in traces}
    effects = classify(calls, views, schemas.values())
    writes = frozenset(n for n, e in effects.items() if e.effect == "write")
    base: State = {}
    base_clean: dict[str, bool] = {}
    starts: dict[str, State] = {}
    for trace in traces:
        start, clean = _starts(calls[trace.id], views[trace.id], writes)
        starts[trace.id] = start
        for key, state in start.items():
            if key not in base or (clean[key] and not base_clean[key]):
                base[key], base_clean[key] = state, clean[key]
    steps = {
        t.id: _walk(t.id, calls[t.id], views[t.id], writes, base, starts[t.id]) for t in traces
    }
    return Observed(effects, base, starts, steps, schemas, keys)
