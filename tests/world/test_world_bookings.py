"""A world learns a booking: a new entity whose list is built from a list argument, with
fares looked up by the date and cabin the call names.

Another domain than the retail corpus: ``book_trip(user_id, cabin, flights, passengers)``
makes a booking under an id the backend draws, with one entry per flight the call lists
(its number and date from the call, its origin and destination from the flight, its fare
from the flight's ``dates[<date>].fares[<cabin>]``), and adds the booking to the user. The
world sees only the traced bookings; it must book a trip it never saw (other flights, dates,
cabin, number of legs) as the backend would, under an id of the same shape.
"""

from __future__ import annotations

import copy
import json
import random
import re
from typing import Any

import pytest

from judge_service.traces.conversation import parse_traces
from judge_service.world.build import build_world
from judge_service.world.describe import describe_op
from judge_service.world.model import Call
from judge_service.world.world import World
from tests.world_support import exchange, fuzz_calls


def _dates(base: int) -> dict[str, Any]:
    return {
        f"2025-03-0{d}": {
            "status": "available",
            "fares": {"economy": base + d, "business": 3 * base},
        }
        for d in (1, 2, 3)
    }


FLIGHTS = {
    "AC101": {
        "flight_number": "AC101",
        "origin": "YUL",
        "destination": "YYZ",
        "dates": _dates(120),
    },
    "AC202": {
        "flight_number": "AC202",
        "origin": "YYZ",
        "destination": "YVR",
        "dates": _dates(260),
    },
    "AC303": {
        "flight_number": "AC303",
        "origin": "YVR",
        "destination": "YUL",
        "dates": _dates(310),
    },
}
USERS = {
    f"U-{n}": {"user_id": f"U-{n}", "name": name, "bookings": []}
    for n, name in ((1, "Lea Roy"), (2, "Sam Odu"), (3, "Ana Sol"), (4, "Kim Lee"))
}


class Airline:
    def __init__(self, seed: str) -> None:
        self.users, self.bookings = copy.deepcopy(USERS), {}
        self.rng = random.Random(seed)

    def call(self, name: str, args: dict[str, Any]) -> str:
        if name == "get_user":
            found = self.users.get(args["user_id"])
            return json.dumps(found) if found else "Error: user not found"
        if name == "get_flight":
            found = FLIGHTS.get(args["flight_number"])
            return json.dumps(found) if found else "Error: flight not found"
        if name == "get_booking":
            found = self.bookings.get(args["booking_id"])
            return json.dumps(found) if found else "Error: booking not found"
        assert name == "book_trip"
        letters = "ABCDEFGHJKLMNPQRSTUVWXYZ23456789"
        number = "".join(self.rng.choice(letters) for _ in range(6))
        legs = []
        for leg in args["flights"]:
            flight = FLIGHTS[leg["flight_number"]]
            fare = flight["dates"][leg["date"]]["fares"][args["cabin"]]
            legs.append(
                {
                    "flight_number": leg["flight_number"],
                    "date": leg["date"],
                    "origin": flight["origin"],
                    "destination": flight["destination"],
                    "fare": fare,
                }
            )
        booking = {
            "booking_id": number,
            "user_id": args["user_id"],
            "cabin": args["cabin"],
            "flights": legs,
            "passengers": args["passengers"],
            "status": "booked",
        }
        self.bookings[number] = booking
        self.users[args["user_id"]]["bookings"].append(number)
        return json.dumps(booking)


def _leg(number: str, day: int) -> dict[str, str]:
    return {"flight_number": number, "date": f"2025-03-0{day}"}


def _book(user: str, cabin: str, legs: list[dict[str, str]], *names: str) -> tuple[str, dict]:
    passengers = [{"name": n} for n in names]
    return "book_trip", {"user_id": user, "cabin": cabin, "flights": legs, "passengers": passengers}


