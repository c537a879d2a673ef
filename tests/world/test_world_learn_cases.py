"""Learning writes whose change depends on a condition, or copies the entity's own fields.

The domain is an airline's seat changes, not the retail corpus: a change of seats on a
booking charges the card the fare difference when the new seats cost more and credits it
when they cost less (one ledger entry either way); moving a booking to another card charges
the new card the first payment's amount and credits the card that paid it. The learner sees
only before/after states and the call's arguments; the learned change must then give the
right ledger on calls it never saw, including a sign it was not shown first.
"""

from __future__ import annotations

from pathlib import Path
from typing import Any

from judge_service.traces.conversation import parse_traces
from judge_service.world.build import build_world
from judge_service.world.describe import describe_op
from judge_service.world.formulas import formulas, numeric_value
from judge_service.world.learn_cases import Example
from judge_service.world.learn_ops import learn_ops
from judge_service.world.lookup import Ctx, Index
from judge_service.world.ops import apply_ops

FARES = {"1A": 900, "2B": 850, "14C": 120, "15D": 95, "30F": 60, "31A": 60, "32B": 60}


def _catalogue() -> dict[str, Any]:
    seats = {seat: {"seat_id": seat, "fare": fare} for seat, fare in FARES.items()}
    return {"cabin=economy": {"cabin": "economy", "seats": seats}}


def _booking(number: str, seats: list[str], ledger: list[dict[str, Any]]) -> dict[str, Any]:
    return {
        "booking_id": number,
        "seats": [{"seat_id": s, "fare": FARES[s]} for s in seats],
        "ledger": ledger,
        "status": "confirmed",
    }


def _first_payment(card: str, amount: int) -> list[dict[str, Any]]:
    return [{"kind": "charge", "amount": amount, "card_id": card}]


def _change_seats(
    number: str, old: list[str], new: list[str], card: str
) -> tuple[dict[str, Any], dict[str, Any], dict[str, Any]]:
    """The backend's own rule, which the learner must find from examples."""
    paid = sum(FARES[s] for s in old)
    pre = _booking(number, old, _first_payment("card-0", paid))
    difference = sum(FARES[s] for s in new) - paid
    entry = {
        "kind": "charge" if difference > 0 else "credit",
        "amount": abs(difference),
        "card_id": card,
    }
    post = {**_booking(number, new, [*pre["ledger"], entry]), "status": "changed"}
    args = {"booking_id": number, "seat_ids": old, "new_seat_ids": new, "card_id": card}
    return pre, post, args


def _example(pre: dict[str, Any], post: dict[str, Any], args: dict[str, Any]) -> Example:
    state = {**_catalogue(), f"booking_id={pre['booking_id']}": pre}
    return Example(pre, post, Ctx(args, pre, state, index=Index()))


def _apply(learned_ops: list, pre: dict[str, Any], args: dict[str, Any]) -> Any:
    state = {**_catalogue(), f"booking_id={pre['booking_id']}": pre}
    return apply_ops(pre, learned_ops, Ctx(args, pre, state, index=Index()))


def test_an_entry_chosen_by_the_sign_of_a_difference_is_learned_and_generalises() -> None:
    seen = [
        _change_seats("B1", ["14C"], ["1A"], "card-1"),  # dearer: a charge of 780
        _change_seats("B2", ["15D"], ["2B"], "card-2"),  # dearer: 755
        _change_seats("B3", ["1A"], ["30F"], "card-3"),  # cheaper: a credit of 840
        _change_seats("B4", ["2B"], ["15D"], "card-4"),  # cheaper: 755
        _change_seats("B5", ["30F"], ["31A"], "card-5"),  # the same fare: a credit of 0
    ]
    learned = learn_ops([_example(*case) for case in seen])
    assert learned.unexplained == [], learned.unexplained
    either = [op for op in learned.ops if op.kind == "either"]
    assert len(either) == 1 and either[0].path == ["ledger"]
    reading = describe_op(either[0])
    assert '"charge"' in reading and '"credit"' in reading, reading
    # calls it never saw: another booking, other seats, both signs and no difference
    for old, new, card in (
        (["30F"], ["14C"], "card-9"),
        (["14C"], ["15D"], "card-8"),
        (["30F"], ["31A"], "card-7"),
    ):
        pre, post, args = _change_seats("B9", old, new, card)
        assert _apply(learned.ops, pre, args) == post, (old, new)


