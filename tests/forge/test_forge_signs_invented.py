"""``invented_value``: a write whose words of choice no one had said before it (the agent
chose for the user), on small conversations in another domain's words."""

from __future__ import annotations

from typing import Any

from judge_service.forge.sign_invented import invented_values
from judge_service.traces.calls import tool_calls
from judge_service.traces.conversation import Trace
from tests.forge.test_forge_signs_writes import Calls, bot, make, user

BOOKING = {"booking_ref": "BK-20931", "status": "booked", "trip": "one_way"}
POLICY = {
    "role": "system",
    "content": "A cancellation needs a reason: 'change of plans' or 'booked in error'.",
}


def kinds(trace: Trace) -> list[str]:
    return [s.kind for s in invented_values(trace, tool_calls(trace), {"cancel_booking"})]


def cancel(call: Calls, reason: str) -> list[dict[str, Any]]:
    done = {**BOOKING, "status": "cancelled"}
    return call("cancel_booking", done, booking_ref="BK-20931", reason=reason)


def opening(call: Calls) -> list[Any]:
    return [
        POLICY,
        user("Please cancel my booking BK-20931."),
        call("get_booking", BOOKING, booking_ref="BK-20931"),
    ]


def test_a_reason_no_one_gave_is_invented_even_where_the_policy_lists_it():
    call = Calls()
    trace = make(
        *opening(call), bot("Shall I cancel it?"), user("Yes."), cancel(call, "change of plans")
    )
    assert kinds(trace) == ["invented_value"]
    assert (
        "change of plans"
        in invented_values(trace, tool_calls(trace), {"cancel_booking"})[0].evidence
    )


def test_a_reason_the_user_or_the_agent_said_first_is_not():
    call = Calls()
    by_user = make(*opening(call), user("It's a change of plans."), cancel(call, "change of plans"))
    assert kinds(by_user) == []
    asked = bot("I'll cancel it for a change of plans. Shall I?")
    by_agent = make(*opening(call), asked, user("Yes."), cancel(call, "change of plans"))
    assert kinds(by_agent) == []


def test_words_compare_without_case_or_marks_and_ids_and_long_text_are_no_choice():
    call = Calls()
    said = user("Change of Plans, sadly.")
    assert kinds(make(*opening(call), said, cancel(call, "change_of_plans"))) == []
    # "one_way" came in a tool's answer; an id with digits is looked up, not chosen
    kept = call("rebook", BOOKING, booking_ref="BK-20931", trip="one_way", seat="14C")
    assert (
        invented_values(
            make(*opening(call), kept), tool_calls(make(*opening(call), kept)), {"rebook"}
        )
        == []
    )
    note = "the customer asked us to cancel it because their trip moved"
    assert kinds(make(*opening(call), cancel(call, note))) == []
    # a failed write chose nothing
    failed = call(
        "cancel_booking", "Error: booking is locked", booking_ref="BK-20931", reason="x y"
    )
    assert kinds(make(*opening(call), failed)) == []
