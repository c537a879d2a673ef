"""Shapes seen in real traces of other domains: a read that shows what a write changed, and a
user with tools of their own."""

from __future__ import annotations

import json
from typing import Any

from judge_service.episodes.script import even_candidates, script_for
from judge_service.forge.embed import TfidfEmbedder
from judge_service.forge.end_states import RunEvidence, consensus, goal_outcome
from judge_service.forge.start_state import _digest, read_effects, start_handles
from judge_service.forge.trace_tasks import forge_traces
from judge_service.traces.calls import tool_calls
from judge_service.traces.conversation import Trace
from judge_service.traces.effects import classify_tools, write_tools
from judge_service.traces.identity import who
from judge_service.traces.requested import held


def _call(role: str, call_id: str, name: str, args: dict[str, Any]) -> dict[str, Any]:
    function = {"name": name, "arguments": json.dumps(args)}
    return {"role": role, "content": None, "tool_calls": [{"id": call_id, "function": function}]}


def _answer(call_id: str, payload: Any) -> dict[str, Any]:
    text = payload if isinstance(payload, str) else json.dumps(payload)
    return {"role": "tool", "tool_call_id": call_id, "content": text}


def _refund_run(trace_id: str, balance_after: int) -> Trace:
    """The customer is read, an order is refunded to their balance (the write names the
    order only), and the customer is read again, showing the new balance."""
    messages = [
        {"role": "user", "content": "Please refund order A-1001 to my balance."},
        _call("assistant", "1", "profile", {"customer_id": "cu_77"}),
        _answer("1", {"customer_id": "cu_77", "balance": 10}),
        _call("assistant", "2", "order", {"order_ref": "A-1001"}),
        _answer("2", {"order_ref": "A-1001", "state": "delivered"}),
        {"role": "user", "content": "yes, go ahead"},
        _call("assistant", "3", "refund", {"order_ref": "A-1001"}),
        _answer("3", {"order_ref": "A-1001", "state": "refunded"}),
        _call("assistant", "4", "profile", {"customer_id": "cu_77"}),
        _answer("4", {"customer_id": "cu_77", "balance": balance_after}),
        {"role": "assistant", "content": "Done."},
    ]
    return Trace(id=trace_id, line=1, messages=messages, tools=None, metadata={})


def test_a_read_that_shows_what_an_unnamed_write_changed_stays_a_read():
    runs = [_refund_run("r1", 60), _refund_run("r2", 70)]
    effects = classify_tools([tool_calls(t) for t in runs])
    assert effects["refund"].effect == "write"
    assert effects["profile"].effect == "read", effects["profile"].as_dict()
    assert effects["order"].effect == "read"


def _exchange_run(trace_id: str, shown: Any) -> Trace:
    """A booking is read, then a catalogue entry (another record), then a tool whose name
    says nothing changes the booking and answers it; ``shown`` is what a second catalogue
    read then shows of the booking's price, in another type."""
    messages = [
        {"role": "user", "content": "Please swap the cabin on booking BK-77."},
        _call("assistant", "1", "op_1", {"booking_ref": "BK-77"}),
        _answer("1", {"booking_ref": "BK-77", "cabin": "economy", "price": 120}),
        _call("assistant", "2", "op_2", {"product_ref": "P-5"}),
        _answer("2", {"product_ref": "P-5", "cabins": ["economy", "business"]}),
        _call("assistant", "3", "op_3", {"booking_ref": "BK-77", "cabin": "business"}),
        _answer("3", {"booking_ref": "BK-77", "cabin": "business", "price": 120}),
        _call("assistant", "4", "op_2", {"product_ref": "P-5"}),
        _answer("4", {"product_ref": "P-5", "cabins": ["economy", "business"]}),
        _call("assistant", "5", "op_4", {"booking_ref": "BK-77"}),
        _answer("5", {"booking_ref": "BK-77", "price": shown}),
    ]
    return Trace(id=trace_id, line=1, messages=messages, tools=None, metadata={})


def test_a_write_whose_answer_shows_its_change_after_other_reads_is_a_write():
    """The change the write's own answer shows, with only reads of other records since the
    record was last seen, is the write's, whatever its name; a later read that shows one of
    the record's fields again, as text, changed nothing."""
    effects = classify_tools(
        [tool_calls(_exchange_run("e1", "120")), tool_calls(_exchange_run("e2", 120.0))]
    )
    assert effects["op_3"].effect == "write", effects["op_3"].as_dict()
    assert effects["op_3"].source == "evidence"
    assert effects["op_4"].effect == "read", effects["op_4"].as_dict()
    assert effects["op_1"].effect == effects["op_2"].effect == "read"


