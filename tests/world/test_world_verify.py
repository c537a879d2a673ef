"""The end-state verdict: a trajectory replayed through the world, judged by the state it left.

Unit cases on the lending library of :mod:`tests.world.test_world_library` (another domain than
retail): each reference end state is made by the forge from a reference run, as a task's
reference is, and each trajectory is a recorded conversation replayed through the world.
Then the retail threshold: on held-out runs the verdict agrees with the corpus's success
labels at least 95% of the time (``bench/world_verify.py`` prints the figures).
"""

from __future__ import annotations

import json
from typing import Any

import pytest

from bench.world_verify import load, measure
from judge_service.forge.end_states import goal_outcome
from judge_service.traces.calls import tool_calls
from judge_service.traces.conversation import parse_traces
from judge_service.world.build import build_world
from judge_service.world.verify import Verdict, end_state_verdict, verify
from judge_service.world.world import World
from tests.world.test_world_library import conversation, corpus_jsonl

Calls = list[tuple[str, dict[str, Any]]]

PAY = ("pay_fine", {"member_id": "M-100", "amount": 2.0})
RETURN = ("return_book", {"member_id": "M-400", "isbn": "978-2"})
#: The reference run: a member pays part of a fine, another returns a book.
REFERENCE_RUN: Calls = [("get_member", {"member_id": "M-100"}), PAY, RETURN]


@pytest.fixture(scope="module")
def world() -> World:
    return build_world(parse_traces(corpus_jsonl()))


def reference_of(world: World, calls: Calls) -> dict[str, Any]:
    """The end state the forge keeps of a run that made these calls."""
    trace = parse_traces(json.dumps(conversation("reference", calls)))[0]
    writes = {name for name, tool in world.tools.items() if tool.effect == "write"}
    return goal_outcome(tool_calls(trace), writes, 0, len(trace.messages)).end_state


def judge(world: World, calls: Calls, reference: Any) -> tuple[Verdict, list[dict[str, Any]]]:
    messages = conversation("agent", calls)["messages"]
    return verify(world, world.task_state([]), messages, reference)


def test_the_reference_is_in_the_forge_form(world: World) -> None:
    reference = reference_of(world, REFERENCE_RUN)
    assert sorted(reference) == ["member_id=M-100", "member_id=M-400"]
    assert reference["member_id=M-100"]["fines"] == 2.5
    assert reference["member_id=M-400"]["loans"] == ["978-4"]


def test_the_same_end_state_through_other_calls_is_reached(world: World) -> None:
    reference = reference_of(world, REFERENCE_RUN)
    other: Calls = [
        RETURN,
        ("get_book", {"isbn": "978-2"}),
        ("pay_fine", {"member_id": "M-100", "amount": 1.5}),
        ("pay_fine", {"member_id": "M-100", "amount": 0.5}),
        ("get_member", {"member_id": "M-100"}),
    ]
    verdict, calls = judge(world, other, reference)
    assert verdict.reward == 1.0 and verdict.reached is True, verdict.diff
    assert verdict.diff == [] and verdict.undetermined == []
    # the returned book changed too, beside the member the return is about: not unrequested
    assert set(verdict.touched) == {"member_id=M-400", "isbn=978-2", "member_id=M-100"}
    assert [c["tool"] for c in calls] == [name for name, _ in other]
    assert {c["path"] for c in calls} == {"read", "transition"}
    assert all(set(c) == {"tool", "path", "error"} and c["error"] is False for c in calls)


def test_a_wrong_write_fails_and_the_diff_names_the_field(world: World) -> None:
    reference = reference_of(world, REFERENCE_RUN)
    wrong: Calls = [("pay_fine", {"member_id": "M-100", "amount": 1.0}), RETURN]
    verdict, _ = judge(world, wrong, reference)
    assert verdict.reward == 0.0 and verdict.reached is False
    assert verdict.diff == [
        {"entity": "member_id=M-100", "field": "fines", "want": 2.5, "got": 3.5, "why": "differs"}
    ]


