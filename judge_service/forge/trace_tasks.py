"""From parsed traces to tasks: goals, merged repeats, end states, consensus, families.

1. Each trace's tool calls are read, and every tool is classified read or write
   (:mod:`~judge_service.traces.effects`) over all traces at once.
2. Each trace splits into user goals (:mod:`~judge_service.traces.goals`); each goal's writes
   give its end state (:mod:`~judge_service.forge.end_states`).
3. Goals merge into tasks by meaning and entities (:mod:`~judge_service.forge.merge`), and
   the parts of a compound goal fold into one task; each task's repeats (one per trace, its
   parts' end states together) vote on its reference end state.
4. A trace whose end state differs from its task's reference gets a sign
   (:mod:`~judge_service.forge.disagreement`), beside the signs read from the trace itself
   (:mod:`~judge_service.forge.signs`).
5. Tasks group into families: those that make the same kind of change (the same write tools),
   named by them; those that change nothing by their requests' words.
"""

from __future__ import annotations

import logging
from collections.abc import Iterable, Sequence
from dataclasses import dataclass, field
from typing import Any

from judge_service.forge.camps import split_camps
from judge_service.forge.disagreement import mark_disagreement
from judge_service.forge.embed import Embedder, get_embedder
from judge_service.forge.end_states import (
    Consensus,
    GoalOutcome,
    RunEvidence,
    consensus,
    goal_outcome,
)
from judge_service.forge.labels import sign_report
from judge_service.forge.merge import fold_companions, merge_goals
from judge_service.forge.signs import CLOSING, COMPLAINT, failure_signs
from judge_service.forge.similar import families
from judge_service.forge.start_state import read_effects, start_handles
from judge_service.traces.calls import ToolCall, broken_pairs, tool_calls
from judge_service.traces.conversation import (
    FailureSign,
    SetAside,
    Trace,
    content_text,
    excerpt,
    user_words,
)
from judge_service.traces.effects import ToolEffect, classify_tools, write_tools
from judge_service.traces.goals import ENTITY, Goal, goals
from judge_service.traces.identity import who
from judge_service.traces.requested import held, requested, tool_values

log = logging.getLogger(__name__)


