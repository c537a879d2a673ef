"""Runs that did not reach their task's reference are marked: against a consensus always,
against a proposed reference only where its evidence outweighs the run's own end state."""

from __future__ import annotations

from typing import Any

from judge_service.forge.disagreement import CONSENSUS, PROPOSED, mark_disagreement
from judge_service.forge.end_states import GoalOutcome, RunEvidence, consensus
from judge_service.forge.trace_tasks import TraceTask
from judge_service.traces.conversation import FailureSign
from judge_service.traces.goals import Goal

CANCELLED = {"order_id=#W1": {"status": "cancelled"}}
RETURNED = {"order_id=#W1": {"status": "returned"}}


def _goal(trace_id: str) -> Goal:
    return Goal(trace_id, 1, 6, "cancel #W1", "cancel #W1", [], ["#W1"], "cancel #W1", [], None, [])


def _task(runs: dict[str, dict[str, Any]], evidence: dict[str, RunEvidence]) -> TraceTask:
    goals = [_goal(t) for t in runs]
    outcomes = [GoalOutcome([], state, 4 if state else None) for state in runs.values()]
    task = TraceTask(goals, outcomes)
    task.consensus = consensus(
        [(t, state, bool(evidence[t].signs)) for t, state in runs.items()], evidence
    )
    mark_disagreement(task)
    return task


def _kinds(task: TraceTask) -> dict[str, list[str]]:
    return {g.trace_id: [s.kind for s in g.failures] for g in task.goals}


def test_a_run_against_a_consensus_is_marked():
    clean = RunEvidence([], True)
    task = _task(
        {"a": CANCELLED, "b": CANCELLED, "c": RETURNED}, {"a": clean, "b": clean, "c": clean}
    )
    assert task.consensus is not None and task.consensus.source == "consensus"
    assert _kinds(task) == {"a": [], "b": [], "c": [CONSENSUS]}
    (sign,) = task.goals[2].failures
    assert sign.turn == 4 and "returned" in sign.evidence


def test_a_run_outweighed_by_a_proposed_reference_is_marked_and_an_even_one_is_not():
    # the user accepted the cancellation; the other run wrote nothing and had no acceptance
    task = _task(
        {"good": CANCELLED, "quiet": {}},
        {"good": RunEvidence([], True), "quiet": RunEvidence([], False)},
    )
    assert task.consensus is not None and task.consensus.source == "proposed"
    assert task.consensus.reference == CANCELLED
    assert _kinds(task) == {"good": [], "quiet": [PROPOSED]}
    # the same evidence on both sides: the tie is broken by order, so nobody is marked
    even = _task(
        {"one": CANCELLED, "two": RETURNED},
        {"one": RunEvidence([], True), "two": RunEvidence([], True)},
    )
    assert even.consensus is not None and even.consensus.source == "proposed"
    assert _kinds(even) == {"one": [], "two": []}


def test_marking_again_follows_a_changed_reference_and_keeps_other_signs():
    task = _task(
        {"good": CANCELLED, "quiet": {}},
        {"good": RunEvidence([], True), "quiet": RunEvidence([], False)},
    )
    task.goals[1].failures.append(FailureSign("user_complaint", 3, "it still isn't cancelled"))
    agreed = task.consensus
    assert agreed is not None
    # a reviewer's panel preferred "nothing changed": it now outweighs the cancellation
    agreed.candidates.sort(key=lambda c: c.end_state != {})
    agreed.candidates[0].score = 10.0
    agreed.reference = {}
    mark_disagreement(task)
    assert _kinds(task) == {"good": [PROPOSED], "quiet": ["user_complaint"]}


def test_the_run_that_did_all_the_other_did_and_more_outweighs_it_in_either_order():
    """Two polite runs: one cancelled #W1 and returned #W2, the other stopped after #W1. The
    fuller end state is the reference whichever run came first, and the one that stopped
    short is marked; a fuller run with a failure sign still weighs less than a clean one."""
    both = {**CANCELLED, "order_id=#W2": {"status": "returned"}}
    polite = RunEvidence([], True)
    for runs in ({"short": CANCELLED, "full": both}, {"full": both, "short": CANCELLED}):
        task = _task(runs, {"short": polite, "full": polite})
        assert task.consensus is not None and task.consensus.reference == both
        assert _kinds(task)["short"] == [PROPOSED] and _kinds(task)["full"] == []
        fuller = task.consensus.candidates[0]
        assert any("and more" in reason for reason in fuller.reasons)
    signed = _task(
        {"short": CANCELLED, "full": both},
        {"short": polite, "full": RunEvidence(["tool_error"], True)},
    )
    assert signed.consensus is not None and signed.consensus.reference == CANCELLED