def test_without_an_example_at_zero_either_side_of_it_is_a_guess() -> None:
    """Four examples, none at zero: both signs are right, the boundary is whichever the
    learner tried first (here a charge of 0), which the example at zero above settles."""
    seen = [
        _change_seats("B1", ["14C"], ["1A"], "card-1"),
        _change_seats("B2", ["15D"], ["2B"], "card-2"),
        _change_seats("B3", ["1A"], ["30F"], "card-3"),
        _change_seats("B4", ["2B"], ["15D"], "card-4"),
    ]
    learned = learn_ops([_example(*case) for case in seen])
    for old, new in ((["30F"], ["14C"]), (["14C"], ["15D"])):
        pre, post, args = _change_seats("B9", old, new, "card-9")
        assert _apply(learned.ops, pre, args) == post, (old, new)
    pre, post, args = _change_seats("B9", ["31A"], ["32B"], "card-9")
    ledger = _apply(learned.ops, pre, args)["ledger"]
    assert ledger[-1]["amount"] == 0 and ledger[-1]["kind"] in ("charge", "credit")


def test_no_condition_is_invented_where_no_number_tells_the_cases_apart() -> None:
    """Two outcomes that no number the call computes separates stay unexplained."""
    examples = []
    for number, kind in (("B1", "charge"), ("B2", "credit"), ("B3", "charge"), ("B4", "credit")):
        pre = _booking(number, ["14C"], [])
        post = {**pre, "ledger": [{"kind": kind, "card_id": "card-1"}]}
        examples.append(_example(pre, post, {"booking_id": number, "card_id": "card-1"}))
    learned = learn_ops(examples)
    assert learned.unexplained == ["ledger"]
    assert not [op for op in learned.ops if op.kind == "either"]


def _move_card(number: str, paid: int, old_card: str, new_card: str) -> tuple[Any, Any, Any]:
    pre = _booking(number, ["14C"], _first_payment(old_card, paid))
    refund = {"kind": "credit", "amount": paid, "card_id": old_card}
    charge = {"kind": "charge", "amount": paid, "card_id": new_card}
    post = {**pre, "ledger": [*pre["ledger"], charge, refund]}
    return pre, post, {"booking_id": number, "card_id": new_card}


def test_appended_entries_may_copy_the_entitys_own_first_entry() -> None:
    seen = [
        _move_card("B1", 120, "card-1", "card-2"),
        _move_card("B2", 955, "card-3", "card-4"),
        _move_card("B3", 95, "card-5", "card-6"),
    ]
    learned = learn_ops([_example(*case) for case in seen])
    assert learned.unexplained == []
    assert [op.kind for op in learned.ops] == ["extend"]
    reading = describe_op(learned.ops[0])
    assert "self.ledger.0.amount" in reading and "self.ledger.0.card_id" in reading, reading
    # the labels are constants, not read from whichever entry happened to hold them
    assert '"charge"' in reading and '"credit"' in reading, reading
    pre, post, args = _move_card("B7", 4321, "card-70", "card-71")
    assert _apply(learned.ops, pre, args) == post


def _reseat_as_traced(
    number: str, old: list[str], new: list[str]
) -> tuple[dict[str, Any], dict[str, Any], dict[str, Any]]:
    """A real backend's quirk, as a trace recorded it: each changed seat takes its new id,
    but the fare of the *last* new seat (τ²-bench retail's item modification does this)."""
    pre = _booking(number, old, [])
    seats = [{"seat_id": n, "fare": FARES[new[-1]]} for n in new]
    return (
        pre,
        {**pre, "seats": seats},
        {"booking_id": number, "seat_ids": old, "new_seat_ids": new},
    )


