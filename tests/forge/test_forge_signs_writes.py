"""Failure signs of one trace, on small hand-made conversations: writes the user never
confirmed (a weak cue), success claimed with nothing done, hand-offs without trying, and the
narrowed tool errors, retry loops and complaints."""

from __future__ import annotations

import json
from typing import Any

import pytest

from judge_service.forge.signs import failure_signs, weak_cues
from judge_service.traces.calls import tool_calls
from judge_service.traces.conversation import Trace

SYSTEM = {"role": "system", "content": "You are the support agent of a ferry company."}
BOOKING = {"booking_ref": "FX-20931", "passenger": "Ada Byron", "sailing": "09:10"}
CANCELLED = {**BOOKING, "status": "cancelled"}


def user(text: str) -> dict[str, Any]:
    return {"role": "user", "content": text}


def bot(text: str) -> dict[str, Any]:
    return {"role": "assistant", "content": text}


class Calls:
    """Tool calls (the agent's, or with ``role="user"`` the user's own) and their answers,
    numbered so that ids never repeat."""

    def __init__(self) -> None:
        self.n = 0

    def __call__(
        self, name: str, answer: Any, *, role: str = "assistant", said: str = "", **args: Any
    ) -> list[dict[str, Any]]:
        self.n += 1
        call_id = f"call_{self.n}"
        function = {"name": name, "arguments": json.dumps(args)}
        content = answer if isinstance(answer, str) else json.dumps(answer)
        return [
            {
                "role": role,
                "content": said or None,
                "tool_calls": [{"id": call_id, "type": "function", "function": function}],
            },
            {"role": "tool", "tool_call_id": call_id, "content": content},
        ]


def make(*parts: Any) -> Trace:
    messages: list[dict[str, Any]] = [SYSTEM]
    for part in parts:
        messages.extend(part if isinstance(part, list) else [part])
    return Trace("t", 1, messages, None, {})


def signs(trace: Trace, writes: set[str] | None = None) -> list[str]:
    calls = tool_calls(trace, roles=("assistant", "user"))
    return [s.kind for s in failure_signs(trace, calls, writes)]


def cues(trace: Trace, writes: set[str] | None = None) -> list[str]:
    calls = tool_calls(trace, roles=("assistant", "user"))
    return [s.kind for s in weak_cues(trace, calls, writes)]


ASK = bot("I will cancel booking FX-20931. Shall I go ahead?")
REQUEST = user("Please cancel my booking FX-20931.")


# unconfirmed_write: a weak cue, never a failure


@pytest.mark.parametrize(
    ("answer", "confirmed"),
    [
        ("Yes, please go ahead.", True),
        ("Sure.", True),
        ("That's right, proceed.", True),
        ("No, don't do that yet.", False),
        ("Hmm, what would it cost?", False),
    ],
)
def test_a_write_after_a_yes_is_confirmed_and_after_anything_else_is_a_cue(answer, confirmed):
    call = Calls()
    trace = make(
        REQUEST, ASK, user(answer), call("cancel_booking", CANCELLED, booking_ref="FX-20931")
    )
    assert cues(trace, {"cancel_booking"}) == ([] if confirmed else ["unconfirmed_write"])
    assert "unconfirmed_write" not in signs(trace, {"cancel_booking"})


def test_a_write_right_after_the_agent_asked_before_the_user_answered_is_a_cue():
    call = Calls()
    waited_not = make(
        REQUEST,
        user("Yes, whatever it takes."),
        ASK,
        call("cancel_booking", CANCELLED, booking_ref="FX-20931"),
    )
    assert cues(waited_not, {"cancel_booking"}) == ["unconfirmed_write"]
    # the question asked in the very message that makes the call
    asked_and_did = make(
        REQUEST,
        call("cancel_booking", CANCELLED, said="Shall I cancel it?", booking_ref="FX-20931"),
    )
    assert cues(asked_and_did, {"cancel_booking"}) == ["unconfirmed_write"]
    # a read is no write, whatever the user said; nor is a tool the classes call a read
    assert cues(make(REQUEST, call("get_booking", BOOKING, booking_ref="FX-20931"))) == []
    assert cues(waited_not, set()) == []


