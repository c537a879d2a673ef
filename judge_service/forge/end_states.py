"""What a goal's work left behind, and the end state that a task's repeats agree on.

A goal's end state is, for every entity that a successful write call of the goal touched,
the last state the trace shows of it up to the goal's end. The entities a write touched are
those its answer showed; when its answer showed none, those its id arguments name, seen by
a later read. Entities a write merely names beside the one it returns (the user of a
booking) are left out: whether an agent happened to read them again would split runs that
agree. A write whose entity the trace never shows is kept as the call itself
(``write:<tool>`` with its arguments), so it still counts. An entity a write created (its id
appears nowhere before that write's answer) is keyed ``new:<tool>:<n>`` and kept without its
fresh id, so that two runs that booked the same thing under other generated ids agree.
End states, not call lists, are compared: two runs that reach the same states through other
calls or another argument order agree.

A task's reference is the end state that at least two of its repeats reached, with more runs
without a failure sign than any other end state has (``consensus``; one clean run alone:
``single_trace``). A run with a sign has no vote: two runs that agree, one of which claimed a
change it never made, are one clean run, and the clean runs that reached other end states
are not outvoted by it (on the real retail runs such a consensus marked four successful runs
failed). Otherwise the forge *proposes* one (``proposed``): the candidates are the end states
the runs reached and "nothing changed" (``{}``), whatever the runs did; each is weighed by the
evidence of the runs behind it (:class:`RunEvidence`: their failure signs, whether the user
accepted the outcome), and "nothing changed", when no run reached it, by a neutral prior
between a clean run and a failed one. An end state that holds every change another run's
made, and more, weighs :data:`DID_MORE` more: of two polite runs, the one that stopped short
is the usual failure (on the real retail runs, of the pairs where one run's end state holds
the other's and only one run succeeded, the fuller one succeeded in 21 of 23). Every
candidate keeps its reasons. A proposed reference
is usable at once; rewards made with it are provisional, and the task stays in review for a
human to confirm or change. Every distinct end state is kept with its count and traces.
"""

from __future__ import annotations

from collections.abc import Collection, Mapping, Sequence
from dataclasses import dataclass, field
from typing import Any

from judge_service.traces.calls import ToolCall
from judge_service.traces.entities import answer_entities, canonical, entity_key, id_arguments

#: How many repeats must reach an end state for it to be the consensus.
MIN_AGREEING = 2
#: What a run's evidence weighs (:meth:`RunEvidence.weight`): a run without failure signs
#: counts :data:`CLEAN_RUN`, and one whose user accepted the outcome :data:`ACCEPTED` more.
#: "Nothing changed", when no run reached it, weighs :data:`NO_RUN_PRIOR`: above a run with
#: signs that the user did not accept, below a clean one. Each value the users of the task
#: asked for in the tools' terms (:mod:`judge_service.traces.requested`) that the run's end
#: state holds adds :data:`ASKED_VALUE`: of two polite runs, the one whose new record is
#: "purple" and "polyester", as asked, did what was asked.
CLEAN_RUN = 2.0
ACCEPTED = 1.0
NO_RUN_PRIOR = 1.5
ASKED_VALUE = 1.0
#: What an end state that holds another run's end state and more weighs beyond its runs'
#: evidence: less than any of theirs, so that it decides only between candidates as good.
DID_MORE = 0.5


@dataclass
class RunEvidence:
    """What one run of a task says for the end state it reached."""

    signs: list[str] = field(default_factory=list)
    accepted: bool = False
    #: How many values the task's users asked for its end state holds.
    asked: int = 0

    def weight(self) -> float:
        clean = 0.0 if self.signs else CLEAN_RUN
        return clean + (ACCEPTED if self.accepted else 0.0) + ASKED_VALUE * self.asked

    def reasons(self, trace_id: str) -> list[str]:
        shown = ", ".join(self.signs) if self.signs else "no failure sign"
        accepted = "the user accepted the outcome" if self.accepted else "no acceptance"
        held = f"; holds {self.asked} value(s) the user asked for" if self.asked else ""
        return [f"{trace_id}: {shown}; {accepted}{held}"]


@dataclass
class GoalOutcome:
    """The writes a goal made, in order, and the end state they left."""

    writes: list[dict[str, Any]]
    end_state: dict[str, Any]
    last_write_turn: int | None


def _without(state: Any, value: str) -> Any:
    """``state`` without the top-level fields holding ``value`` (a run's fresh id)."""
    if not isinstance(state, dict):
        return state
    return {k: v for k, v in state.items() if str(v) != value}


