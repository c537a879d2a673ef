"""What a stored world says of itself: its counts, and its report (per tool: the share of
held-out calls each path answered and what was learned; the fidelity beside the baseline).

Pure: the world job stores these, the routes and the CLI show them as they are.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from typing import Any

from judge_service.world.fidelity import NO_MODEL, Fidelity
from judge_service.world.model import PATH_LETTERS, PATHS
from judge_service.world.world import World

#: Misses kept in a report: enough to start looking, not the whole list.
MISSES_SHOWN = 20


def _shares(counts: Mapping[str, int]) -> dict[str, float]:
    """Each path's share of the calls (every path named, in the order they are tried)."""
    total = sum(counts.values())
    return {p: round(counts.get(p, 0) / total, 4) if total else 0.0 for p in PATHS}


def tool_reports(world: World, fidelity: Fidelity) -> dict[str, dict[str, Any]]:
    """Per tool: its class, traced calls, held-out calls and each path's share of them,
    then what the world learned of it (read rule, function, transitions, errors, replays)."""
    learned = world.report()
    out: dict[str, dict[str, Any]] = {}
    for name in sorted(set(learned) | set(fidelity.paths_by_tool)):
        entry = dict(learned.get(name, {"effect": "unknown", "calls": 0}))
        counts = fidelity.paths_by_tool.get(name, {})
        out[name] = {
            "effect": entry.pop("effect"),
            "calls": entry.pop("calls"),
            "held_out_calls": sum(counts.values()),
            "paths": _shares(counts),
            **entry,
        }
    return out


def fidelity_report(fidelity: Fidelity) -> dict[str, Any]:
    """Exact-answer rate and field-level F1 on the held-out runs, overall, by path and by
    tool, each beside the exact-call replay baseline; the first misses."""
    return {
        **fidelity.figures(),
        "paths_used": list(NO_MODEL),
        "misses": fidelity.misses[:MISSES_SHOWN],
    }


def world_report(world: World, fidelity: Fidelity) -> dict[str, Any]:
    return {
        "path_letters": dict(PATH_LETTERS),
        "tools": tool_reports(world, fidelity),
        "fidelity": fidelity_report(fidelity),
    }


def world_counts(
    world: World,
    *,
    jobs: int,
    traces: int,
    groups: Mapping[str, Sequence[str]],
    held_out: Mapping[str, Sequence[str]],
) -> dict[str, int]:
    """How much went in and what was learned: traces and goals, held-out runs, entities,
    tools, writes and their usable transitions, replays kept."""
    tools = world.tools.values()
    return {
        "jobs": jobs,
        "traces": traces,
        "goals": len(groups),
        "goals_with_repeats": sum(1 for runs in groups.values() if len(runs) > 1),
        "held_out_runs": len(held_out),
        "entities": len(world.base),
        "entity_types": len({key.split("=", 1)[0] for key in world.base}),
        "tools": len(world.tools),
        "writes": sum(1 for t in tools if t.effect == "write"),
        "usable_transitions": sum(1 for t in tools if t.transition and t.transition.usable),
        "replays": sum(len(t.replays) for t in tools),
    }
