"""A world learns a write's precondition from the errors the traces show.

A shop's backend (not the retail corpus, which shows no such error) cancels an order only
while it is pending; cancelling one already delivered answers ``Error: order O-3 cannot be
cancelled: it is delivered``. The world sees three cancellations go through (each found its
order pending) and two refused; it must refuse an order in a state the successes never saw,
in the backend's words, and still cancel a pending one. A field that took many values in the
successes (a total) is no precondition.
"""

from __future__ import annotations

import copy
import json
from typing import Any

import pytest

from judge_service.traces.conversation import parse_traces
from judge_service.world.build import build_world
from judge_service.world.model import Call
from judge_service.world.world import World
from tests.world_support import exchange

ORDERS = {
    f"O-{n}": {"order_id": f"O-{n}", "status": status, "total": total}
    for n, status, total in (
        (1, "pending", 12.5),
        (2, "pending", 40.0),
        (3, "delivered", 7.25),
        (4, "pending", 99.0),
        (5, "delivered", 15.0),
        (6, "shipped", 22.0),
        (7, "pending", 5.0),
    )
}


class Shop:
    def __init__(self) -> None:
        self.orders = copy.deepcopy(ORDERS)

    def call(self, name: str, args: dict[str, Any]) -> str:
        order = self.orders.get(args["order_id"])
        if order is None:
            return "Error: order not found"
        if name == "cancel_order":
            if order["status"] != "pending":
                number, status = order["order_id"], order["status"]
                return f"Error: order {number} cannot be cancelled: it is {status}"
            order["status"] = "cancelled"
        return json.dumps(order)


def _trace(trace_id: str, orders: list[str]) -> dict[str, Any]:
    shop = Shop()
    messages: list[dict[str, Any]] = [{"role": "user", "content": "Please cancel my order."}]
    for index, number in enumerate(orders):
        for step, name in enumerate(("get_order", "cancel_order")):
            args = {"order_id": number}
            messages += exchange(f"{trace_id}-{index}-{step}", name, args, shop.call(name, args))
    messages.append({"role": "assistant", "content": "Done."})
    return {"id": trace_id, "messages": messages, "metadata": {}}


@pytest.fixture(scope="module")
def world() -> World:
    runs = [
        _trace("shop-1", ["O-1", "O-3"]),
        _trace("shop-2", ["O-2", "O-5"]),
        _trace("shop-3", ["O-4"]),
    ]
    return build_world(parse_traces("\n".join(json.dumps(r) for r in runs)))


def test_the_precondition_is_learned_on_the_field_of_few_values(world: World) -> None:
    rules = [r for r in world.tools["cancel_order"].errors if r.when == "state"]
    assert [(r.field, r.allowed) for r in rules] == [(["status"], ["pending"])]
    assert rules[0].examples == 2


def test_an_order_in_a_state_no_success_saw_is_refused_in_the_backends_words(world) -> None:
    state = world.task_state([])
    # O-6 (shipped) and O-7 (pending) were never in a trace: the world learns them as a
    # recorded trajectory would show them, from a read first
    for number in ("O-6", "O-7"):
        state = {**state, f"order_id={number}": ORDERS[number]}
    refused = world.answer(state, Call(name="cancel_order", arguments={"order_id": "O-6"}))
    assert refused.error and refused.path == "transition"
    assert refused.text == Shop().call("cancel_order", {"order_id": "O-6"})
    assert refused.state_after is state  # nothing changed
    done = world.answer(state, Call(name="cancel_order", arguments={"order_id": "O-7"}))
    assert not done.error and done.payload["status"] == "cancelled"
    again = world.answer(done.state_after, Call(name="cancel_order", arguments={"order_id": "O-7"}))
    assert again.text == "Error: order O-7 cannot be cancelled: it is cancelled"


def _lend_trace(trace_id: str, lends: list[tuple[str, str]], barred: str = "M-9") -> dict[str, Any]:
    """``lend(book_id, member_id)``: the backend refuses the ``barred`` member (which nothing
    the traces show says) and otherwise marks the book lent."""
    messages: list[dict[str, Any]] = [{"role": "user", "content": "Lend me a book."}]
    for index, (book, member) in enumerate(lends):
        state = {"book_id": book, "status": "on shelf"}
        messages += exchange(
            f"{trace_id}-{index}-r", "get_book", {"book_id": book}, json.dumps(state)
        )
        args = {"book_id": book, "member_id": member}
        answer = (
            "Error: member M-9 may not borrow"
            if member == barred
            else json.dumps({**state, "status": "lent", "member_id": member})
        )
        messages += exchange(f"{trace_id}-{index}-w", "lend", args, answer)
    return {"id": trace_id, "messages": messages}


def test_a_traced_error_to_the_same_call_in_the_same_state_is_answered_before_a_rule():
    """No rule explains why M-9 was refused; the same call in the same state still gets the
    backend's error, and another member gets the learned change."""
    runs = [
        _lend_trace("lib-1", [("B-1", "M-1"), ("B-2", "M-9")]),
        _lend_trace("lib-2", [("B-3", "M-2")]),
        _lend_trace("lib-3", [("B-4", "M-3")]),
    ]
    world = build_world(parse_traces("\n".join(json.dumps(r) for r in runs)))
    lend = world.tools["lend"]
    assert lend.transition is not None and lend.transition.usable
    state = world.task_state([])
    refused = world.answer(
        state, Call(name="lend", arguments={"book_id": "B-2", "member_id": "M-9"})
    )
    assert (refused.error, refused.path) == (True, "replay"), refused
    assert refused.text == "Error: member M-9 may not borrow"
    lent = world.answer(state, Call(name="lend", arguments={"book_id": "B-2", "member_id": "M-4"}))
    assert not lent.error and lent.payload == {
        "book_id": "B-2",
        "status": "lent",
        "member_id": "M-4",
    }

    # the same call in the same state also went through in another trace: the rule decides
    runs.append(_lend_trace("lib-4", [("B-2", "M-9")], barred=""))
    world = build_world(parse_traces("\n".join(json.dumps(r) for r in runs)))
    again = world.answer(state, Call(name="lend", arguments={"book_id": "B-2", "member_id": "M-9"}))
    assert not again.error and again.path == "transition", again
