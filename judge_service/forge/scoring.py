"""The forge's figures against ground truth, for a corpus that has it (a benchmark's, a test's).

Ground truth per trace: the goal it pursued, its real end state and the goal's reference end
state, its success label. The figures are those a user of the forge cares about: tasks per
goal, goals wrongly merged, read/write classes right, references equal to the truth, and the
failure signs' balanced accuracy against the labels.
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

from judge_service.forge.trace_tasks import TraceForge
from judge_service.traces.entities import canonical


def _goal_reference(
    forged: TraceForge, truth: Mapping[str, Mapping[str, Any]], goal: str, indices: set[int]
) -> str | None:
    """The end state the forge agreed for ``goal``: the references of the tasks that are
    mostly its traces, together (a conversation split into sub-goals has one per sub-goal);
    ``None`` when one of them has no reference."""
    together: dict[str, Any] = {}
    for index in sorted(indices):
        task = forged.tasks[index]
        mine = sum(truth.get(t, {}).get("goal_id") == goal for t in task.trace_ids)
        if mine * 2 <= len(task.trace_ids):
            continue
        if task.consensus is None or task.consensus.reference is None:
            return None
        together.update(task.consensus.reference)
    return canonical(together)


def forge_figures(
    forged: TraceForge,
    truth: Mapping[str, Mapping[str, Any]],
    effects: Mapping[str, str] | None = None,
) -> dict[str, Any]:
    """``truth``: trace id -> ``{goal_id, outcome, reference_end_state}``; ``effects``: tool
    -> ``read``/``write``."""
    goal_tasks: dict[str, set[int]] = {}
    merged_goals = 0
    for index, task in enumerate(forged.tasks):
        goals_here = {truth[t]["goal_id"] for t in task.trace_ids if t in truth}
        merged_goals += len(goals_here) > 1
        for goal in goals_here:
            goal_tasks.setdefault(goal, set()).add(index)
    goals = len(goal_tasks)
    reference_hits, reference_goals = 0, 0
    for goal, indices in goal_tasks.items():
        rows = [r for r in truth.values() if r["goal_id"] == goal]
        if sum(r["outcome"] == "success" for r in rows) < 2:
            continue
        reference_goals += 1
        reference_hits += _goal_reference(forged, truth, goal, indices) == canonical(
            rows[0]["reference_end_state"]
        )
    tools_right = None
    if effects:
        right = sum(forged.tools[n].effect == e for n, e in effects.items() if n in forged.tools)
        tools_right = round(right / len(effects), 4)
    labels = forged.labels or {}
    return {
        "traces": forged.traces,
        "goals": goals,
        "tasks": len(forged.tasks),
        "tasks_per_goal": round(len(forged.tasks) / goals, 3) if goals else None,
        "merged_goal_share": round(merged_goals / len(forged.tasks), 4) if forged.tasks else None,
        "tools_correct": tools_right,
        "reference_correct": round(reference_hits / reference_goals, 4)
        if reference_goals
        else None,
        "reference_goals": reference_goals,
        "signs_balanced_accuracy": (labels.get("any_sign") or {}).get("balanced_accuracy"),
        "signs": labels,
    }
