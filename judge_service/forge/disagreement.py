"""Runs that did not reach their task's reference: a failure sign, once the reference is known.

- ``disagrees_with_consensus``: the run's end state differs from a consensus (at least two
  repeats reached it, more than any other end state).
- ``disagrees_with_proposed``: the run's end state differs from a *proposed* reference
  (:mod:`judge_service.forge.end_states`) whose evidence outweighs the run's own candidate.
  With two runs a goal, the usual case in real traces, no consensus can outvote a failed
  run, and without this sign most failed runs, polite to the end, show nothing. Where the
  evidence is even (a tie broken only by order), no run is marked: which one failed is then a
  coin's throw, and a sign that marks good runs is worse than none. The sign is as
  provisional as its reference: when the hindsight panel changes the reference, the task is
  marked again (:func:`mark_disagreement`).
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import Protocol

from judge_service.forge.end_states import Candidate, Consensus, GoalOutcome
from judge_service.traces.conversation import FailureSign
from judge_service.traces.entities import canonical, state_diff
from judge_service.traces.goals import Goal

CONSENSUS = "disagrees_with_consensus"
PROPOSED = "disagrees_with_proposed"
MAX_EXCERPT = 300


def _candidate_of(candidates: list[Candidate], trace_id: str) -> Candidate | None:
    return next((c for c in candidates if trace_id in c.traces), None)


class Repeats(Protocol):
    """A task's repeats as :class:`~judge_service.forge.trace_tasks.TraceTask` holds them
    (a protocol: the task module imports this one)."""

    goals: list[Goal]
    consensus: Consensus | None

    @property
    def trace_ids(self) -> list[str]: ...

    def trace_outcome(self, trace_id: str) -> GoalOutcome: ...

    def parts(self, trace_id: str) -> Sequence[tuple[Goal, GoalOutcome]]: ...


def mark_disagreement(task: Repeats) -> None:
    """Mark each repeat of ``task`` whose end state differs from its reference (module
    docstring); earlier marks of either kind are dropped first."""
    for goal in task.goals:
        goal.failures = [s for s in goal.failures if s.kind not in (CONSENSUS, PROPOSED)]
    agreed = task.consensus
    if agreed is None or agreed.reference is None or agreed.source not in ("consensus", "proposed"):
        return
    wanted = canonical(agreed.reference)
    reference = next((c for c in agreed.candidates if canonical(c.end_state) == wanted), None)
    for trace_id in task.trace_ids:
        outcome = task.trace_outcome(trace_id)
        diff = state_diff(outcome.end_state, agreed.reference)
        if not diff:
            continue
        kind = CONSENSUS
        if agreed.source == "proposed":
            own = _candidate_of(agreed.candidates, trace_id)
            if reference is None or own is None or (reference.score or 0) <= (own.score or 0):
                continue  # even evidence: no run is marked
            kind = PROPOSED
        last = task.parts(trace_id)[-1][0]
        turn = outcome.last_write_turn if outcome.last_write_turn is not None else last.end - 1
        last.failures.append(FailureSign(kind, turn, "; ".join(diff)[:MAX_EXCERPT]))
