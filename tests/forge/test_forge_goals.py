"""The pure trace forge on real-shaped conversations: goals, entities, read/write classes,
end states, consensus, failure signs, and merging by meaning and entity."""

from __future__ import annotations

import json
import re
from pathlib import Path
from typing import Any

import numpy as np
import pytest

from judge_service.forge.embed import TfidfEmbedder
from judge_service.forge.end_states import consensus, goal_outcome
from judge_service.forge.merge import fold_companions, merge_goals
from judge_service.forge.signs import failure_signs
from judge_service.forge.trace_tasks import forge_traces
from judge_service.traces.calls import tool_calls
from judge_service.traces.conversation import Trace
from judge_service.traces.effects import classify_tools
from judge_service.traces.goals import entities_in, goals

SYSTEM = {"role": "system", "content": "You are the support agent of a ferry company."}


def user(text: str) -> dict[str, Any]:
    return {"role": "user", "content": text}


def bot(text: str) -> dict[str, Any]:
    return {"role": "assistant", "content": text}


class Calls:
    """Assistant tool calls and their answers, numbered so that ids never repeat."""

    def __init__(self) -> None:
        self.n = 0

    def __call__(self, name: str, answer: Any, **arguments: Any) -> list[dict[str, Any]]:
        self.n += 1
        call_id = f"call_{self.n}"
        content = answer if isinstance(answer, str) else json.dumps(answer)
        return [
            {
                "role": "assistant",
                "content": None,
                "tool_calls": [
                    {
                        "id": call_id,
                        "type": "function",
                        "function": {"name": name, "arguments": json.dumps(arguments)},
                    }
                ],
            },
            {"role": "tool", "tool_call_id": call_id, "content": content},
        ]


def make(trace_id: str, *parts: Any, metadata: dict | None = None) -> Trace:
    messages: list[dict[str, Any]] = [SYSTEM]
    for part in parts:
        messages.extend(part if isinstance(part, list) else [part])
    return Trace(trace_id, 1, messages, None, metadata or {})


BOOKING = {"booking_ref": "FX-20931", "passenger": "Ada Byron", "sailing": "09:10", "seats": 2}
MOVED = {**BOOKING, "sailing": "17:40"}


def test_answers_of_any_length_continue_the_goal_and_also_after_completion_starts_one():
    call = Calls()
    trace = make(
        "t",
        user("Hi, I need to move my ferry booking to a later sailing today."),
        bot("Sure. What is your booking reference and the name on it?"),
        user(
            "Of course, the booking reference is FX-20931 and it is under my name, Ada Byron. "
            "We are two passengers travelling with a small car and a dog, if that matters."
        ),
        call("get_booking", BOOKING, booking_ref="FX-20931"),
        bot("I can move it to 17:40. Shall I go ahead?"),
        user("Also yes, please go ahead."),
        call("change_sailing", MOVED, booking_ref="FX-20931", sailing="17:40"),
        bot("Done: you now sail at 17:40. Is there anything else I can help you with?"),
        user("Great, thanks! I also need to cancel my return trip FX-20977."),
        bot("Cancelled."),
        user("Thank you, that's all."),
    )
    found = goals(trace)
    assert [g.start for g in found] == [1, 11]
    first = found[0]
    assert first.opening.startswith("Hi, I need to move my ferry booking")
    assert "FX-20931" in first.request and "Ada Byron" in first.request
    assert "FX-20931" in first.entities and "name:ada byron" in first.entities
    # the later goal carries the person, not the earlier record
    assert found[1].context == ["name:ada byron"]
    assert found[1].entities == ["FX-20977"]


def test_a_greeting_alone_is_no_request():
    trace = make("t", user("Hello!"), bot("Hi, how can I help?"), user("I lost my ticket QX-1234."))
    (goal,) = goals(trace)
    assert goal.opening == "Hello! I lost my ticket QX-1234." and goal.facts == []


def test_entities_are_ids_emails_and_given_names_not_small_numbers():
    text = "I'm Lin Zhou, lin.zhou9@example.org, order #A77120 for 2 items, zip 94110."
    assert entities_in(text) == ["name:lin zhou", "lin.zhou9@example.org", "#A77120", "94110"]