def test_an_even_candidate_beside_the_reference_is_reached_and_named(world: World) -> None:
    reference = reference_of(world, REFERENCE_RUN)
    other: Calls = [("pay_fine", {"member_id": "M-100", "amount": 1.0}), RETURN]
    even = {"end_state": reference_of(world, other), "traces": ["run-b"]}
    messages = conversation("agent", other)["messages"]
    verdict, _ = verify(world, world.task_state([]), messages, reference, [even])
    assert verdict.reward == 1.0 and verdict.matched == ["run-b"] and verdict.diff == []
    # the reference itself still matches nothing else
    verdict, _ = verify(world, world.task_state([]), conversation("a", REFERENCE_RUN)["messages"],
                        reference, [even])  # fmt: skip
    assert verdict.reward == 1.0 and verdict.matched == []
    # neither: the diff is the reference's
    third: Calls = [("pay_fine", {"member_id": "M-100", "amount": 0.5}), RETURN]
    verdict, _ = verify(world, world.task_state([]), conversation("c", third)["messages"],
                        reference, [even])  # fmt: skip
    assert verdict.reward == 0.0 and verdict.matched == []
    assert [d["want"] for d in verdict.diff] == [2.5]


def test_a_missing_write_fails(world: World) -> None:
    reference = reference_of(world, REFERENCE_RUN)
    verdict, _ = judge(world, [PAY, ("get_member", {"member_id": "M-400"})], reference)
    assert verdict.reward == 0.0
    assert verdict.diff == [
        {"entity": "member_id=M-400", "field": "loans", "want": ["978-4"],
         "got": ["978-2", "978-4"], "why": "differs"}
    ]  # fmt: skip
    assert verdict.touched == ["member_id=M-100"]


def test_an_unrequested_write_fails_and_is_named(world: World) -> None:
    reference = reference_of(world, REFERENCE_RUN)
    extra = ("place_hold", {"isbn": "978-3", "member_id": "M-200"})
    verdict, _ = judge(world, [PAY, RETURN, extra], reference)
    assert verdict.reward == 0.0
    assert verdict.diff == [
        {"entity": "isbn=978-3", "field": "holds", "want": [], "got": ["M-200"],
         "why": "unrequested"},
    ]  # fmt: skip
    assert "isbn=978-3" in verdict.touched


def _blind(messages: list[dict[str, Any]], tool: str) -> list[dict[str, Any]]:
    """The messages with every answer of ``tool`` replaced by a bare "OK"."""
    ids = {
        c["id"]
        for m in messages
        for c in m.get("tool_calls") or []
        if c["function"]["name"] == tool
    }
    return [{**m, "content": "OK"} if m.get("tool_call_id") in ids else m for m in messages]


def test_a_write_the_world_cannot_answer_leaves_the_verdict_undetermined(world: World) -> None:
    reference = reference_of(world, REFERENCE_RUN)
    unknown = ("rate_book", {"isbn": "978-3", "stars": 2})  # no rule fits an average
    start = world.task_state([])
    messages = _blind(conversation("agent", [PAY, RETURN, unknown])["messages"], "rate_book")
    verdict, calls = verify(world, start, messages, reference)
    assert calls[-1]["path"] == "model_needed"  # and its answer shows nothing to go by
    assert verdict.reward is None and verdict.reached is None
    assert verdict.undetermined == ["rate_book"]
    # an unrequested change fails whatever the unknown write did
    extra = ("place_hold", {"isbn": "978-3", "member_id": "M-200"})
    messages = _blind(conversation("agent", [PAY, RETURN, unknown, extra])["messages"], "rate_book")
    verdict, _ = verify(world, start, messages, reference)
    assert verdict.reward == 0.0 and verdict.undetermined == ["rate_book"]