def test_a_call_between_two_text_answers_that_differ_changed_something():
    """Answers in text show no record: a status read twice, answered otherwise with one call
    between, was changed by that call; answered alike, the read changed nothing."""
    messages = [
        {"role": "user", "content": "My phone shows no service."},
        _call("user", "u1", "op_1", {}),
        _answer("u1", "Status: airplane mode ON, no signal"),
        _call("user", "u2", "op_2", {}),
        _answer("u2", "Done."),
        _call("user", "u3", "op_1", {}),
        _answer("u3", "Status: airplane mode OFF, 4 bars"),
        _call("user", "u4", "op_1", {}),
        _answer("u4", "Status: airplane mode OFF, 4 bars"),
    ]
    trace = Trace(id="t", line=1, messages=messages, tools=None, metadata={})
    effects = classify_tools([tool_calls(trace, roles=("assistant", "user"))])
    assert effects["op_2"].effect == "write" and effects["op_2"].source == "evidence"
    assert effects["op_1"].effect == "read" and effects["op_1"].unchanged == 1


def test_a_tool_whose_name_says_nothing_is_classed_by_what_its_text_answers_announce():
    """Seen once each, no state read around them: the answers decide where the name can't.
    "Mobile Data is now OFF." and "Payment request sent" announce a change; a state shown
    ("Data Saver mode is ON") or a hand-off ("Transfer successful") does not; a name that
    speaks still comes first, and an error says nothing."""
    said = {
        "op_1": "Mobile Data is now OFF.\nStatus Bar: 5G | Data Disabled",
        "op_2": "Payment request sent to the customer for bill B-12",
        "op_3": "SIM card re-seated successfully.",
        "op_4": "Data Saver mode is ON (limits data usage).",
        "op_5": "Airplane Mode: OFF",
        "op_6": "Transfer successful",
        "check_line": "Line updated successfully",
        "op_7": "Error: Line must be suspended to resume",
    }
    messages: list[dict[str, Any]] = [{"role": "user", "content": "My data does not work."}]
    for i, (name, answer) in enumerate(said.items()):
        messages += [_call("user", f"c{i}", name, {}), _answer(f"c{i}", answer)]
    trace = Trace(id="t", line=1, messages=messages, tools=None, metadata={})
    effects = classify_tools([tool_calls(trace, roles=("assistant", "user"))])
    got = {name: (e.effect, e.source) for name, e in effects.items()}
    assert got == {
        "op_1": ("write", "answers"),
        "op_2": ("write", "answers"),
        "op_3": ("write", "answers"),
        "op_4": ("read", "answers"),
        "op_5": ("read", "answers"),
        "op_6": ("read", "answers"),
        "check_line": ("read", "name"),
        "op_7": ("read", "default"),
    }


def test_the_users_own_tool_calls_are_read_and_their_writes_make_the_end_state():
    messages = [
        {"role": "user", "content": "My phone shows no service."},
        {"role": "assistant", "content": "Please turn airplane mode off."},
        _call("user", "u1", "toggle_airplane_mode", {}),
        _answer("u1", "Airplane mode is now OFF."),
        {"role": "user", "content": "Done, it works now."},
        {"role": "assistant", "content": "Glad it works."},
    ]
    trace = Trace(id="t", line=1, messages=messages, tools=None, metadata={})
    assert tool_calls(trace) == []  # the world answers the agent's calls only
    calls = tool_calls(trace, roles=("assistant", "user"))
    assert [(c.name, c.caller, c.answer) for c in calls] == [
        ("toggle_airplane_mode", "user", "Airplane mode is now OFF.")
    ]
    writers = write_tools(classify_tools([calls]))
    assert "toggle_airplane_mode" in writers
    outcome = goal_outcome(calls, writers, 0, len(messages))
    assert outcome.end_state == {"write:toggle_airplane_mode": ["{}"]}


def test_where_runs_disagree_the_reference_is_proposed_from_their_evidence_with_reasons():
    wrong, right = {"order=A1": {"item": "red"}}, {"order=A1": {"item": "blue"}}
    runs = [("r1", wrong, True), ("r2", right, False)]
    evidence = {
        "r1": RunEvidence(["unconfirmed_write"], accepted=False),
        "r2": RunEvidence([], accepted=True),
    }
    agreed = consensus(runs, evidence)
    assert agreed.source == "proposed" and agreed.needs_review
    assert agreed.reference == right
    top = agreed.candidates[0].as_dict()
    assert top["traces"] == ["r2"] and top["score"] == 3.0
    assert top["reasons"] == ["r2: no failure sign; the user accepted the outcome"]
    assert agreed.candidates[-1].as_dict()["reasons"] == ["r1: unconfirmed_write; no acceptance"]