SCRIPTS: dict[str, list[tuple[str, dict[str, Any]]]] = {
    "air-1": [
        ("get_user", {"user_id": "U-1"}),
        ("get_flight", {"flight_number": "AC101"}),
        _book("U-1", "economy", [_leg("AC101", 1)], "Lea Roy"),
        ("get_user", {"user_id": "U-1"}),
    ],
    "air-2": [
        ("get_user", {"user_id": "U-2"}),
        ("get_flight", {"flight_number": "AC101"}),
        ("get_flight", {"flight_number": "AC202"}),
        _book("U-2", "business", [_leg("AC101", 2), _leg("AC202", 3)], "Sam Odu", "Ivy Odu"),
    ],
    "air-3": [
        ("get_user", {"user_id": "U-3"}),
        ("get_flight", {"flight_number": "AC303"}),
        _book("U-3", "economy", [_leg("AC303", 3)], "Ana Sol"),
        ("get_user", {"user_id": "U-3"}),
    ],
    "air-4": [
        ("get_user", {"user_id": "U-4"}),
        ("get_flight", {"flight_number": "AC202"}),
        ("get_flight", {"flight_number": "AC303"}),
        _book("U-4", "economy", [_leg("AC202", 1), _leg("AC303", 2)], "Kim Lee"),
    ],
}


def _trace(trace_id: str, calls: list[tuple[str, dict[str, Any]]]) -> dict[str, Any]:
    airline = Airline(trace_id)
    messages: list[dict[str, Any]] = [{"role": "user", "content": "I'd like to book a trip."}]
    for index, (name, args) in enumerate(calls):
        messages += exchange(f"{trace_id}-{index}", name, args, airline.call(name, args))
    messages.append({"role": "assistant", "content": "Booked."})
    return {"id": trace_id, "messages": messages, "metadata": {}}


@pytest.fixture(scope="module")
def world() -> World:
    return build_world(
        parse_traces("\n".join(json.dumps(_trace(t, c)) for t, c in SCRIPTS.items()))
    )


def test_the_booking_is_learned_with_its_legs_built_from_the_flights_it_lists(world) -> None:
    transition = world.tools["book_trip"].transition
    assert transition is not None and transition.creates and transition.usable
    ops = [describe_op(op) for op in transition.effects[0].ops]
    legs = next(op for op in ops if op.startswith("flights"))
    assert "for each elem of args.flights" in legs, legs
    assert "<elem.date>" in legs and "<args.cabin>" in legs, legs  # the fare's lookup


@pytest.mark.parametrize(
    "user, cabin, legs",
    [
        ("U-1", "business", [_leg("AC202", 2)]),  # another flight, date and cabin
        ("U-3", "economy", [_leg("AC101", 3), _leg("AC202", 1), _leg("AC303", 2)]),  # 3 legs
    ],
)
def test_a_trip_never_booked_is_booked_as_the_backend_books_it(world, user, cabin, legs) -> None:
    name, args = _book(user, cabin, legs, "Pat Doe")
    state = world.task_state([])
    answer = world.answer(state, Call(name=name, arguments=args))
    real = json.loads(Airline("held-out").call(name, copy.deepcopy(args)))
    assert answer.path == "transition" and not answer.error, answer
    made = answer.payload
    assert re.fullmatch(r"[A-Z0-9]{6}", made["booking_id"])
    assert {**made, "booking_id": real["booking_id"]} == real
    after = world.answer(answer.state_after, Call(name="get_user", arguments={"user_id": user}))
    assert after.path == "read" and after.payload["bookings"][-1] == made["booking_id"]


def test_fuzzed_bookings_never_raise(world) -> None:
    legs = [[_leg("AC101", 1)], [{"flight_number": 5, "date": []}], [[]], ["AC202"], [{}]]
    values = ["U-1", "economy", "business", "AC303", *legs]
    keys = ["user_id", "cabin", "flights", "passengers", "flight_number", "booking_id"]
    fuzz_calls(world, ["book_trip", "get_user", "get_flight", "get_booking"], keys, values, 200)