def test_an_unlearned_write_takes_the_state_its_recorded_answer_shows(world: World) -> None:
    """The recorded answer shows the rated book: its state is the evidence, so the verdict
    is decided (the rating was not asked for), and the call's path says where it came from."""
    reference = reference_of(world, REFERENCE_RUN)
    unknown = ("rate_book", {"isbn": "978-3", "stars": 2})
    verdict, calls = judge(world, [PAY, RETURN, unknown], reference)
    assert calls[-1]["path"] == "recorded"
    assert verdict.reward == 0.0 and verdict.undetermined == []
    assert {(d["entity"], d["why"]) for d in verdict.diff} == {("isbn=978-3", "unrequested")}
    rated = reference_of(world, [*REFERENCE_RUN, unknown])  # a reference that asks for it
    verdict, _ = judge(world, [PAY, RETURN, unknown], rated)
    assert verdict.reward == 1.0 and verdict.diff == []


def test_an_unknown_write_leaves_open_only_the_entities_it_names(world: World) -> None:
    start = world.task_state([])
    want = {**start["member_id=M-100"], "fines": 2.5}
    unknown = {"tool": "pay_fine", "path": "model_needed", "error": False,
               "arguments": {"member_id": "M-300"}, "about": ["member_id=M-300"]}  # fmt: skip
    # M-100 differs and the unknown write names M-300 only: it fails whatever that did
    verdict = end_state_verdict(world, start, start, [], {"member_id=M-100": want}, [unknown])
    assert verdict.reward == 0.0 and verdict.undetermined == ["pay_fine"]
    # the unknown write names M-100 itself: it may have made the change
    named = {**unknown, "about": ["member_id=M-100"]}
    verdict = end_state_verdict(world, start, start, [], {"member_id=M-100": want}, [named])
    assert verdict.reward is None and verdict.diff[0]["field"] == "fines"


def test_an_object_the_forge_keys_by_another_id_is_still_compared(world: World) -> None:
    # the book has no id-named field: the forge keys it by the call's member id
    hold = ("place_hold", {"isbn": "978-4", "member_id": "M-100"})
    reference = reference_of(world, [("get_book", {"isbn": "978-4"}), hold])
    assert list(reference) == ["member_id=M-100"]
    assert reference["member_id=M-100"]["holds"] == ["M-100"]
    verdict, _ = judge(world, [("get_member", {"member_id": "M-100"}), hold], reference)
    assert verdict.reward == 1.0, verdict.diff
    other = ("place_hold", {"isbn": "978-1", "member_id": "M-100"})
    verdict, _ = judge(world, [other], reference)
    assert verdict.reward == 0.0
    assert {"entity": "member_id=M-100", "field": "isbn", "want": "978-4", "got": "978-1",
            "why": "differs"} in verdict.diff  # fmt: skip


def test_a_blind_write_is_compared_by_its_arguments(world: World) -> None:
    borrow = ("borrow_book", {"member_id": "M-300", "isbn": "978-1"})  # answers "OK"
    reference = reference_of(world, [borrow])
    assert list(reference) == ["write:borrow_book"]
    assert judge(world, [borrow], reference)[0].reward == 1.0
    wrong = ("borrow_book", {"member_id": "M-300", "isbn": "978-3"})
    verdict, _ = judge(world, [wrong], reference)
    assert verdict.reward == 0.0
    assert [(d["entity"], d["why"]) for d in verdict.diff] == [("write:borrow_book", "differs")]
    assert judge(world, [], reference)[0].diff[0]["why"] == "missing"


def test_a_created_entity_matches_without_its_fresh_id(world: World) -> None:
    start = world.task_state([])
    made = {"member_id": "M-999", "name": "Ada", "loans": [], "fines": 0.0}
    final = {**start, "member_id=M-999": made}
    reference = {"new:add_member:1": {"name": "Ada", "loans": [], "fines": 0.0}}
    verdict = end_state_verdict(world, start, final, ["member_id=M-999"], reference)
    assert verdict.reward == 1.0, verdict.diff
    other = {**start, "member_id=M-999": {**made, "name": "Bob"}}
    verdict = end_state_verdict(world, start, other, ["member_id=M-999"], reference)
    assert verdict.diff == [
        {"entity": "new:add_member:1", "field": "name", "want": "Ada", "got": "Bob",
         "why": "differs"}
    ]  # fmt: skip
    # the world creates no entities itself: a reference's new entity is then missing
    verdict, _ = judge(world, [PAY], reference)
    assert verdict.diff[0]["why"] == "missing" and verdict.reward == 0.0