def test_nothing_changed_is_a_candidate_and_wins_over_runs_that_look_failed():
    bad_a, bad_b = {"order=A1": {"state": "cancelled"}}, {"order=A1": {"state": "returned"}}
    evidence = {"r1": RunEvidence(["contradicts_user"]), "r2": RunEvidence(["tool_error"])}
    agreed = consensus([("r1", bad_a, True), ("r2", bad_b, True)], evidence)
    assert agreed.reference == {} and agreed.source == "proposed"
    assert agreed.candidates[0].count == 0 and "neutral prior" in agreed.candidates[0].reasons[0]
    # a run that reached "nothing changed" is weighed as any other
    clean = consensus([("r1", bad_a, True), ("r2", {}, False)], {**evidence, "r2": RunEvidence()})
    assert clean.reference == {} and clean.candidates[0].traces == ["r2"]


def test_a_script_from_a_proposed_reference_makes_provisional_verdicts():
    task = {"id": "t", "goal": "g", "end_state": {}, "end_state_source": "proposed"}
    assert script_for(task, {}, seed=0).provisional is True
    agreed = {**task, "end_state_source": "consensus"}
    assert script_for(agreed, {}, seed=0).provisional is False


def test_beside_a_proposed_reference_only_even_changes_that_runs_reached_count_too():
    ref, even, less = {"o=1": {"s": "a"}}, {"o=1": {"s": "b"}}, {"o=1": {"s": "c"}}
    task = {
        "id": "t",
        "end_state": ref,
        "end_state_source": "proposed",
        "end_states": [
            {"end_state": ref, "traces": ["r1"], "score": 6.0},
            {"end_state": even, "traces": ["r2"], "score": 6.0},
            {"end_state": {}, "traces": ["r3"], "score": 6.0},  # doing nothing: never
            {"end_state": less, "traces": ["r4"], "score": 5.0},  # outweighed: marked failed
            {"end_state": {"o=1": {"s": "d"}}, "traces": [], "score": 6.0},  # no run reached it
        ],
    }
    assert even_candidates(task) == [{"end_state": even, "traces": ["r2"]}]
    assert script_for(task, {}, seed=0).also == [{"end_state": even, "traces": ["r2"]}]
    assert even_candidates({**task, "end_state_source": "consensus"}) == []
    assert even_candidates({**task, "end_states": [{"end_state": ref, "traces": ["r1"]}]}) == []


def _lookup_run(trace_id: str, said: str, args: dict[str, Any], person: str) -> Trace:
    messages = [
        {"role": "user", "content": f"Please cancel my pending order of the red kettle. {said}"},
        _call("assistant", "1", "find_customer", args),
        _answer("1", person),
        {"role": "assistant", "content": "Done, it is cancelled."},
        {"role": "user", "content": "Thanks!"},
    ]
    return Trace(id=trace_id, line=1, messages=messages, tools=None, metadata={})


def test_the_person_is_the_id_that_a_lookup_made_with_the_users_own_words_answered():
    by_mail = _lookup_run(
        "a", "My e-mail is ada@example.com.", {"email": "ada@example.com"}, "ada_17"
    )
    by_name = _lookup_run(
        "b", "I'm Ada Byron, zip 10001.", {"name": "Ada Byron", "zip": "10001"}, "ada_17"
    )
    assert who(by_mail, tool_calls(by_mail)) == "who:ada_17"
    assert who(by_name, tool_calls(by_name)) == "who:ada_17"
    # arguments the user never said make no identity (the agent guessed or read them)
    guessed = _lookup_run("c", "Hi.", {"email": "someone@example.com"}, "x_99")
    assert who(guessed, tool_calls(guessed)) is None
    # an object answer gives the object's own id
    obj = _lookup_run("d", "Call me on 555-0101.", {"phone": "555-0101"}, "")
    obj.messages[2] = _answer("1", {"customer_id": "C-4", "phone": "555-0101"})
    assert who(obj, tool_calls(obj)) == "who:C-4"


def test_two_people_with_the_same_words_are_never_one_task_and_each_task_says_who():
    runs = [
        _lookup_run("a1", "My e-mail is ada@example.com.", {"email": "ada@example.com"}, "ada_17"),
        _lookup_run(
            "a2", "I'm Ada Byron, zip 10001.", {"name": "Ada Byron", "zip": "10001"}, "ada_17"
        ),
        _lookup_run("b1", "My phone is 555-0199.", {"phone": "555-0199"}, "bob_42"),
    ]
    forged = forge_traces(runs, embedder=TfidfEmbedder())
    by_trace = {t: task for task in forged.tasks for t in task.trace_ids}
    assert by_trace["a1"] is by_trace["a2"]
    assert by_trace["b1"] is not by_trace["a1"]
    assert by_trace["a1"].identity == "who:ada_17" and by_trace["b1"].identity == "who:bob_42"