def test_a_yes_to_the_agents_proposal_holds_across_its_narration():
    call = Calls()
    trace = make(
        REQUEST,
        ASK,
        user("Yes."),
        bot("Cancelling it now."),
        call("cancel_booking", CANCELLED, booking_ref="FX-20931"),
    )
    assert cues(trace, {"cancel_booking"}) == []


# claimed_without_write


def test_success_claimed_with_nothing_done_is_a_sign_and_after_a_write_is_not():
    call = Calls()
    done = bot("Your booking FX-20931 has been cancelled.")
    assert signs(make(REQUEST, done)) == ["claimed_without_write"]
    assert signs(make(REQUEST, bot("I've cancelled your booking."))) == ["claimed_without_write"]
    did = make(REQUEST, call("cancel_booking", CANCELLED, booking_ref="FX-20931"), done)
    assert signs(did) == []
    # a lookup changes nothing
    looked = make(REQUEST, call("get_booking", BOOKING, booking_ref="FX-20931"), done)
    assert signs(looked) == ["claimed_without_write"]


def test_a_failed_write_backs_no_claim_and_the_users_own_call_does():
    call = Calls()
    done = bot("Your booking FX-20931 has been cancelled.")
    failed = make(
        REQUEST, call("cancel_booking", "Error: booking is locked", booking_ref="FX-20931"), done
    )
    assert "claimed_without_write" in signs(failed)
    theirs = make(
        user("My data is off."),
        bot("Please turn mobile data on in your settings."),
        call("toggle_data", "Mobile data: on", role="user"),
        user("Done."),
        bot("Great, your mobile data has been enabled."),
    )
    assert signs(theirs) == []


@pytest.mark.parametrize(
    "text",
    [
        "Once your booking has been cancelled, you will get an e-mail.",
        "If it has been processed already, I can't change it.",
        "Your booking has not been cancelled.",
        "Has your booking been cancelled before?",
        "You have been successfully verified.",
    ],
)
def test_conditions_negations_questions_and_other_verbs_claim_nothing(text):
    assert signs(make(REQUEST, bot(text))) == []


# consented_not_done


PROPOSAL = bot("FX-20931 is refundable. Would you like me to proceed with the cancellation?")


def test_a_yes_as_the_users_last_words_with_nothing_done_after_is_a_sign():
    trace = make(REQUEST, PROPOSAL, user("Yes, please go ahead. Thank you!###STOP###"))
    assert signs(trace) == ["consented_not_done"]
    asked = bot("The refund will be $728.04. Please confirm if you'd like to proceed with this.")
    yes = user("Sounds good, go ahead! Thanks.")
    assert signs(make(REQUEST, asked, yes)) == ["consented_not_done"]
    call = Calls()
    done = make(
        REQUEST,
        PROPOSAL,
        user("Yes, please go ahead."),
        call("cancel_booking", CANCELLED, booking_ref="FX-20931"),
        bot("Done: the booking is cancelled and refunded."),
        user("Thanks!"),
    )
    assert signs(done) == []


@pytest.mark.parametrize(
    ("agent", "reply"),
    [
        # the user turns it down, at the start of the reply or within it
        (PROPOSAL, "No, leave it as it is."),
        (bot("Shall I also send you a receipt?"), "Perfect, thanks. No need for a receipt."),
        # a hand-off proposed is no change of state
        (bot("Would you like me to transfer you to a human agent?"), "Yes, please."),
        (bot("Would you like me to do that?"), "Yes, transfer me to a human, please."),
        # the agent reported the change done: what follows is no pending proposal
        (bot("Your booking has been cancelled. Shall I proceed to close the case?"), "Yes."),
        (bot("Your booking has been cancelled. You'll get a confirmation e-mail."), "Great!"),
        # words that describe a confirmation ask for none
        (bot("The e-mail will confirm whether any fees apply."), "Sounds good, thanks."),
        # a question that proposes nothing
        (bot("Is there anything else I can help you with?"), "Yes, that's all. Thanks."),
    ],
)
def test_a_decline_a_hand_off_a_report_or_a_plain_question_is_no_sign(agent, reply):
    assert "consented_not_done" not in signs(make(REQUEST, agent, user(reply)))


