"""Answering one tool call from a state: paths (a) to (e), in order, and the state after.

Errors come first: if a learned error condition holds (the named entity is missing, an
argument is outside its enum, an id names nothing the world holds), the tool's own error
text is the answer, on the tool's path (``read`` or ``transition``); so is a traced error to
the same call in the same state (path ``replay``: a check no rule learned, such as a new
item that is not available, still answers as the backend did). Then (a) a read rule,
(b) a usable transition, (c) a function, (d) a replay; else (e) ``model_needed``. Whatever
an answer shows of an entity becomes its state, as when a trace shows it.
"""

from __future__ import annotations

from collections.abc import Collection, Mapping, Sequence
from typing import Any

from judge_service.traces.calls import ToolCall, is_error_answer, parse_payload
from judge_service.world.errors import Named, answer_error
from judge_service.world.fresh import new_id
from judge_service.world.functions import call_function
from judge_service.world.lookup import Ctx, Index, merge
from judge_service.world.model import NEW_ID, PATHS, Answer, AnswerPath, Call, Replay, ToolModel
from judge_service.world.observe import shown
from judge_service.world.ops import apply_ops
from judge_service.world.reads import project, read_value, select
from judge_service.world.replay import fingerprint
from judge_service.world.text import fill
from judge_service.world.transitions import bound_key
from judge_service.world.values import MISSING, payload_of, render

State = Mapping[str, Any]


def named_for(tool: ToolModel) -> Named | None:
    """How to find the entity a call of ``tool`` names: its state, ``MISSING`` when the
    state lacks it, ``None`` when the call names none."""
    rule = tool.read
    if rule is not None:

        def read_named(state: Mapping[str, Any], args: Mapping[str, Any]) -> Any:
            keys = select(rule, state, args)
            return None if keys is None else state[keys[0]] if keys else MISSING

        return read_named
    if tool.transition is not None and tool.transition.effects:
        binding = tool.transition.effects[0].binding

        def write_named(state: Mapping[str, Any], args: Mapping[str, Any]) -> Any:
            key = bound_key(binding, args)
            return None if key is None else state.get(key, MISSING)

        return write_named
    return None


def _with_shown(state: State, call: Call, text: str, payload: Any, known: Sequence[str]) -> State:
    """``state`` with what an answer (a replayed or computed text) shows of entities
    (``known``: the fields that name entities)."""
    tool_call = ToolCall(0, 0, call.name, dict(call.arguments), text, payload, None, False)
    seen = shown(tool_call, known)
    if not seen:
        return state
    out = dict(state)
    for key, value in seen:
        out[key] = merge(out.get(key), value)
    return out


def _answer(
    text: str, path: AnswerPath, state: State, error: bool = False, note: str = ""
) -> Answer:
    payload = payload_of(text, parse_payload(text))
    # built from checked parts: validating would copy the whole state on every call
    return Answer.model_construct(
        text=text, payload=payload, path=path, error=error, state_after=state, note=note
    )


def _needed(state: State, note: str = "") -> Answer:
    return Answer.model_construct(
        text=None, payload=None, path="model_needed", error=False, state_after=state, note=note
    )


def _read(
    tool: ToolModel, state: State, call: Call, known: Sequence[str], index: Index | None
) -> Answer | None:
    rule = tool.read
    if rule is None:
        return None
    keys = select(rule, state, call.arguments)
    if not keys and rule.select != "filter":
        return None
    value = read_value(rule, tool, state, keys or [])
    if value is MISSING:
        return None
    return _answer(render(value, tool.format), "read", state)


def _write(
    tool: ToolModel, state: State, call: Call, known: Sequence[str], index: Index | None
) -> Answer | None:
    transition = tool.transition
    if transition is None or not transition.usable:
        return None
    args = call.arguments
    primary = transition.effects[0].binding
    if transition.creates:
        args = {**args, NEW_ID: new_id(transition.new_ids, primary.entity, state, call)}
    first_key = bound_key(primary, args)
    if first_key is None or (first_key not in state) != transition.creates:
        return None
    after = dict(state)
    stale = []
    for number, effect in enumerate(transition.effects):
        first = after[first_key] if transition.creates and number else state.get(first_key)
        key = bound_key(effect.binding, args, first)
        if key is None or (key not in state and not (number == 0 and transition.creates)):
            continue
        before = after.get(key, {})
        new = apply_ops(before, effect.ops, Ctx(args, before, state, index=index))
        if new is MISSING:
            if number == 0:
                return None
            stale.append(key)
            continue
        after[key] = new
        if effect.unexplained:
            stale.append(key)
    if transition.answer == "entity":
        text = render(project(after[first_key], tool.fields), tool.format)
    else:
        filled = fill(transition.template, args)
        if filled is None:
            return None
        text = filled
    note = f"partly learned: {', '.join(stale)}" if stale else ""
    return _answer(text, "transition", after, note=note)


def _function(
    tool: ToolModel, state: State, call: Call, known: Sequence[str], index: Index | None
) -> Answer | None:
    if tool.effect != "read" or tool.function is None:
        return None
    text = call_function(tool.function, call.arguments)
    if text is None:
        return None
    payload = parse_payload(text)
    error = is_error_answer(None, text, payload)
    after = state if error else _with_shown(state, call, text, payload, known)
    return _answer(text, "function", after, error=error)


def _replayed(tool: ToolModel, state: State, call: Call) -> Replay | None:
    """The traced answer to this call in this state, if the world kept one."""
    if not tool.replays:
        return None
    return tool.replays.get(fingerprint(call.name, call.arguments, state))


def _replay(found: Replay, state: State, call: Call, known: Sequence[str]) -> Answer:
    after = {**state, **found.effects} if found.effects else state
    if not found.error:
        after = _with_shown(after, call, found.text, parse_payload(found.text), known)
    return _answer(found.text, "replay", after, error=found.error)


#: Paths (a) to (c), in order; (d), the replay, is looked up once per call (:func:`answer_call`).
STEPS = {"read": _read, "transition": _write, "function": _function}


def answer_call(
    tool: ToolModel | None,
    state: State,
    call: Call,
    paths: Collection[str] = PATHS,
    known: Sequence[str] = (),
    index: Index | None = None,
) -> Answer:
    """The answer to ``call`` in ``state`` by the first of ``paths`` that has one
    (``known``: the fields that name entities, :attr:`World.key_fields`; ``index``: where
    ids are, kept between calls so that a lookup by id does not walk every entity)."""
    if tool is None:
        return _needed(state, "unknown tool")
    own: AnswerPath = "transition" if tool.effect == "write" else "read"
    if own in paths:
        error = answer_error(
            tool.errors, state, call.arguments, named_for(tool), tool.parameters, index
        )
        if error is not None:
            return _answer(error, own, state, error=True)
    replayed = _replayed(tool, state, call) if "replay" in paths else None
    if replayed is not None and replayed.error:
        # this very call, in this very state, failed: no rule says otherwise
        return _replay(replayed, state, call, known)
    for path, step in STEPS.items():
        if path in paths:
            found = step(tool, state, call, known, index)
            if found is not None:
                return found
    if replayed is not None:
        return _replay(replayed, state, call, known)
    return _needed(state)
