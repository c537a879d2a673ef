"""A write's effect on a second entity, learned though one trace saw it only after two writes.

``pay_items(order_id, item_ids, card_id)`` marks items of an order paid and takes their
prices from the buyer's card, which only a later ``get_wallet`` shows. One trace pays twice
from one card and reads the wallet only after both: its second payment's "before" is the
balance read before the first, so that example says the second payment cost both. The world
leaves such an example out (the entity was not seen since an earlier write: ``Step.stale``)
and learns the balance from the payments whose wallet was seen before and after.
"""

from __future__ import annotations

import json
from typing import Any

from judge_service.traces.conversation import parse_traces
from judge_service.world.build import build_world
from judge_service.world.model import Call
from judge_service.world.world import World
from tests.world_support import exchange

PRICES = {"a1": 20.0, "b2": 15.0, "c3": 7.5, "d4": 4.25}


def _wallet(user: str, card: str, balance: float) -> dict[str, Any]:
    return {"user_id": user, "cards": {card: {"card_id": card, "balance": balance}}}


def _order(order: str, user: str, paid: set[str]) -> dict[str, Any]:
    lines = [{"item_id": i, "price": p, "paid": i in paid} for i, p in PRICES.items()]
    status = "paid" if paid else "pending"
    return {"order_id": order, "user_id": user, "items": lines, "status": status}


def _trace(name: str, user: str, balance: float, payments: list[tuple[str, list[str]]]):
    """Reads the wallet and the orders, pays ``payments`` from the user's card, then reads
    the wallet again."""
    card = f"gc_{user}"
    messages: list[dict[str, Any]] = [{"role": "user", "content": "Please pay my orders."}]

    def say(tool: str, args: dict[str, Any], answer: dict[str, Any]) -> None:
        call_id = f"{name}-{len(messages)}"
        messages.extend(exchange(call_id, tool, args, json.dumps(answer)))

    say("get_wallet", {"user_id": user}, _wallet(user, card, balance))
    for order, _ in payments:
        say("get_order", {"order_id": order}, _order(order, user, set()))
    for order, items in payments:
        args = {"order_id": order, "item_ids": items, "card_id": card}
        say("pay_items", args, _order(order, user, set(items)))
        balance -= sum(PRICES[i] for i in items)
    say("get_wallet", {"user_id": user}, _wallet(user, card, balance))
    return {"id": name, "messages": messages}


def _world(traces: list[dict[str, Any]]) -> World:
    return build_world(parse_traces("\n".join(json.dumps(t) for t in traces) + "\n"))


def test_a_payment_read_only_after_a_second_one_does_not_hide_what_each_costs() -> None:
    world = _world(
        [
            _trace("t1", "u1", 100.0, [("o1", ["a1"])]),
            _trace("t2", "u2", 50.0, [("o2", ["b2", "c3"])]),
            _trace("t3", "u3", 90.0, [("o3", ["a1"]), ("o4", ["b2"])]),  # read after both
        ]
    )
    pay = world.tools["pay_items"]
    assert pay.effect == "write" and world.tools["get_wallet"].effect == "read"
    assert pay.transition is not None, pay
    assert [e.unexplained for e in pay.transition.effects] == [[], []], pay.transition
    # a payment no trace made: another user, order and items
    state = {
        **world.task_state([]),
        "user_id=u9": _wallet("u9", "gc_u9", 40.0),
        "order_id=o9": _order("o9", "u9", set()),
    }
    args = {"order_id": "o9", "item_ids": ["c3", "d4"], "card_id": "gc_u9"}
    answer = world.answer(state, Call(name="pay_items", arguments=args))
    assert answer.state_after["user_id=u9"]["cards"]["gc_u9"]["balance"] == 28.25