def test_the_users_own_call_after_the_proposal_is_something_done():
    call = Calls()
    trace = make(
        user("No signal."),
        bot("Should I walk you through turning airplane mode off? Please confirm."),
        user("Sure."),
        call("toggle_airplane_mode", "Airplane mode: off", role="user"),
        user("Yes, done. It works now."),
    )
    assert "consented_not_done" not in signs(trace)


# transfer_without_trying


def handoff(call: Calls) -> list[dict[str, Any]]:
    return call("transfer_to_human_agents", "Transfer successful", summary="user wants help")


def test_a_hand_off_before_anything_was_tried_is_a_sign():
    call = Calls()
    trace = make(REQUEST, call("get_booking", BOOKING, booking_ref="FX-20931"), handoff(call))
    assert signs(trace) == ["transfer_without_trying"]


def test_a_hand_off_whose_name_says_nothing_is_known_by_its_short_answer():
    call = Calls()
    lookup = call("op_1", BOOKING, booking_ref="FX-20931")
    done = call("op_9", "Transfer successful", summary="wants a refund")
    trace = make(REQUEST, lookup, done, bot("A colleague will take it from here."))
    assert signs(trace, writes={"op_3"}) == ["transfer_without_trying"]
    assert signs(trace) == []  # without the tools' classes op_9 might have written
    record = {"transfer_ref": "TR-5", "status": "transferred", "amount": 40, "to": "IBAN DE89"}
    payment = call("op_9", record, booking_ref="FX-20931")
    moved = make(REQUEST, lookup, payment, bot("Your payment is on its way."))
    assert signs(moved, writes={"op_3"}) == []  # a transfer's record, not a hand-off


def test_a_hand_off_after_a_write_a_refusal_or_the_users_own_attempt_is_not():
    call = Calls()
    tried = make(
        REQUEST,
        call("cancel_booking", CANCELLED, booking_ref="FX-20931"),
        user("I also want a refund to another card."),
        handoff(call),
    )
    assert "transfer_without_trying" not in signs(tried)
    refused = call("get_booking", "Error: booking is locked", booking_ref="FX-20931")
    assert "transfer_without_trying" not in signs(make(REQUEST, refused, handoff(call)))
    said_no = make(
        REQUEST,
        bot("Per our policy, a booking within 24 hours of sailing cannot be cancelled."),
        user("Then get me a human."),
        handoff(call),
    )
    assert signs(said_no) == []
    user_tried = make(
        user("No signal."),
        bot("Please restart your phone."),
        call("reboot_device", "Restarting", role="user"),
        user("Still no signal."),
        handoff(call),
    )
    assert "transfer_without_trying" not in signs(user_tried)


# tool_error, retry_loop, user_complaint: narrowed


def test_a_failed_write_is_made_good_by_a_later_write_on_the_same_record():
    call = Calls()
    typo = make(
        REQUEST,
        ASK,
        user("Yes."),
        call("cancel_booking", "Error: booking not found", booking_ref="X20931"),
        call("cancel_booking", CANCELLED, booking_ref="#X20931"),
        bot("Done."),
    )
    assert signs(typo) == []
    other_tool = make(
        REQUEST,
        call("exchange_booking", "Error: sailed bookings only", booking_ref="FX-20931"),
        call("modify_booking", {**BOOKING, "sailing": "17:40"}, booking_ref="FX-20931"),
        bot("I moved it instead."),
    )
    assert signs(other_tool) == []
    other_record = make(
        REQUEST,
        call("cancel_booking", "Error: booking is locked", booking_ref="FX-20931"),
        call("update_profile", {"id": "u1"}, user_id="u1"),
        bot("Sorry, I could not cancel it, but I updated your profile."),
    )
    assert signs(other_record) == ["tool_error"]