def test_an_entity_only_the_trajectory_shows_joins_its_start() -> None:
    # a world that never saw member M-400: the trajectory's own read shows it, so the
    # write on it is answered from that state and caught as unrequested
    traces = [t for t in parse_traces(corpus_jsonl()) if t.id not in ("lib-6", "lib-9")]
    small = build_world(traces)
    assert "member_id=M-400" not in small.task_state([])
    reference = reference_of(small, [PAY])
    extra = [
        ("get_member", {"member_id": "M-400"}),
        ("pay_fine", {"member_id": "M-400", "amount": 1.0}),
    ]
    verdict, calls = judge(small, [PAY, *extra], reference)
    assert calls[-1] == {"tool": "pay_fine", "path": "transition", "error": False}
    assert verdict.reward == 0.0
    assert verdict.diff == [
        {"entity": "member_id=M-400", "field": "fines", "want": 1.0, "got": 0.0,
         "why": "unrequested"}
    ]  # fmt: skip


def test_the_order_of_a_list_of_ids_does_not_count(world: World) -> None:
    start = world.task_state([])
    member = start["member_id=M-400"]
    reference = {"member_id=M-400": {**member, "loans": ["978-4", "978-2"]}}
    verdict = end_state_verdict(world, start, start, [], reference)
    assert verdict.reward == 1.0
    wrong = {"member_id=M-400": {**member, "loans": ["978-4", "978-4"]}}
    assert end_state_verdict(world, start, start, [], wrong).diff[0]["field"] == "loans"


def test_without_a_reference_there_is_no_verdict(world: World) -> None:
    verdict, calls = judge(world, [PAY], None)
    assert verdict.reward is None and verdict.reached is None and len(calls) == 1
    assert judge(world, [], {})[0].reward == 1.0  # a task that changes nothing
    assert judge(world, [PAY], {})[0].reward == 0.0


def test_on_held_out_retail_runs_the_verdict_agrees_with_the_labels() -> None:
    result = measure(*load())
    figures = result["figures"]
    print(json.dumps(figures))
    assert figures["held_out_runs"] >= 75
    assert figures["agreement"] >= 0.95
    assert figures["agreement"] >= figures["baseline_agreement"]
    assert figures["successes_through_other_calls"] > 0
    other = [r for r in result["rows"] if r["success"] and r["other_calls"]]
    assert sum(r["reached"] is True for r in other) >= len(other) - 1
    kinds = {r["mistake"] for r in result["rows"] if r["reached"] is False}
    assert {"unjustified_write", "false_claim", "wrong_item"} <= kinds


def test_a_recorded_write_that_failed_changes_nothing_whatever_the_world_would_do(
    world: World,
) -> None:
    """The backend refused the payment for a reason the world never saw (a declined card):
    the recording says so, and the state stays as it was."""
    reference = reference_of(world, REFERENCE_RUN)
    messages = conversation("agent", [PAY, RETURN])["messages"]
    paid = next(
        c["id"] for m in messages for c in m.get("tool_calls") or []
        if c["function"]["name"] == "pay_fine"
    )  # fmt: skip
    declined = [
        {**m, "content": "Error: the card was declined"} if m.get("tool_call_id") == paid else m
        for m in messages
    ]
    verdict, calls = verify(world, world.task_state([]), declined, reference)
    assert calls[0] == {"tool": "pay_fine", "path": "recorded", "error": True}
    assert verdict.reward == 0.0
    assert [(d["entity"], d["field"], d["got"]) for d in verdict.diff] == [
        ("member_id=M-100", "fines", 4.5)
    ]
