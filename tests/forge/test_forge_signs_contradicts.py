"""``contradicts_user`` on small hand-made conversations: a write whose values the user's own
words contradict (by shape and marks, never by a field's name), and the cases that are not."""

from __future__ import annotations

from typing import Any

from judge_service.forge.sign_contradicts import contradicts_user, shape
from judge_service.forge.signs import failure_signs
from judge_service.traces.calls import tool_calls
from judge_service.traces.conversation import Trace
from tests.forge.test_forge_signs_writes import Calls, bot, make, user

ACCOUNT = {
    "user_id": "ada_1",
    "wallet": {
        "paypal_7644869": {"source": "paypal", "id": "paypal_7644869"},
        "credit_card_9513926": {
            "source": "credit_card",
            "id": "credit_card_9513926",
            "brand": "visa",
            "last_four": "7285",
        },
    },
}
ORDER = {"order_id": "#A1001", "status": "delivered", "lines": ["4579334072", "1421289881"]}


def kinds(trace: Trace, writes: set[str] | None = None) -> list[str]:
    calls = tool_calls(trace, roles=("assistant", "user"))
    return [s.kind for s in contradicts_user(trace, calls, writes)]


def refund(call: Calls, method: str) -> list[dict[str, Any]]:
    return call(
        "refund_order", {**ORDER, "status": "refunded"}, order_ref="#A1001", method_id=method
    )


def start(call: Calls) -> list[Any]:
    return [
        user("I want my money back for order #A1001."),
        call("get_account", ACCOUNT, user_ref="ada_1"),
        call("get_order", ORDER, order_ref="#A1001"),
        bot("I can refund order #A1001. Where should the money go?"),
    ]


def test_shapes_keep_digits_by_length_and_letters_as_one():
    assert shape("paypal_7644869") == shape("credit_card_9513926") == "a_#7"
    assert shape("RZ-8660475") == "a-#7"  # another mark before the digits: another kind
    assert shape("#W2378156") == "#a#7"
    assert shape("1151293680") == "#10"


def test_a_write_to_another_method_than_the_one_the_user_asked_for_is_flagged():
    call = Calls()
    trace = make(*start(call), user("To PayPal, please."), refund(call, "credit_card_9513926"))
    assert kinds(trace) == ["contradicts_user"]
    sign = contradicts_user(trace, tool_calls(trace))[0]
    assert "credit_card_9513926" in sign.evidence and "paypal_7644869" in sign.evidence
    assert sign.turn == len(trace.messages) - 2  # the write's own message
    assert "contradicts_user" in [s.kind for s in failure_signs(trace, tool_calls(trace))]
    # the same run, its writes named by the classes: a tool that is no write is not read
    assert kinds(trace, {"refund_order"}) == ["contradicts_user"]
    assert kinds(trace, set()) == []


def test_the_method_the_user_asked_for_by_its_card_words_or_digits_is_no_contradiction():
    for said in ("To my Visa, please.", "The card ending 7285.", "My credit card."):
        call = Calls()
        trace = make(*start(call), user(said), refund(call, "credit_card_9513926"))
        assert kinds(trace) == [], said


def test_an_agent_that_told_the_user_what_it_would_use_contradicts_no_one():
    call = Calls()
    told = bot("Refunds go back to the original payment, your Visa ending 7285: processing.")
    trace = make(
        *start(call), user("To PayPal, please."), told, refund(call, "credit_card_9513926")
    )
    assert kinds(trace) == []
    untold = bot("Processing it now.")
    assert kinds(make(*trace.messages[1:-3], untold, *trace.messages[-2:])) == ["contradicts_user"]


def test_a_user_who_asked_for_the_item_that_was_used_is_not_contradicted():
    call = Calls()
    swap = call("change_line", ORDER, order_ref="#A1001", old=["4579334072"], new=["7661609223"])
    asked = make(
        user("Swap my bottle on order #A1001."),
        call("get_order", ORDER, order_ref="#A1001"),
        bot("Options: 7661609223 (black) or 2439754078 (red). Which one?"),
        user("7661609223 please."),
        swap,
    )
    assert kinds(asked) == []
    other = call("change_line", ORDER, order_ref="#A1001", old=["4579334072"], new=["2439754078"])
    flagged = make(*asked.messages[1:-2], other)
    assert kinds(flagged) == ["contradicts_user"]


def test_a_value_asked_for_another_call_or_given_to_be_found_names_nothing_here():
    call = Calls()
    two_calls = make(
        user("On order #A1001, refund the cable and swap the bottle."),
        call("get_order", ORDER, order_ref="#A1001"),
        bot("Bottle options: 7661609223 (black) or 2439754078 (red). Which one?"),
        user("7661609223, and go ahead with the cable too."),
        call("refund_line", ORDER, order_ref="#A1001", line="1421289881"),
        call("change_line", ORDER, order_ref="#A1001", old=["4579334072"], new=["7661609223"]),
    )
    assert kinds(two_calls) == []
    # the same refund without the swap that used the item the user named
    assert kinds(make(*two_calls.messages[1:-2])) == ["contradicts_user"]
    found_by_zip = make(
        user("Ship my order to my office address, please. I'm Ada Byron, zip 94103."),
        call("find_user", "ada_1", full_name="Ada Byron", zip="94103"),
        bot("Is the office address on file?"),
        user("Yes, the office one, not my home at 94103."),
        call("get_user", {"user_id": "ada_1", "office": {"zip": "80202"}}, user_ref="ada_1"),
        call("update_address", {"user_id": "ada_1"}, user_ref="ada_1", zip="80202"),
    )
    assert kinds(found_by_zip) == []


def test_a_user_who_named_the_used_value_before_is_not_contradicted_by_a_later_word():
    call = Calls()
    said_visa = make(
        user("I want my money back for order #A1001, on my Visa."),
        *start(call)[1:],
        user("Not PayPal."),
        refund(call, "credit_card_9513926"),
    )
    assert kinds(said_visa) == []