def test_writes_are_learned_from_changed_state_not_from_names():
    call = Calls()
    renamed = {"booking_ref": "FX-1", "sailing": "17:40"}
    trace = make(
        "t",
        user("move FX-1"),
        call("fetch_thing", {"booking_ref": "FX-1", "sailing": "09:10"}, booking_ref="FX-1"),
        # a write whose answer is no state: the next read shows the change
        call("tweak", "ok", booking_ref="FX-1", sailing="17:40"),
        call("fetch_thing", renamed, booking_ref="FX-1"),
        # named like a write, but it never changes what it touches
        call("update_view", renamed, booking_ref="FX-1"),
        call("fetch_thing", renamed, booking_ref="FX-1"),
    )
    effects = classify_tools([tool_calls(trace)])
    assert effects["tweak"].effect == "write" and effects["tweak"].source == "evidence"
    assert effects["fetch_thing"].effect == "read" and effects["fetch_thing"].source == "evidence"
    assert effects["update_view"].effect == "read", "a name is a prior, not the rule"


def test_an_answer_logged_as_a_python_literal_is_still_a_state():
    call = Calls()
    trace = make(
        "t",
        user("x"),
        call("get_booking", "{'booking_ref': 'FX-1', 'ok': True}", booking_ref="FX-1"),
    )
    (read,) = tool_calls(trace)
    assert read.payload == {"booking_ref": "FX-1", "ok": True} and not read.error


def test_schema_annotations_and_overrides_decide_before_evidence():
    schemas = [
        {"type": "function", "function": {"name": "a", "x-effect": "write"}},
        {"type": "function", "function": {"name": "b"}, "annotations": {"readOnlyHint": True}},
        {"type": "function", "function": {"name": "get_c"}},
        {"type": "function", "function": {"name": "cancel_d"}},
        {"type": "function", "function": {"name": "ping"}},
    ]
    effects = classify_tools([], schemas, writes=["get_c"])
    assert {n: (e.effect, e.source) for n, e in effects.items()} == {
        "a": ("write", "schema"),
        "b": ("read", "schema"),
        "get_c": ("write", "override"),
        "cancel_d": ("write", "name"),
        "ping": ("read", "default"),
    }


def _moved(trace_id: str, order: str, *, write: bool = True) -> Trace:
    call = Calls()
    reads = [call("get_booking", BOOKING, booking_ref="FX-20931")]
    change = call("change_sailing", MOVED, booking_ref="FX-20931", sailing="17:40")
    reread = call("get_booking", MOVED, booking_ref="FX-20931")
    steps = [*reads, change, reread] if order == "write-first" else [*reads, *reads, change]
    return make(
        trace_id,
        user("Please move booking FX-20931 to the 17:40 sailing."),
        *(steps if write else reads),
        bot("Done, you sail at 17:40."),
        user("Thanks, bye."),
    )


def test_end_states_compare_states_not_calls_and_a_claim_without_a_write_is_empty():
    traces = [_moved("a", "write-first"), _moved("b", "reads-first"), _moved("c", "x", write=False)]
    effects = classify_tools([tool_calls(t) for t in traces])
    writes = {n for n, e in effects.items() if e.effect == "write"}
    assert writes == {"change_sailing"}
    states = [goal_outcome(tool_calls(t), writes, 0, len(t.messages)).end_state for t in traces]
    assert states[0] == states[1] == {"booking_ref=FX-20931": MOVED}
    assert states[2] == {}


def test_two_runs_that_create_the_same_thing_under_other_fresh_ids_agree():
    states = []
    for fresh in ("R-7781", "R-1024"):
        call = Calls()
        booked = {"reservation_id": fresh, "flight": "HAT002", "seats": 2, "status": "booked"}
        trace = make(
            fresh,
            user("Book two seats on HAT002 for me, please."),
            call("search", [{"flight_number": "HAT002", "free": 9}], origin="JFK"),
            call("make_booking", booked, flight_number="HAT002", seats=2),
            call("get_reservation", booked, reservation_id=fresh),
        )
        writes = {"make_booking"}
        states.append(goal_outcome(tool_calls(trace), writes, 0, len(trace.messages)).end_state)
    assert (
        states[0]
        == states[1]
        == {"new:make_booking:1": {"flight": "HAT002", "seats": 2, "status": "booked"}}
    )