def _phone_run(trace_id: str, setting: str) -> Trace:
    """One complaint in the same words; the phone's first read shows which setting is off,
    and the one fix tool turns it on."""
    messages = [
        {"role": "user", "content": "Hi, I can't send picture messages from my phone."},
        {"role": "assistant", "content": "Let's check your settings."},
        _call("user", f"{trace_id}a", "check_settings", {}),
        _answer(f"{trace_id}a", {"broken": setting}),
        {"role": "user", "content": f"It says {setting} is off."},
        _call("user", f"{trace_id}b", "toggle_setting", {"setting": setting}),
        _answer(f"{trace_id}b", "done"),
        {"role": "user", "content": "Thanks, that fixed it."},
    ]
    return Trace(id=trace_id, line=1, messages=messages, tools=None, metadata={})


def test_the_same_words_from_a_world_that_began_otherwise_are_two_goals():
    runs = [
        _phone_run("w1", "wifi calling"),
        _phone_run("w2", "wifi calling"),
        _phone_run("p1", "permissions"),
        _phone_run("p2", "permissions"),
    ]
    # the user's words name the setting: take them out so only the world tells them apart
    for run in runs:
        run.messages[4]["content"] = "It shows something is off."
    forged = forge_traces(runs, embedder=TfidfEmbedder())
    assert sorted(sorted(t.trace_ids) for t in forged.tasks) == [["p1", "p2"], ["w1", "w2"]]
    assert all(t.consensus and t.consensus.source == "consensus" for t in forged.tasks)


def test_a_tool_named_as_a_question_is_a_read():
    calls = tool_calls(_phone_run("x", "mms"), roles=("assistant", "user"))
    effects = classify_tools([calls], [{"name": "can_send_mms"}, {"name": "is_roaming"}])
    assert effects["can_send_mms"].effect == "read" and effects["is_roaming"].effect == "read"


def test_of_two_polite_runs_the_one_whose_end_state_holds_what_was_asked_is_proposed():
    asked = {"said:color=purple", "said:material=polyester"}
    wrong = {"order=A1": {"items": [{"options": {"color": "blue", "material": "cotton"}}]}}
    right = {"order=A1": {"items": [{"options": {"color": "Purple", "material": "polyester"}}]}}
    assert asked <= held(right) and not asked & held(wrong)
    evidence = {
        "r1": RunEvidence([], True, len(asked & held(wrong))),
        "r2": RunEvidence([], True, len(asked & held(right))),
    }
    agreed = consensus([("r1", wrong, False), ("r2", right, False)], evidence)
    assert agreed.reference == right and agreed.source == "proposed"
    assert agreed.candidates[0].reasons == [
        "r2: no failure sign; the user accepted the outcome; holds 2 value(s) the user asked for"
    ]


def test_a_read_after_a_write_that_could_not_change_it_still_shows_where_it_began():
    # the agent enables roaming on the account first; the phone is read only after it
    messages = [
        {"role": "user", "content": "Hi, I can't send picture messages from my phone."},
        _call("assistant", "r", "enable_roaming", {"line_id": "L-7"}),
        _answer("r", {"line_id": "L-7", "roaming": True}),
        _call("user", "s", "check_settings", {}),
        _answer("s", {"broken": "permissions"}),
        _call("assistant", "l", "get_line", {"line_id": "L-7"}),
        _answer("l", {"line_id": "L-7", "roaming": True}),
        _call("user", "t", "toggle_setting", {"setting": "permissions"}),
        _answer("t", "done"),
        _call("user", "c", "check_settings", {}),
        _answer("c", {"broken": "none"}),
    ]
    run = Trace(id="late", line=1, messages=messages, tools=None, metadata={})
    calls = tool_calls(run, roles=("assistant", "user"))
    writes = {"enable_roaming", "toggle_setting"}
    changes = read_effects([calls], writes)
    # only the toggle came between two settings reads that answered otherwise
    assert changes == {("toggle_setting", "check_settings")}
    kinds = [h.split("=", 1)[0] for h in start_handles(calls, writes, changes)]
    # the first settings read counts; the line the roaming write touched does not, nor the
    # settings read after the toggle
    assert kinds == [f"start:check_settings({_digest({})})"]
    # where other traces showed roaming change the settings read, nothing here counts
    known = changes | {("enable_roaming", "check_settings")}
    assert start_handles(calls, writes, known) == []
