"""Worlds simulated from production traces: entities, tool models, answers with their path.

    world = build_world(parse_traces(jsonl))          # learn from the traces
    state = world.initial_state(trace_id)             # or world.task_state(trace_ids)
    answer = world.answer(state, Call(name=..., arguments={...}))
    answer.text, answer.payload, answer.path, answer.error, answer.state_after
    World.model_validate_json(world.model_dump_json()) == world

Paths, tried in order: ``read`` (a), ``transition`` (b), ``function`` (c), ``replay`` (d),
``model_needed`` (e). :func:`~judge_service.world.fidelity.evaluate` measures a world on
held-out runs against an exact-call replay cache. Pure: no database, HTTP or queue.
"""

from judge_service.world.build import build_world
from judge_service.world.fidelity import Fidelity, evaluate, hold_out, hold_out_tasks
from judge_service.world.model import Answer, Call
from judge_service.world.world import World

__all__ = [
    "Answer",
    "Call",
    "Fidelity",
    "World",
    "build_world",
    "evaluate",
    "hold_out",
    "hold_out_tasks",
]