def test_a_backend_that_prices_every_changed_element_by_the_last_argument_is_learned_as_it_is():
    seen = [
        _reseat_as_traced("B1", ["14C"], ["1A"]),
        _reseat_as_traced("B2", ["15D", "30F"], ["2B", "31A"]),  # both at 31A's fare
        _reseat_as_traced("B3", ["1A"], ["32B"]),
        _reseat_as_traced("B4", ["2B", "14C"], ["15D", "1A"]),  # both at 1A's fare
    ]
    learned = learn_ops([_example(*case) for case in seen])
    assert learned.unexplained == [], learned.unexplained
    # a call it never saw: three seats, all at the last one's fare, each its own id
    pre, post, args = _reseat_as_traced("B9", ["1A", "2B", "14C"], ["30F", "15D", "2B"])
    assert _apply(learned.ops, pre, args) == post
    assert [s["fare"] for s in post["seats"]] == [850, 850, 850]


def test_a_difference_the_backend_left_unrounded_is_computed_as_it_did():
    """53.48 - 53.43 is 0.04999999999999716 in machine arithmetic: a backend that answered
    that is answered the same way, and one that answered 0.05 is rounded."""
    ctx = Ctx({"new": 53.48, "old": 53.43}, {}, {}, index=Index())
    (raw,) = [f for f in formulas(53.48 - 53.43, ctx) if "add" in f]
    assert raw.get("raw") is True and numeric_value(raw, ctx) == 53.48 - 53.43 != 0.05
    (rounded,) = [f for f in formulas(0.05, ctx) if "add" in f]
    assert "raw" not in rounded and numeric_value(rounded, ctx) == 0.05


def test_an_unrounded_difference_over_several_elements_is_added_pair_by_pair():
    """A backend that loops over the pairs (``total += new - old``) answers
    -189.25000000000003 where the difference of the two sums is -189.25000000000006: the
    formula learned from it gives the backend's number, not the other order's."""
    pre = {
        "items": [{"id": "a", "price": 157.96}, {"id": "b", "price": 299.62}],
        "offers": [{"id": "x", "price": 205.6}, {"id": "y", "price": 62.73}],
    }
    ctx = Ctx({"old": ["a", "b"], "new": ["x", "y"]}, pre, {}, index=Index())
    traced = 0 + (205.6 - 157.96)
    traced = traced + (62.73 - 299.62)
    assert traced == -189.25000000000003 != (205.6 + 62.73) - (157.96 + 299.62)
    found = [f for f in formulas(traced, ctx) if "add" in f and f.get("raw")]
    assert found and all(numeric_value(f, ctx) == traced for f in found), found


def test_a_copied_value_comes_from_a_field_of_its_own_name_first() -> None:
    """One traced card change, where the seat's fare equals what was paid: the new entries'
    ``amount`` is read from the first entry's ``amount``, not from the seat's ``fare`` that
    happens to be equal, so a booking paid another sum is charged that sum."""
    fare = FARES["14C"]
    learned = learn_ops([_example(*_move_card("B1", fare, "card-1", "card-2"))])
    assert learned.unexplained == []
    reading = describe_op(learned.ops[0])
    assert "self.ledger.0.amount" in reading and "fare" not in reading, reading
    pre, post, args = _move_card("B8", fare + 250, "card-80", "card-81")
    assert _apply(learned.ops, pre, args) == post


REAL = Path(__file__).resolve().parents[2] / "data" / "real_traces"


def test_a_real_write_is_learned_whatever_the_order_of_its_calls() -> None:
    """τ²-bench retail's item change (gpt-5's runs, ``data/real_traces``) replaces the named
    items of an order by the new ones, priced from the catalogue. In the runs' own order the
    first calls propose that rule; in reverse order their proposals all fail a later call,
    and the rule is proposed only by calls after them. It is learned either way."""
    lines = (REAL / "retail_gpt5.jsonl").read_text(encoding="utf-8").splitlines()
    for ordered in (lines, lines[::-1]):
        world = build_world(parse_traces("\n".join(ordered)))
        effects = world.tools["modify_pending_order_items"].transition
        assert effects is not None
        (order,) = [e for e in effects.effects if e.binding.arg == "order_id"]
        assert "items" not in order.unexplained and not order.unexplained, order.unexplained
