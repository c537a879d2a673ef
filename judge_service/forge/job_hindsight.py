"""The forge job's hindsight panel: each task whose reference had to be proposed goes to the
job's judges (:mod:`~judge_service.forge.hindsight`), and their choice weighs in; where it
changes a reference, the runs that disagree with it are marked again.

The panel is ``hindsight_judges`` when given, else the job's ``miner``. A failed call is one
judge fewer for that task; the job never fails for it.
"""

from __future__ import annotations

from typing import Any

from judge_service.core.settings import Settings
from judge_service.forge.disagreement import mark_disagreement
from judge_service.forge.hindsight import SCHEMA, apply_panel, needs_judge, question
from judge_service.forge.job_asks import ask_all
from judge_service.forge.policy import rules_of
from judge_service.forge.trace_tasks import TraceForge
from judge_service.traces.conversation import Trace

#: Room for a few sentences of reasoning before the choice.
MAX_TOKENS = 400


def panel(options: dict[str, Any]) -> list[Any]:
    """The judges of the job's hindsight panel; none when it has no model or it is off."""
    if not options.get("hindsight", True):
        return []
    judges = options.get("hindsight_judges") or []
    if judges:
        return list(judges)
    return [options["miner"]] if options.get("miner") is not None else []


def _name(spec: Any) -> str:
    return str(spec.get("name") if isinstance(spec, dict) else spec)


def judge_references(
    job_id: str,
    traces: list[Trace],
    forged: TraceForge,
    lines: list[str],
    options: dict[str, Any],
    settings: Settings,
) -> dict[str, int] | None:
    """Ask the panel about every proposed reference; counts of what it did (``None`` when the
    job has no panel)."""
    judges = panel(options)
    if not judges:
        return None
    by_id = {t.id: t for t in traces}
    asked, tasks = [], []
    for task, goal in zip(forged.tasks, lines, strict=True):
        if not needs_judge(task.consensus) or task.consensus is None:
            continue
        writes = {t: task.trace_outcome(t).writes for t in task.trace_ids}
        first = by_id.get(task.first.trace_id)
        policy = rules_of(first) if first is not None else ""
        asked.append(question(task.consensus, goal, policy, writes))
        tasks.append(task)
    prompts = [q.messages for q in asked]
    replies = [
        (
            _name(j),
            ask_all(
                job_id, j, settings, prompts, schema=SCHEMA, name="hindsight", max_tokens=MAX_TOKENS
            ),
        )
        for j in judges
    ]
    counts = {"asked": len(asked), "failed_calls": sum(r is None for _, a in replies for r in a)}
    for index, (task, one) in enumerate(zip(tasks, asked, strict=True)):
        outcome = apply_panel(one, [(name, answers[index]) for name, answers in replies])
        counts[outcome] = counts.get(outcome, 0) + 1
        if outcome == "chosen":
            mark_disagreement(task)  # its runs' signs follow the reference the panel chose
    forged.recount(traces)
    return counts