def _got_past(call: Calls, failed: str, worked: str) -> Trace:
    """A lookup by a mistyped e-mail that failed (``failed``), then one by name that worked."""
    return make(
        user("I'm ada@exmple.com"),
        call(failed, "Error: user not found", email="ada@exmple.com"),
        call(worked, "ada_1", full_name="Ada Byron"),
        bot("Found you."),
    )


def test_a_failed_lookup_counts_only_when_nothing_worked_after_it():
    call = Calls()
    assert signs(_got_past(call, "find_user_by_email", "find_user_by_name")) == []
    gave_up = make(
        user("I'm ada@exmple.com"),
        call("find_user_by_email", "Error: service unavailable", email="ada@exmple.com"),
        bot("Sorry, I cannot look you up right now."),
    )
    assert signs(gave_up) == ["tool_error"]


def test_tools_whose_names_say_nothing_are_read_or_write_as_the_traces_class_them():
    """Another domain's names may read neither as reads nor as writes (``op_1``): where the
    forge classed its tools, a lookup it saw change nothing changes nothing here either."""
    call = Calls()
    got_past = _got_past(call, "op_1", "op_2")
    assert signs(got_past, writes={"op_3"}) == []
    assert signs(got_past) == ["tool_error"]  # by names alone op_1 might have written
    done = bot("Your booking FX-20931 has been cancelled.")
    looked = make(REQUEST, call("op_2", BOOKING, booking_ref="FX-20931"), done)
    assert signs(looked, writes={"op_3"}) == ["claimed_without_write"]
    assert signs(looked) == []
    did = make(REQUEST, call("op_3", CANCELLED, booking_ref="FX-20931"), done)
    assert signs(did, writes={"op_3"}) == []
    yes = make(
        ASK, call("op_2", BOOKING, booking_ref="FX-20931"), user("Yes, please go ahead. Thanks!")
    )
    assert signs(yes, writes={"op_3"}) == ["consented_not_done"]
    assert signs(yes) == []


def test_reading_a_record_three_times_is_no_loop_but_repeating_a_write_or_a_failure_is():
    call = Calls()
    reads = [call("get_booking", BOOKING, booking_ref="FX-20931") for _ in range(3)]
    assert signs(make(REQUEST, *reads, bot("It is booked."))) == []
    writes = [call("cancel_booking", CANCELLED, booking_ref="FX-20931") for _ in range(3)]
    assert "retry_loop" in signs(make(REQUEST, *writes, bot("Done.")))
    fails = [call("get_booking", "Error: timeout", booking_ref="FX-20931") for _ in range(3)]
    assert "retry_loop" in signs(make(REQUEST, *fails, bot("The system is down.")))


@pytest.mark.parametrize(
    ("agent", "reply", "complaint"),
    [
        ("Your sailing is at 9:10.", "That's wrong, it was moved to 17:40.", True),
        ("Please restart the app.", "I did, it still doesn't work.", True),
        ("Is this your address: 1 Elm St?", "No, that's not it. It is 2 Oak St.", False),
        ("Try restarting the app.", "OK. If that doesn't work, I'll call back.", False),
        ("Your sailing is at 9:10.", "Oh no, my old address is wrong in my profile.", False),
    ],
)
def test_a_complaint_answers_a_statement_of_the_agent_not_a_question(agent, reply, complaint):
    trace = make(user("When do I sail?"), bot(agent), user(reply), bot("Noted."))
    assert (signs(trace) == ["user_complaint"]) is complaint


def test_a_problem_still_there_is_a_complaint_in_the_users_last_words_only():
    still = user("I restarted it, but there's still no signal. What should I do next?")
    advice = bot("Please restart your phone.")
    ended = make(user("My phone has no signal."), advice, still, bot("I'll transfer you."))
    assert signs(ended) == ["user_complaint"]
    fixed = make(
        user("My phone has no signal."),
        advice,
        still,
        bot("Then reseat the SIM card."),
        user("That did it, thanks!"),
    )
    assert signs(fixed) == []
