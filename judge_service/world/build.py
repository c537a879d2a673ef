"""Building a world from parsed traces: observe, learn each tool, keep replays of the rest.

Every tool named by a schema or a call (the agent's, or the user's on their own side:
:mod:`judge_service.world.user_side`) gets a model: its answer format, the fields its
entity answers show, a read rule or a function (reads) or a transition (writes), its error
rules, and replays of the traced calls that those do not already answer as the trace did.
Nothing here knows a domain: names, ids and shapes all come from the traces.
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any

from judge_service.traces.conversation import Trace
from judge_service.traces.entities import canonical
from judge_service.world.engine import answer_call, named_for
from judge_service.world.errors import learn_errors
from judge_service.world.functions import learn_function
from judge_service.world.model import Replay, ToolModel, TraceStart
from judge_service.world.observe import Observed, Step, observe, recorded_call
from judge_service.world.reads import learn_read
from judge_service.world.replay import fingerprint
from judge_service.world.transitions import learn_transition
from judge_service.world.user_side import learn_side
from judge_service.world.values import detect_format, payload_of, same
from judge_service.world.world import World

#: The paths a world answers by before any replay is needed.
LEARNED = ("read", "transition", "function")
#: Traced calls kept per tool as examples for a model (e), and the longest answer kept.
EXAMPLES = 12
EXAMPLE_CHARS = 2000


def _fields(steps: Sequence[Step]) -> list[str]:
    names: dict[str, None] = {}
    for step in steps:
        for _, state in step.shown:
            if isinstance(state, dict):
                names.update(dict.fromkeys(state))
    return list(names)


def reproduces(tool: ToolModel, step: Step, known: Sequence[str]) -> bool:
    """Whether (a)-(c) answer the traced call as it was answered, and leave its states."""
    call = recorded_call(step.call, known)
    got = answer_call(tool, step.pre, call, LEARNED, known)
    if got.text is None:
        return False
    if not same(got.payload, payload_of(step.call.answer, step.call.payload)):
        return False
    return all(same(got.state_after.get(k), v) for k, v in step.changed.items())


def _replays(tool: ToolModel, steps: Sequence[Step], known: Sequence[str]) -> dict[str, Replay]:
    """The traced answers the learned model does not reproduce, by the call and the state of
    what it names. An error whose call, in that same state, also went through in another
    trace is left out: the engine answers a traced error before any rule, and two outcomes
    of one call in one state leave the rule to decide."""
    replays: dict[str, Replay] = {}
    succeeded: set[str] = set()
    for step in steps:
        if step.call.answer is None:
            continue
        key = fingerprint(step.call.name, step.call.arguments, step.pre)
        if not step.call.error:
            succeeded.add(key)
        if reproduces(tool, step, known):
            continue
        effects = step.changed if step.write and not step.call.error else {}
        replays.setdefault(
            key, Replay(text=step.call.answer, error=step.call.error, effects=effects)
        )
    return {k: r for k, r in replays.items() if not (r.error and k in succeeded)}


def _examples(steps: Sequence[Step]) -> list[dict[str, Any]]:
    """Up to :data:`EXAMPLES` answered calls with distinct arguments, errors last."""
    seen: dict[str, dict[str, Any]] = {}
    for step in sorted(steps, key=lambda s: s.call.error):
        answer = step.call.answer
        key = canonical(step.call.arguments)
        if answer is not None and key not in seen and len(answer) <= EXAMPLE_CHARS:
            seen[key] = {"arguments": step.call.arguments, "answer": answer}
    return list(seen.values())[:EXAMPLES]


def learn_tool(name: str, observed: Observed, steps: Sequence[Step]) -> ToolModel:
    effect = observed.effects[name].effect
    by_user = bool(steps) and all(s.call.caller == "user" for s in steps)
    tool = ToolModel(
        name=name,
        effect=effect,
        caller="user" if by_user else "agent",
        calls=len(steps),
        errors_seen=sum(s.call.error for s in steps),
        format=detect_format([(s.call.payload, s.call.answer or "") for s in steps]),
        parameters=observed.schemas.get(name, {}),
        fields=_fields(steps),
    )
    if effect == "read":
        tool.read = learn_read(tool, steps)
        tool.function = None if tool.read else learn_function(steps)
    else:
        tool.transition = learn_transition(steps)
    tool.errors = learn_errors(steps, named_for(tool), tool.parameters)
    tool.replays = _replays(tool, steps, observed.keys)
    tool.examples = _examples(steps)
    return tool


def build_world(traces: Sequence[Trace]) -> World:
    """A world from these traces (see the module docstring)."""
    observed = observe(traces)
    by_tool: dict[str, list[Step]] = {name: [] for name in observed.effects}
    for steps in observed.steps.values():
        for step in steps:
            by_tool.setdefault(step.call.name, []).append(step)
    tools = {name: learn_tool(name, observed, steps) for name, steps in sorted(by_tool.items())}
    users = frozenset(name for name, tool in tools.items() if tool.caller == "user")
    answers, sides = learn_side(observed.steps.values(), users)
    for name, side in answers.items():
        tools[name].side = side
    starts = {
        trace_id: TraceStart(
            keys=list(start),
            overrides={k: v for k, v in start.items() if not same(observed.base.get(k), v)},
        )
        for trace_id, start in observed.starts.items()
    }
    return World(
        tools=tools,
        base=observed.base,
        key_fields=observed.keys,
        traces=starts,
        sides={trace: side for trace, side in sides.items() if side},
    )