def test_consensus_needs_two_agreeing_repeats_and_more_than_any_other():
    a, b = {"x=1": {"v": 1}}, {"x=1": {"v": 2}}
    agreed = consensus([("r1", a, False), ("r2", a, False), ("r3", b, True)])
    assert agreed.reference == a and agreed.source == "consensus" and agreed.needs_review
    assert [c.count for c in agreed.candidates] == [2, 1]
    tie = consensus([("r1", a, False), ("r2", b, True)])
    assert tie.source == "proposed" and tie.needs_review and tie.reference == a
    # the runs' end states and "nothing changed", best evidence first
    assert [c.end_state for c in tie.candidates] == [a, {}, b]
    alone = consensus([("r1", a, False)])
    assert alone.reference == a and alone.source == "single_trace" and not alone.needs_review
    failed_alone = consensus([("r1", a, True)])
    assert failed_alone.source == "proposed" and failed_alone.reference == {}


def test_a_run_with_a_failure_sign_has_no_vote_in_a_consensus():
    """Two runs reached A, one of them with a sign (it claimed a change it never made); B and
    C were each reached by a clean run: no end state has two sound votes, so the reference
    is proposed from the evidence, and the clean runs are not outvoted."""
    a, b, c = ({"x=1": {"v": v}} for v in (1, 2, 3))
    outcomes = [("r1", a, True), ("r2", a, False), ("r3", b, False), ("r4", c, False)]
    agreed = consensus(outcomes)
    assert agreed.source == "proposed" and agreed.needs_review
    # with a third sound run for A, A is the consensus however many signed runs join B
    more = [*outcomes, ("r5", a, False), ("r6", b, True), ("r7", b, True)]
    agreed = consensus(more)
    assert agreed.source == "consensus" and agreed.reference == a
    assert agreed.candidates[0].end_state == a  # ranked by sound votes first


@pytest.mark.parametrize(
    ("ending", "abandoned"),
    [
        ([user("Thank you, that's all I needed. ###STOP###")], False),
        ([user("ok bye")], False),
        (Calls()("transfer_to_human_agents", "Transfer successful", summary="x"), False),
        ([bot("Your sailing is now 17:40.")], False),
        ([user("Hello? Are you still there? I need the booking moved.")], True),
        (Calls()("get_booking", BOOKING, booking_ref="FX-20931"), True),
    ],
)
def test_a_conversation_ending_in_thanks_goodbye_or_transfer_is_not_abandoned(ending, abandoned):
    trace = make("t", user("Move FX-20931 please."), bot("One moment."), ending)
    kinds = [s.kind for s in failure_signs(trace, tool_calls(trace))]
    assert ("abandoned" in kinds) is abandoned


def test_a_recovered_tool_error_is_no_sign_and_an_unrecovered_one_is():
    call = Calls()
    recovered = make(
        "t",
        user("my email is ada@exmple.com"),
        call("find_user", "Error: user not found", email="ada@exmple.com"),
        call("find_user", "ada_1", email="ada@example.com"),
        bot("Found you."),
    )
    assert failure_signs(recovered, tool_calls(recovered)) == []
    stuck = make(
        "t",
        user("cancel FX-1"),
        call("cancel_booking", "Error: booking cannot be cancelled", booking_ref="FX-1"),
        bot("Sorry, I could not."),
    )
    assert [s.kind for s in failure_signs(stuck, tool_calls(stuck))] == ["tool_error"]


def test_merging_keeps_goals_on_other_records_or_people_apart():
    similarity = np.ones((4, 4))
    entities = [["#W100", "a@x.io"], ["a@x.io"], ["#W200", "a@x.io"], ["b@x.io"]]
    assert merge_goals(similarity, entities, 0.5) == [[0, 1], [2], [3]]
    # the same words about another write are another goal
    assert merge_goals(similarity, [["write:cancel"], ["write:refund"]], 0.5) == [[0], [1]]


def test_goals_that_wrote_the_same_record_merge_at_lower_similarity():
    similarity = np.array([[1.0, 0.55, 0.55], [0.55, 1.0, 0.55], [0.55, 0.55, 1.0]])
    entities = [
        ["a@x.io", "write:refund", "state:order=1"],
        ["a@x.io", "write:refund", "state:order=1"],
        ["a@x.io", "write:refund"],  # wrote nothing it showed: no shared record
    ]
    assert merge_goals(similarity, entities, 0.7) == [[0, 1], [2]]