def goal_outcome(
    calls: Sequence[ToolCall], writes: Collection[str], start: int, end: int
) -> GoalOutcome:
    """The outcome of the goal spanning messages ``[start, end)`` (module docstring)."""
    last: dict[str, tuple[int, Any]] = {}  # entity key -> (call index, state)
    touched: dict[str, int] = {}  # entity key -> index of the write that touched it
    created: dict[str, str] = {}  # a new entity's key -> its key in the end state
    made: list[dict[str, Any]] = []
    blind: list[ToolCall] = []  # writes whose answer showed no entity
    seen = ""  # every argument and answer so far: an id not in it is a new one
    last_turn = None
    for call in calls:
        if call.turn >= end:
            break
        states = answer_entities(call)
        for key, state in states:
            last[key] = (call.index, state)
        arguments = canonical(call.arguments)
        is_write = call.name in writes and call.turn >= start and not call.error
        if is_write and call.answer is not None:
            made.append({"tool": call.name, "arguments": call.arguments, "turn": call.turn})
            last_turn = call.turn
            if not states:
                blind.append(call)
                touched.update({entity_key(n, v): call.index for n, v in id_arguments(call)})
            for key, _ in states:
                touched[key] = call.index
                value = key.split("=", 1)[1]
                if value not in seen and value not in arguments and key not in created:
                    count = sum(v.startswith(f"new:{call.name}:") for v in created.values())
                    created[key] = f"new:{call.name}:{count + 1}"
        seen += arguments + (call.answer or "")
    # an entity counts only as seen after the write that touched it
    end_state = {}
    for key in sorted(touched):
        if key in last and last[key][0] >= touched[key]:
            if key in created:
                end_state[created[key]] = _without(last[key][1], key.split("=", 1)[1])
            else:
                end_state[key] = last[key][1]
    for call in blind:
        if not any(entity_key(n, v) in end_state for n, v in id_arguments(call)):
            end_state.setdefault(f"write:{call.name}", []).append(canonical(call.arguments))
    for key in end_state:
        if key.startswith("write:"):
            end_state[key] = sorted(end_state[key])
    return GoalOutcome(made, dict(sorted(end_state.items())), last_turn)


@dataclass
class Candidate:
    """One distinct end state among a task's repeats."""

    end_state: dict[str, Any]
    count: int
    traces: list[str] = field(default_factory=list)
    #: The evidence's weight and what it says, when the reference had to be proposed.
    score: float | None = None
    reasons: list[str] = field(default_factory=list)

    def as_dict(self) -> dict[str, Any]:
        shown: dict[str, Any] = {
            "end_state": self.end_state,
            "count": self.count,
            "traces": self.traces,
        }
        if self.score is not None:
            shown.update(score=round(self.score, 3), reasons=self.reasons)
        return shown


@dataclass
class Consensus:
    """A task's end states: ``reference`` is the agreed one (``None`` when none is)."""

    candidates: list[Candidate]
    reference: dict[str, Any] | None
    source: str | None
    needs_review: bool

    def agreed(self) -> bool:
        """Whether the reference is a consensus that other repeats can disagree with."""
        return self.source == "consensus"


def consensus(
    outcomes: Sequence[tuple[str, dict[str, Any], bool]],
    evidence: Mapping[str, RunEvidence] | None = None,
) -> Consensus:
    """From ``(trace id, end state, looks failed)`` of each repeat of one task, and what
    each run's ``evidence`` says (else only whether it looks failed).

    With one repeat, its end state is the reference (``single_trace``) unless it looks
    failed. With more, the consensus needs :data:`MIN_AGREEING` repeats, and more of them
    that look sound than any other end state has; any disagreement marks the task for
    review. Without either, the reference is proposed (module docstring)."""
    by_state: dict[str, Candidate] = {}
    for trace_id, state, _ in outcomes:
        candidate = by_state.setdefault(canonical(state), Candidate(state, 0))
        candidate.count += 1
        candidate.traces.append(trace_id)
    looks_failed = {trace_id: failed for trace_id, _, failed in outcomes}

    def votes(candidate: Candidate) -> int:
        return sum(not looks_failed[t] for t in candidate.traces)

    candidates = sorted(by_state.values(), key=lambda c: (-votes(c), -c.count))
    if len(outcomes) == 1 and not outcomes[0][2]:
        return Consensus(candidates, candidates[0].end_state, "single_trace", False)
    top = candidates[0]
    runner_up = votes(candidates[1]) if len(candidates) > 1 else 0
    if top.count >= MIN_AGREEING and votes(top) > runner_up:
        return Consensus(candidates, top.end_state, "consensus", len(candidates) > 1)
    runs = {
        t: (evidence or {}).get(t) or RunEvidence(["looks failed"] if looks_failed[t] else [])
        for t in looks_failed
    }
    return _proposed(candidates, runs)


def _proposed(candidates: list[Candidate], runs: Mapping[str, RunEvidence]) -> Consensus:
    """The candidate whose runs' evidence weighs most, "nothing changed" among them; on a
    tie, the one more runs reached, then the first seen."""
    if "{}" not in {canonical(c.end_state) for c in candidates}:
        candidates = [*candidates, Candidate({}, 0)]
    for candidate in candidates:
        if candidate.traces:
            weights = [runs[t].weight() for t in candidate.traces]
            candidate.score = sum(weights) / len(weights)
            candidate.reasons = [r for t in candidate.traces for r in runs[t].reasons(t)]
        else:
            candidate.score = NO_RUN_PRIOR
            candidate.reasons = ["no run left everything as it was: the neutral prior"]
    reached = [c for c in candidates if c.traces]
    for candidate in reached:
        if any(_holds_more(candidate.end_state, other.end_state) for other in reached):
            candidate.score = (candidate.score or 0.0) + DID_MORE
            candidate.reasons.append("holds every change another run made, and more")
    ranked = sorted(candidates, key=lambda c: (-(c.score or 0.0), -c.count))
    return Consensus(ranked, ranked[0].end_state, "proposed", True)


def _holds_more(state: Mapping[str, Any], other: Mapping[str, Any]) -> bool:
    """Whether ``state`` holds every entity of ``other`` as ``other`` left it, and more."""
    return len(state) > len(other) and all(
        key in state and canonical(state[key]) == canonical(value) for key, value in other.items()
    )