@dataclass
class TraceTask:
    """One user goal, with its repeats across traces and the end state they agree on.

    ``goals`` are in trace order; a compound goal has several per trace (its parts)."""

    goals: list[Goal]
    outcomes: list[GoalOutcome]
    consensus: Consensus | None = None

    @property
    def first(self) -> Goal:
        return self.goals[0]

    @property
    def merged(self) -> list[Goal]:
        """The other goals: repeats in other traces, and the first trace's later parts."""
        return self.goals[1:]

    @property
    def trace_ids(self) -> list[str]:
        return list(dict.fromkeys(g.trace_id for g in self.goals))

    @property
    def repeats(self) -> int:
        """How many traces beyond the first hold this goal."""
        return len(self.trace_ids) - 1

    @property
    def failures(self) -> list[dict[str, Any]]:
        return [{"trace_id": g.trace_id, **s.as_dict()} for g in self.goals for s in g.failures]

    def parts(self, trace_id: str) -> list[tuple[Goal, GoalOutcome]]:
        return [
            (g, o) for g, o in zip(self.goals, self.outcomes, strict=True) if g.trace_id == trace_id
        ]

    def trace_outcome(self, trace_id: str) -> GoalOutcome:
        """The trace's writes and end state over all the parts it holds of this goal."""
        parts = self.parts(trace_id)
        turns = [o.last_write_turn for _, o in parts if o.last_write_turn is not None]
        state: dict[str, Any] = {}
        for _, outcome in parts:
            state.update(outcome.end_state)
        writes = [w for _, o in parts for w in o.writes]
        return GoalOutcome(writes, dict(sorted(state.items())), max(turns) if turns else None)

    @property
    def identity(self) -> str:
        """Who asks, as the goal's runs show it: the person's ``who:`` id from the agent's
        lookups, else the people the user named (e-mails, names), else ``wording`` (no
        identity found: the goal was told apart by its words alone)."""
        handles = [h for g in self.goals for h in g.context if h.startswith("who:")]
        if handles:
            return handles[0]
        named = [e for g in self.goals for e in g.entities if "@" in e or e.startswith("name:")]
        return named[0] if named else "wording"

    def line(self) -> str:
        """The rule's goal line; a compound goal's parts joined by "; also: "."""
        firsts = [g for g, _ in self.parts(self.first.trace_id)]
        return "; also: ".join(g.line() for g in firsts)

    def evidence(self) -> list[dict[str, Any]]:
        """Where the reference comes from: each repeat's trace, turns and end state's rank."""
        rank = {}
        if self.consensus is not None:
            for index, candidate in enumerate(self.consensus.candidates):
                rank.update({t: index for t in candidate.traces})
        return [
            {
                "trace_id": trace_id,
                "turns": [[g.start, g.end - 1] for g, _ in self.parts(trace_id)],
                "writes": self.trace_outcome(trace_id).writes,
                "end_state": rank.get(trace_id),
            }
            for trace_id in self.trace_ids
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
    tools: dict[str, ToolEffect] = field(default_factory=dict)
    embedder: str = ""
    labels: dict[str, Any] | None = None
    #: The traces it could not forge, and the calls and answers it dropped as unpaired.
    set_aside: list[SetAside] = field(default_factory=list)
    broken_pairs: list[dict[str, Any]] = field(default_factory=list)

    @property
    def tasks(self) -> list[TraceTask]:
        return [t for f in self.families for t in f.tasks]

    def counts(self) -> dict[str, int]:
        tasks = self.tasks
        return {
            "traces": self.traces,
            "candidates": self.candidates,
            "duplicates_merged": sum(t.repeats for t in tasks),
            "tasks": len(tasks),
            "families": len(self.families),
            "failed_traces": len(self.failed),
            "with_reference": sum(
                1 for t in tasks if t.consensus and t.consensus.reference is not None
            ),
            "needs_review": sum(1 for t in tasks if t.consensus and t.consensus.needs_review),
        }

    def add_signs(self, traces: Sequence[Trace], signs: dict[str, list[FailureSign]]) -> None:
        """More signs (a model's ``policy_violation``), each on the goal whose turns hold it;
        ``failed`` and the labels' figures are counted again."""
        goals_of: dict[str, list[Goal]] = {}
        for task in self.tasks:
            for goal in task.goals:
                goals_of.setdefault(goal.trace_id, []).append(goal)
        for trace_id, found in signs.items():
            for sign in found:
                owner = next(
                    (g for g in goals_of.get(trace_id, []) if g.start <= sign.turn < g.end),
                    None,
                )
                if owner is not None:
                    owner.failures.append(sign)
        self.recount(traces)

    def recount(self, traces: Sequence[Trace]) -> None:
        """``failed`` and the labels' figures counted from the tasks' goals: when the forge
        is done, and again after signs are added or the hindsight panel changed references
        (and so their runs' disagreement signs)."""
        failed: dict[str, list[dict[str, Any]]] = {}
        for task in self.tasks:
            for goal in task.goals:
                failed.setdefault(goal.trace_id, []).extend(s.as_dict() for s in goal.failures)
        self.failed = {k: sorted(v, key=lambda s: s["turn"]) for k, v in failed.items() if v}
        self.labels = sign_report(traces, self.failed)

    def result(self) -> dict[str, Any]:
        """What the job's result reports beside its counts."""
        return {
            "embedding_model": self.embedder,
            "tools": {name: effect.as_dict() for name, effect in self.tools.items()},
            "failure_signs": self.labels,
            "broken_pairs": self.broken_pairs,
        }


def _masked(text: str) -> str:
    """A goal's text without its ids, for naming families by what is asked."""
    return ENTITY.sub(" ", text)


def _reference_writes(task: TraceTask) -> tuple[str, ...]:
    """The write tools of the runs that reached the task's reference (all runs if none)."""
    agreed = task.consensus
    traces = agreed.candidates[0].traces if agreed and agreed.candidates else task.trace_ids
    return tuple(sorted({w["tool"] for t in traces for w in task.trace_outcome(t).writes}))


def task_families(tasks: Sequence[TraceTask]) -> list[TraceFamily]:
    """Tasks that make the same kind of change are a family, named by its write tools
    ("cancel pending order"); tasks that change nothing cluster by their requests' words.
    Largest first."""
    by_writes: dict[tuple[str, ...], list[TraceTask]] = {}
    talk: list[TraceTask] = []
    for task in tasks:
        writes = _reference_writes(task)
        if writes:
            by_writes.setdefault(writes, []).append(task)
        else:
            talk.append(task)
    found = [
        TraceFamily(
            " + ".join(w.replace("_", " ") for w in writes),
            list(dict.fromkeys(t for w in writes for t in w.split("_"))),
            members,
        )
        for writes, members in by_writes.items()
    ]
    found += [
        TraceFamily(f.name, f.terms, [talk[i] for i in f.members])
        for f in families([_masked(t.first.opening) for t in talk])
    ]
    return sorted(found, key=lambda f: -len(f.tasks))


def accepted(trace: Trace) -> bool:
    """Whether the user's last words accept the outcome: thanks or a goodbye, no complaint."""
    said = [
        words
        for m in trace.messages
        if m.get("role") == "user" and (words := user_words(content_text(m.get("content"))))
    ]
    return bool(said) and bool(CLOSING.search(said[-1])) and not COMPLAINT.search(said[-1])


def _task(
    members: list[int], found: list[tuple[Goal, GoalOutcome]], by_id: dict[str, Trace]
) -> TraceTask:
    task = TraceTask([found[m][0] for m in members], [found[m][1] for m in members])
    asked = {h for g in task.goals for h in g.requested}
    evidence = {
        t: RunEvidence(
            [s.kind for g, _ in task.parts(t) for s in g.failures],
            accepted(by_id[t]),
            len(asked & held(task.trace_outcome(t).end_state)),
        )
        for t in task.trace_ids
    }
    task.consensus = consensus(
        [
            (t, task.trace_outcome(t).end_state, any(g.failures for g, _ in task.parts(t)))
            for t in task.trace_ids
        ],
        evidence,
    )
    mark_disagreement(task)
    return task


def _trace_goals(
    trace: Trace, calls: list[ToolCall], writers: frozenset[str]
) -> list[tuple[Goal, GoalOutcome]]:
    """The trace's goals with their signs, what each asked for in the tools' terms
    (``Goal.requested``) and their outcomes; none when the user said no words."""
    found = goals(trace)
    person = who(trace, calls)
    for goal in found if person else []:
        goal.context = [person, *goal.context]
    values = tool_values(calls) if found else {}
    for goal in found:
        goal.requested = requested(trace, values, goal.start, goal.end)
    signs = failure_signs(trace, calls, writers)
    for goal in found:
        goal.failures = [s for s in signs if goal.start <= s.turn < goal.end]
    return [(g, goal_outcome(calls, writers, g.start, g.end)) for g in found]


def _unexpected(trace: Trace, exc: Exception) -> SetAside:
    """A trace that broke the forge, set aside with what broke (and logged, as a bug to
    fix: :func:`~judge_service.traces.conversation.unforgeable` should have set it aside first)."""
    log.exception("forge: trace %r (line %d) set aside", trace.id, trace.line)
    reason = f"the forge could not read it ({type(exc).__name__}: {exc})"
    return SetAside(trace.id, trace.line, excerpt(reason))


def forge_traces(
    traces: Sequence[Trace],
    *,
    embedder: Embedder | None = None,
    writes: Iterable[str] = (),
    reads: Iterable[str] = (),
) -> TraceForge:
    """Tasks (one per user goal) in families, with end states and the failed traces. A trace
    that yields no goal, or breaks a step, is set aside (``set_aside``) and the others are
    forged; each call or answer that pairs with nothing is listed (``broken_pairs``)."""
    embedder = embedder or get_embedder()
    aside: list[SetAside] = []
    calls: dict[str, list[ToolCall]] = {}
    for trace in traces:
        try:
            calls[trace.id] = tool_calls(trace, roles=("assistant", "user"))
        except Exception as exc:  # one odd trace does not fail the job: it is set aside
            aside.append(_unexpected(trace, exc))
    schemas = [tool for t in traces if t.id in calls for tool in (t.tools or [])]
    effects = classify_tools(calls.values(), schemas, writes=writes, reads=reads)
    writers = write_tools(effects)
    found: list[tuple[Goal, GoalOutcome]] = []
    for trace in traces:
        if trace.id not in calls:
            continue
        try:
            mine = _trace_goals(trace, calls[trace.id], writers)
        except Exception as exc:
            aside.append(_unexpected(trace, exc))
            continue
        if not mine:
            aside.append(SetAside(trace.id, trace.line, "the trace has no user turn with words"))
        found += mine
    dropped = {a.trace_id for a in aside}
    kept = [t for t in traces if t.id not in dropped]
    similarity = embedder.similarity([g.user_text or g.request for g, _ in found])
    changes = read_effects(calls.values(), writers)
    started = {t: start_handles(c, writers, changes) for t, c in calls.items()}
    handles = [
        [
            *g.entities,
            *g.context,
            *g.requested,
            *started[g.trace_id],
            *sorted({f"write:{w['tool']}" for w in o.writes}),
            *(f"state:{key}" for key in o.end_state if not key.startswith("write:")),
        ]
        for g, o in found
    ]
    groups = merge_goals(similarity, handles, embedder.threshold)
    trace_of = [g.trace_id for g, _ in found]
    states = [o.end_state for _, o in found]
    clean = [not g.failures for g, _ in found]
    groups = fold_companions(groups, trace_of)
    groups = split_camps(groups, trace_of, states, clean, similarity)
    by_id = {t.id: t for t in kept}
    tasks = [_task(members, found, by_id) for members in groups]
    forged = TraceForge(
        traces=len(kept),
        candidates=len(found),
        families=task_families(tasks),
        failed={},
        tools=effects,
        embedder=embedder.name,
        set_aside=aside,
        broken_pairs=[
            {"trace_id": t.id, "line": t.line, "reason": pair}
            for t in kept
            for pair in broken_pairs(t)
        ],
    )
    forged.recount(kept)
    return forged