def test_other_write_tools_on_one_record_need_alike_words_to_merge():
    """The record lowers the bar only for runs that made the same kind of change to it:
    "change the boots' size" and "cancel my pending orders" both touch order 1, but as
    little alike in words they stay two goals; as alike as a repeat, they are one."""
    entities = [
        ["a@x.io", "write:modify", "state:order=1"],
        ["a@x.io", "write:cancel", "state:order=1", "state:order=2"],
    ]
    unlike = np.array([[1.0, 0.55], [0.55, 1.0]])
    assert merge_goals(unlike, entities, 0.7) == [[0], [1]]
    alike = np.array([[1.0, 0.75], [0.75, 1.0]])
    assert merge_goals(alike, entities, 0.7) == [[0, 1]]
    both = [entities[0], ["a@x.io", "write:modify", "write:cancel", "state:order=1"]]
    assert merge_goals(unlike, both, 0.7) == [[0, 1]]  # a tool in common: the bar is lower


def test_another_write_on_the_same_record_is_what_the_agent_did_not_another_goal():
    similarity = np.ones((4, 4))
    entities = [
        ["a@x.io", "write:modify", "state:order=1"],
        ["a@x.io", "write:cancel", "state:order=1"],  # the wrong change to the right order
        ["a@x.io", "write:cancel", "state:order=2"],  # another change to another order
        ["b@x.io", "write:modify", "state:order=1"],  # the same record, another person
    ]
    assert merge_goals(similarity, entities, 0.5) == [[0, 1], [2], [3]]


def test_parts_that_always_come_together_fold_and_a_part_seen_alone_does_not():
    groups = [[0, 2, 4], [1, 3], [5]]
    trace_of = ["r1", "r1", "r2", "r2", "r3", "r3"]
    # parts 0/1 share r1 and r2 (2 of 3 traces): one compound goal; [5] shares only r3
    assert fold_companions(groups, trace_of) == [[0, 1, 2, 3, 4], [5]]


def test_the_tfidf_fallback_says_so_and_still_merges_repeats():
    call = Calls()
    runs = [
        make(
            f"r{i}",
            user(text),
            call("get_booking", BOOKING, booking_ref="FX-20931"),
            call("change_sailing", MOVED, booking_ref="FX-20931", sailing="17:40"),
            bot("Done."),
            user("Thanks!"),
            metadata={"outcome": "success"},
        )
        for i, text in enumerate(
            [
                "Please move my ferry booking FX-20931 to the 17:40 sailing.",
                "please move my ferry booking FX-20931 to the 17:40 sailing, thanks",
            ]
        )
    ]
    forged = forge_traces(runs, embedder=TfidfEmbedder())
    assert forged.embedder.startswith("tfidf") and len(forged.tasks) == 1
    task = forged.tasks[0]
    assert task.consensus is not None and task.consensus.reference == {
        "booking_ref=FX-20931": MOVED
    }
    assert forged.labels is not None and forged.labels["labelled"] == 2


def _display_to_messages(display: str) -> list[dict[str, Any]]:
    """τ-bench's display format (``user:``/``assistant:``/``tool:`` lines; ``assistant: None``
    is a tool call whose name the format dropped) as OpenAI messages."""
    messages: list[dict[str, Any]] = [SYSTEM]
    for part in re.split(r"\n(?=(?:user|assistant|tool): )", display):
        role, _, text = part.partition(": ")
        if role == "assistant" and text.strip() == "None":
            call = {"id": f"c{len(messages)}", "function": {"name": "call", "arguments": "{}"}}
            messages.append({"role": "assistant", "content": None, "tool_calls": [call]})
        elif role == "tool":
            messages.append(
                {"role": "tool", "tool_call_id": f"c{len(messages) - 1}", "content": text}
            )
        else:
            messages.append({"role": role, "content": text})
    return messages


def test_on_the_69_real_conversations_no_ending_is_abandoned_and_goals_stay_few():
    path = Path(__file__).resolve().parents[2] / "data" / "retail" / "conversations_gpt4o.jsonl"
    real = [json.loads(line)["messages_display"] for line in path.read_text().splitlines()]
    traces = [Trace(str(i), i, _display_to_messages(d), None, {}) for i, d in enumerate(real)]
    assert len(traces) == 69
    abandoned = [
        t.id for t in traces if any(s.kind == "abandoned" for s in failure_signs(t, tool_calls(t)))
    ]
    assert abandoned == [], "each ends with thanks, ###STOP### or a completed transfer"
    counts = [len(goals(t)) for t in traces]
    # about one conversation in six turns to a second request ("Great, thanks! I also ...")
    assert sum(counts) / len(counts) < 1.3 and max(counts) <= 3 and counts.count(1) >= 50
