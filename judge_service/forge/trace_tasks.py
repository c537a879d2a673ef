"""From parsed traces to tasks and families: candidates, merge near duplicates, cluster."""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass, field
from typing import Any

from judge_service.forge.similar import DUPLICATE_THRESHOLD, duplicate_of, families
from judge_service.forge.traces import Candidate, Trace, candidates, failure_signs


@dataclass
class TraceTask:
    """A distinct request, with the candidates merged into it."""

    first: Candidate
    merged: list[Candidate] = field(default_factory=list)

    @property
    def trace_ids(self) -> list[str]:
        return list(dict.fromkeys(c.trace_id for c in [self.first, *self.merged]))

    @property
    def failures(self) -> list[dict[str, Any]]:
        return [
            {"trace_id": c.trace_id, **s.as_dict()}
            for c in [self.first, *self.merged]
            for s in c.failures
        ]


@dataclass
class TraceFamily:
    name: str
    terms: list[str]
    tasks: list[TraceTask]

    @property
    def failed_traces(self) -> list[str]:
        return list(dict.fromkeys(f["trace_id"] for t in self.tasks for f in t.failures))


@dataclass
class TraceForge:
    traces: int
    candidates: int
    families: list[TraceFamily]
    failed: dict[str, list[dict[str, Any]]]  # trace id -> its failure signs

    @property
    def tasks(self) -> list[TraceTask]:
        return [t for f in self.families for t in f.tasks]

    def counts(self) -> dict[str, int]:
        tasks = self.tasks
        return {
            "traces": self.traces,
            "candidates": self.candidates,
            "duplicates_merged": sum(len(t.merged) for t in tasks),
            "tasks": len(tasks),
            "families": len(self.families),
            "failed_traces": len(self.failed),
        }


def forge_traces(traces: Sequence[Trace], *, threshold: float = DUPLICATE_THRESHOLD) -> TraceForge:
    """Tasks (one per distinct request) in families, and the traces that look failed."""
    found = [c for trace in traces for c in candidates(trace)]
    owner = duplicate_of([c.request for c in found], threshold)
    tasks: dict[int, TraceTask] = {}
    for index, keeper in enumerate(owner):
        if keeper == index:
            tasks[index] = TraceTask(found[index])
        else:
            tasks[keeper].merged.append(found[index])
    ordered = list(tasks.values())
    grouped = [
        TraceFamily(f.name, f.terms, [ordered[i] for i in f.members])
        for f in families([t.first.request for t in ordered])
    ]
    failed = {t.id: [s.as_dict() for s in signs] for t in traces if (signs := failure_signs(t))}
    return TraceForge(len(traces), len(found), grouped, failed)
