"""Fidelity on held-out runs: how closely a world answers the runs it was not built from.

The world is built without the held-out traces. Each held-out run starts from the state its
goal's other runs started from; its tool calls are answered in order, the state carried
through the episode (never corrected by the real answers), and compared with the real
answers: exactly (the parsed answer is equal) and by field-level F1 (the answers flattened
to path -> value pairs; an unanswered call scores 0). The baseline is an exact-call replay
cache over the same building traces: it answers only a call whose tool and arguments it saw.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from typing import Any

from pydantic import BaseModel, Field

from judge_service.traces.calls import ToolCall, tool_calls
from judge_service.traces.conversation import Trace
from judge_service.traces.entities import canonical
from judge_service.world.build import build_world
from judge_service.world.model import PATHS
from judge_service.world.observe import recorded_call
from judge_service.world.values import field_f1, payload_of, same
from judge_service.world.world import World

#: Paths a world answers by without a model.
NO_MODEL = PATHS[:-1]


class Score(BaseModel):
    calls: int = 0
    answered: int = 0
    exact: int = 0
    f1_sum: float = 0.0

    def add(self, answered: bool, exact: bool, f1: float) -> None:
        self.calls += 1
        self.answered += answered
        self.exact += exact
        self.f1_sum += f1

    @property
    def exact_rate(self) -> float:
        return self.exact / self.calls if self.calls else 0.0

    @property
    def f1(self) -> float:
        return self.f1_sum / self.calls if self.calls else 0.0

    def figures(self) -> dict[str, Any]:
        """The counts and rates; with no call scored the rates are ``None``: nothing was
        measured, which a 0.0 would hide."""
        measured = self.calls > 0
        return {
            "calls": self.calls,
            "answered": self.answered,
            "exact": round(self.exact_rate, 4) if measured else None,
            "f1": round(self.f1, 4) if measured else None,
        }


class Fidelity(BaseModel):
    held_out: list[str] = Field(default_factory=list)
    world: Score = Field(default_factory=Score)
    baseline: Score = Field(default_factory=Score)
    by_tool: dict[str, Score] = Field(default_factory=dict)
    baseline_by_tool: dict[str, Score] = Field(default_factory=dict)
    by_path: dict[str, Score] = Field(default_factory=dict)
    #: tool -> path -> calls answered by it
    paths_by_tool: dict[str, dict[str, int]] = Field(default_factory=dict)
    misses: list[dict[str, Any]] = Field(default_factory=list)

    @property
    def ratio(self) -> float:
        """The world's exact-answer rate over the baseline's."""
        return self.world.exact_rate / self.baseline.exact_rate if self.baseline.exact else 0.0

    def figures(self) -> dict[str, Any]:
        return {
            "held_out_runs": len(self.held_out),
            "world": self.world.figures(),
            "baseline": self.baseline.figures(),
            "ratio": round(self.ratio, 3) if self.baseline.exact else None,
            "by_path": {p: s.figures() for p, s in self.by_path.items()},
            "by_tool": {
                t: {
                    "world": s.figures(),
                    "baseline": self.baseline_by_tool[t].figures(),
                    "paths": self.paths_by_tool[t],
                }
                for t, s in sorted(self.by_tool.items())
            },
        }


def hold_out(groups: Mapping[str, Sequence[str]]) -> dict[str, list[str]]:
    """One run (the last free one) of every group with repeats, mapped to the group's runs
    that stay in the world. A run another held-out run starts from is not held out."""
    chosen: dict[str, list[str]] = {}
    needed: set[str] = set()
    for group in groups.values():
        runs = list(dict.fromkeys(group))
        free = [r for r in runs if r not in chosen and r not in needed]
        if not free:
            continue
        held = free[-1]
        siblings = [r for r in runs if r != held and r not in chosen]
        if siblings:
            chosen[held] = siblings
            needed.update(siblings)
    return chosen


def hold_out_tasks(tasks: Sequence[Any]) -> dict[str, list[str]]:
    """:func:`hold_out` over forge tasks (:class:`~judge_service.forge.trace_tasks.TraceTask`):
    a task's repeats are its runs."""
    return hold_out({str(i): list(t.trace_ids) for i, t in enumerate(tasks)})


def _replay_cache(traces: Sequence[Trace]) -> dict[str, ToolCall]:
    cache: dict[str, ToolCall] = {}
    for trace in traces:
        for call in tool_calls(trace):
            if call.answer is not None:
                cache.setdefault(canonical([call.name, call.arguments]), call)
    return cache


def _score(got: Any, answered: bool, want: Any) -> tuple[bool, float]:
    if not answered:
        return False, 0.0
    return same(got, want), field_f1(got, want)


def evaluate(
    traces: Sequence[Trace],
    held_out: Mapping[str, Sequence[str]],
    paths: Sequence[str] = NO_MODEL,
    world: World | None = None,
) -> tuple[World, Fidelity]:
    """Build the world without ``held_out`` (trace id -> its goal's other runs) and score
    it, and the baseline, on the held-out runs' calls."""
    building = [t for t in traces if t.id not in held_out]
    world = world or build_world(building)
    cache = _replay_cache(building)
    report = Fidelity(held_out=sorted(held_out))
    for trace in traces:
        if trace.id not in held_out:
            continue
        state: Mapping[str, Any] = world.task_state(held_out[trace.id])
        for call in tool_calls(trace):
            if call.answer is None:
                continue
            want = payload_of(call.answer, call.payload)
            answer = world.answer(state, recorded_call(call, world.key_fields), paths)
            state = answer.state_after
            answered = answer.text is not None
            exact, f1 = _score(answer.payload, answered, want)
            report.world.add(answered, exact, f1)
            report.by_tool.setdefault(call.name, Score()).add(answered, exact, f1)
            report.by_path.setdefault(answer.path, Score()).add(answered, exact, f1)
            shares = report.paths_by_tool.setdefault(call.name, {})
            shares[answer.path] = shares.get(answer.path, 0) + 1
            if not exact:
                report.misses.append(
                    {"trace": trace.id, "call": call.index, "tool": call.name, "path": answer.path}
                )
            hit = cache.get(canonical([call.name, call.arguments]))
            got = payload_of(hit.answer, hit.payload) if hit else None
            exact, f1 = _score(got, hit is not None, want)
            report.baseline.add(hit is not None, exact, f1)
            report.baseline_by_tool.setdefault(call.name, Score()).add(hit is not None, exact, f1)
    return world, report
