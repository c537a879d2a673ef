"""A world learns writes that create entities: a help desk that opens tickets.

Another domain than the retail corpus (which creates nothing): ``open_ticket`` makes a ticket
under an id the backend draws (``TK-`` and five digits), adds the id to the customer's list,
and answers the new ticket; later calls read it, add notes to it and close it. The world never
sees how the backend draws ids, only the tickets it made; it must answer a run it never saw as
the backend does, but under ids of its own, and replay a recorded trajectory under the
trajectory's own ids, so that its end state can be checked against a reference that names the
new ticket only as ``new:open_ticket:1``.
"""

from __future__ import annotations

import copy
import json
import random
import re
from typing import Any

import pytest

from judge_service.episodes.episode import act, finish, script_for, start
from judge_service.forge.end_states import goal_outcome
from judge_service.traces.calls import ToolCall, tool_calls
from judge_service.traces.conversation import parse_traces
from judge_service.traces.effects import classify_tools
from judge_service.traces.entities import answer_entities
from judge_service.world.build import build_world
from judge_service.world.fresh import new_id
from judge_service.world.model import Call
from judge_service.world.verify import verify
from judge_service.world.world import World
from tests.world_support import exchange, fuzz_calls

CUSTOMERS = {
    f"C-{n}": {"customer_id": f"C-{n}", "name": name, "plan": plan, "tickets": []}
    for n, name, plan in (
        (1, "Ines Duarte", "pro"),
        (2, "Tomas Berg", "free"),
        (3, "Mei Lin", "pro"),
        (4, "Omar Haddad", "team"),
        (5, "Zoe Park", "free"),
    )
}


class HelpDesk:
    """The real backend; its id drawing is its own business."""

    def __init__(self, seed: str) -> None:
        self.customers = copy.deepcopy(CUSTOMERS)
        self.tickets: dict[str, dict[str, Any]] = {}
        self.rng = random.Random(seed)

    def call(self, name: str, args: dict[str, Any]) -> str:
        if name == "get_customer":
            found = self.customers.get(args["customer_id"])
            return json.dumps(found) if found else "Error: customer not found"
        if name == "open_ticket":
            customer = self.customers.get(args["customer_id"])
            if customer is None:
                return "Error: customer not found"
            number = f"TK-{self.rng.randrange(10000, 99999)}"
            ticket = {
                "ticket_id": number,
                "customer_id": args["customer_id"],
                "subject": args["subject"],
                "priority": args["priority"],
                "status": "open",
                "notes": [],
            }
            self.tickets[number] = ticket
            customer["tickets"].append(number)
            return json.dumps(ticket)
        ticket = self.tickets.get(args.get("ticket_id", ""))
        if ticket is None:
            return "Error: ticket not found"
        if name == "add_note":
            ticket["notes"].append({"text": args["text"]})
        elif name == "close_ticket":
            ticket["status"] = "closed"
        return json.dumps(ticket)


def _tool(name: str, **props: str) -> dict[str, Any]:
    properties = {p: {"type": "string", "description": d} for p, d in props.items()}
    return {
        "type": "function",
        "function": {
            "name": name,
            "description": name.replace("_", " "),
            "parameters": {"type": "object", "properties": properties, "required": list(props)},
        },
    }


TOOLS = [
    _tool("get_customer", customer_id="the customer"),
    _tool("open_ticket", customer_id="the customer", subject="what", priority="low|high"),
    _tool("get_ticket", ticket_id="the ticket"),
    _tool("add_note", ticket_id="the ticket", text="the note"),
    _tool("close_ticket", ticket_id="the ticket"),
]

NEW = "<new>"  # a script's stand-in for the id the last open_ticket got

SCRIPTS: dict[str, list[tuple[str, dict[str, Any]]]] = {
    "desk-1": [
        ("get_customer", {"customer_id": "C-1"}),
        ("open_ticket", {"customer_id": "C-1", "subject": "Login fails", "priority": "high"}),
        ("get_customer", {"customer_id": "C-1"}),
        ("add_note", {"ticket_id": NEW, "text": "Reset the password link."}),
    ],
    "desk-2": [
        ("open_ticket", {"customer_id": "C-2", "subject": "Invoice copy", "priority": "low"}),
        ("get_ticket", {"ticket_id": NEW}),
        ("close_ticket", {"ticket_id": NEW}),
    ],
    "desk-3": [
        ("get_customer", {"customer_id": "C-3"}),
        ("open_ticket", {"customer_id": "C-3", "subject": "Export is slow", "priority": "low"}),
        ("add_note", {"ticket_id": NEW, "text": "Happens on large projects."}),
        ("get_customer", {"customer_id": "C-3"}),
    ],
    "desk-4": [
        ("open_ticket", {"customer_id": "C-1", "subject": "Add a seat", "priority": "low"}),
        ("get_customer", {"customer_id": "C-1"}),
        ("close_ticket", {"ticket_id": NEW}),
        ("get_ticket", {"ticket_id": "TK-00000"}),
    ],
    "desk-5": [
        ("get_customer", {"customer_id": "C-9"}),
        ("open_ticket", {"customer_id": "C-2", "subject": "Refund please", "priority": "high"}),
        ("get_ticket", {"ticket_id": NEW}),
    ],
}


def conversation(trace_id: str, calls: list[tuple[str, dict[str, Any]]]) -> dict[str, Any]:
    desk, last = HelpDesk(trace_id), ""
    messages: list[dict[str, Any]] = [
        {"role": "system", "content": "You are the help desk of Acme Cloud."},
        {"role": "user", "content": "Hi, I need help with my account."},
    ]
    for index, (name, args) in enumerate(calls):
        args = {k: last if v == NEW else v for k, v in args.items()}
        answer = desk.call(name, args)
        if name == "open_ticket" and not answer.startswith("Error"):
            last = json.loads(answer)["ticket_id"]
        messages += exchange(f"{trace_id}-{index}", name, args, answer)
    messages.append({"role": "assistant", "content": "Done. Anything else?"})
    return {"id": trace_id, "messages": messages, "tools": TOOLS, "metadata": {}}


@pytest.fixture(scope="module")
def world() -> World:
    text = "\n".join(json.dumps(conversation(t, c)) for t, c in SCRIPTS.items())
    return build_world(parse_traces(text))


def test_the_write_that_creates_is_learned_with_the_shape_of_its_ids(world: World) -> None:
    transition = world.tools["open_ticket"].transition
    assert transition is not None and transition.creates and transition.usable
    assert all(re.fullmatch(r"TK-\d{5}", str(i)) for i in transition.new_ids)
    assert len(transition.new_ids) >= 3
    customer = [e for e in transition.effects if e.binding.arg == "customer_id"]
    assert customer and not customer[0].unexplained  # the id appended to the customer's list


def test_a_run_the_world_never_saw_is_answered_as_the_backend_does_under_new_ids(
    world: World,
) -> None:
    desk, state = HelpDesk("held-out"), world.task_state([])
    opened = Call(
        name="open_ticket",
        arguments={"customer_id": "C-3", "subject": "API keys", "priority": "high"},
    )
    answer = world.answer(state, opened)
    real = json.loads(desk.call(opened.name, dict(opened.arguments)))
    assert answer.path == "transition" and not answer.error
    made = answer.payload
    assert re.fullmatch(r"TK-\d{5}", made["ticket_id"])
    assert f"ticket_id={made['ticket_id']}" not in state  # names nothing that was there
    assert {**made, "ticket_id": real["ticket_id"]} == real
    state = answer.state_after
    customer = world.answer(state, Call(name="get_customer", arguments={"customer_id": "C-3"}))
    assert customer.path == "read" and customer.payload["tickets"] == [made["ticket_id"]]
    noted = world.answer(
        state, Call(name="add_note", arguments={"ticket_id": made["ticket_id"], "text": "asap"})
    )
    assert noted.path == "transition" and noted.payload["notes"] == [{"text": "asap"}]
    read = world.answer(
        noted.state_after, Call(name="get_ticket", arguments={"ticket_id": made["ticket_id"]})
    )
    assert read.path == "read" and read.payload == noted.payload


def test_new_ids_are_the_same_for_the_same_call_and_never_reused(world: World) -> None:
    state = world.task_state([])
    call = Call(
        name="open_ticket", arguments={"customer_id": "C-1", "subject": "Hi", "priority": "low"}
    )
    first = world.answer(state, call)
    again = world.answer(state, call)
    assert first.payload["ticket_id"] == again.payload["ticket_id"]  # an episode replays
    second = world.answer(first.state_after, call)  # the same call once more: another ticket
    assert second.payload["ticket_id"] != first.payload["ticket_id"]
    assert second.state_after["customer_id=C-1"]["tickets"] == [
        first.payload["ticket_id"],
        second.payload["ticket_id"],
    ]


def _recorded(calls: list[tuple[str, dict[str, Any]]]) -> list[dict[str, Any]]:
    return conversation("recorded-elsewhere", calls)["messages"]


def test_verify_replays_a_recorded_trajectory_under_its_own_ids(world: World) -> None:
    reference = {
        "new:open_ticket:1": {
            "customer_id": "C-5",
            "subject": "Cancel my plan",
            "priority": "high",
            "status": "closed",
            "notes": [{"text": "Confirmed by phone."}],
        }
    }
    good = _recorded(
        [
            ("get_customer", {"customer_id": "C-5"}),
            (
                "open_ticket",
                {"customer_id": "C-5", "subject": "Cancel my plan", "priority": "high"},
            ),
            ("add_note", {"ticket_id": NEW, "text": "Confirmed by phone."}),
            ("close_ticket", {"ticket_id": NEW}),
        ]
    )
    verdict, calls = verify(world, world.task_state([]), good, reference)
    assert [c["path"] for c in calls] == ["read", "transition", "transition", "transition"]
    assert not any(c["error"] for c in calls)
    assert verdict.reached is True and verdict.diff == []
    wrong = _recorded(
        [
            ("open_ticket", {"customer_id": "C-5", "subject": "Cancel my plan", "priority": "low"}),
            ("add_note", {"ticket_id": NEW, "text": "Confirmed by phone."}),
        ]
    )
    verdict, _ = verify(world, world.task_state([]), wrong, reference)
    assert verdict.reached is False
    assert {d["field"] for d in verdict.diff} >= {"priority", "status"}


def test_a_world_that_creates_round_trips_through_json(world: World) -> None:
    loaded = World.model_validate_json(world.model_dump_json())
    assert loaded == world
    call = Call(
        name="open_ticket", arguments={"customer_id": "C-3", "subject": "x", "priority": "low"}
    )
    state = world.task_state([])
    assert loaded.answer(state, call).payload == world.answer(state, call).payload


def test_the_forge_keys_a_created_ticket_as_new_not_as_its_customer() -> None:
    """The ticket names its customer; before the object's own first id counted, the forge
    (and the world) keyed it ``customer_id=C-2`` and merged it into the customer."""
    trace = parse_traces(json.dumps(conversation("desk-2", SCRIPTS["desk-2"])))[0]
    calls = tool_calls(trace)
    opened = next(c for c in calls if c.name == "open_ticket")
    assert [k.split("=")[0] for k, _ in answer_entities(opened)] == ["ticket_id"]
    writes = {"open_ticket", "add_note", "close_ticket"}
    outcome = goal_outcome(calls, writes, 0, len(trace.messages))
    assert list(outcome.end_state) == ["new:open_ticket:1"]
    ticket = outcome.end_state["new:open_ticket:1"]
    assert ticket["status"] == "closed" and ticket["customer_id"] == "C-2"
    assert "ticket_id" not in ticket  # the fresh id is left out, so other runs agree


def _desk_run(trace_id: str, opening: str, priority: str, bye: str) -> dict[str, Any]:
    """A run with user turns: a login ticket opened for C-1, a note added."""
    desk, number = HelpDesk(trace_id), ""
    messages: list[dict[str, Any]] = [
        {"role": "system", "content": "You are the help desk of Acme Cloud."},
        {"role": "user", "content": opening},
        {"role": "assistant", "content": "Sorry to hear that. Which customer id is it?"},
        {"role": "user", "content": "C-1."},
    ]
    steps: list[tuple[str, dict[str, Any]]] = [
        ("get_customer", {"customer_id": "C-1"}),
        ("open_ticket", {"customer_id": "C-1", "subject": "Login fails", "priority": priority}),
        ("add_note", {"ticket_id": NEW, "text": "Since the update."}),
    ]
    for index, (name, args) in enumerate(steps):
        args = {k: number if v == NEW else v for k, v in args.items()}
        answer = desk.call(name, args)
        number = json.loads(answer)["ticket_id"] if name == "open_ticket" else number
        messages += exchange(f"{trace_id}-{index}", name, args, answer)
    messages += [
        {"role": "assistant", "content": f"Ticket {number} is open. Anything else?"},
        {"role": "user", "content": bye},
    ]
    return {"id": trace_id, "messages": messages, "tools": TOOLS, "metadata": {}}


def test_an_episode_that_opens_the_ticket_reaches_a_reference_with_a_new_entity() -> None:
    from tests.episodes.test_world_episode import _call, _calls, _say, _tasks

    runs = [
        _desk_run("login-1", "Hi, I can't log in to my account.", "high", "No, thanks!"),
        _desk_run("login-2", "Hi, I can't log in to my account!", "high", "That's all."),
        _desk_run("login-3", "Hello, I can't log in to my account.", "high", "Bye."),
    ]
    corpus = "\n".join(json.dumps(conversation(t, c)) for t, c in SCRIPTS.items())
    traces = parse_traces(corpus + "\n" + "\n".join(json.dumps(r) for r in runs))
    world = build_world(traces)
    (task,) = [t for t in _tasks(traces) if t["source"]["traces"][0].startswith("login")]
    assert sorted(task["source"]["traces"]) == ["login-1", "login-2", "login-3"]
    assert list(task["end_state"]) == ["new:open_ticket:1"]
    script = script_for(task, {t.id: t for t in traces}, seed=0)

    def play(priority: str) -> tuple[Any, Any]:
        episode, _ = start(world, script)
        episode, _ = act(world, script, episode, _say("Which customer id is it?"))
        opened = _call("open_ticket", 1, customer_id="C-1", subject="Login fails")
        opened["function"]["arguments"] = json.dumps(
            {"customer_id": "C-1", "subject": "Login fails", "priority": priority}
        )
        episode, seen = act(world, script, episode, _calls(opened))
        number = json.loads(seen[-1]["content"])["ticket_id"]  # the agent reads the new id
        note = _call("add_note", 2, ticket_id=number, text="Since the update.")
        episode, seen = act(world, script, episode, _calls(note), end=True)
        assert json.loads(seen[-1]["content"])["notes"] == [{"text": "Since the update."}]
        return episode, finish(world, script, episode)

    episode, verdict = play("high")
    assert verdict.reward == 1.0 and verdict.diff == []
    assert [a["path"] for a in episode.answers] == ["transition", "transition"]
    _, verdict = play("low")
    assert verdict.reward == 0.0
    assert [(d["entity"], d["field"]) for d in verdict.diff] == [("new:open_ticket:1", "priority")]


def test_the_same_call_making_other_tickets_in_other_runs_is_evidence_of_a_write() -> None:
    """No run reads a ticket back after opening it; yet the same arguments gave a new
    ticket id in each run, which a read would not do."""
    runs = [
        _desk_run(f"login-{n}", "Hi, I can't log in to my account.", "high", "Bye.")
        for n in (1, 2, 3)
    ]
    traces = parse_traces("\n".join(json.dumps(r) for r in runs))
    effects = classify_tools([tool_calls(t) for t in traces])
    assert effects["open_ticket"].effect == "write"
    assert effects["open_ticket"].source == "evidence" and effects["open_ticket"].changed >= 1
    assert effects["get_customer"].effect == "read"


@pytest.mark.parametrize(
    "tool, args, answer, key",
    [
        (
            "open_ticket",
            {"customer_id": "C-4"},
            {"ticket_id": "T9", "customer_id": "C-4"},
            "ticket_id=T9",
        ),
        (
            "book_trip",
            {"user_id": "U-1"},
            {"booking_id": "AB12CD", "user_id": "U-1"},
            "booking_id=AB12CD",
        ),
        ("create_record", {"customer_id": "C-4"}, {"id": "R9", "customer_id": "C-4"}, "id=R9"),
        (
            "get_customer_tickets",
            {"customer_id": "C-4"},
            {"ticket_id": "T1", "customer_id": "C-4"},
            "ticket_id=T1",
        ),
        # keys in alphabetical order: the order the call named is still the order
        ("get_order", {"order_id": "O1"}, {"customer_id": "C-4", "order_id": "O1"}, "order_id=O1"),
        # nothing says the object is the ticket: the id the call passed names it, as before
        (
            "lookup",
            {"customer_id": "C-4"},
            {"ticket_id": "T1", "customer_id": "C-4"},
            "customer_id=C-4",
        ),
        # a name that says nothing, an object in its backend's order: its first id is its own
        (
            "op_7",
            {"customer_id": "C-4"},
            {"ticket_id": "T1", "customer_id": "C-4", "subject": "no signal"},
            "ticket_id=T1",
        ),
        # the same fields sorted by name say nothing by their order
        (
            "op_7",
            {"customer_id": "C-4"},
            {"customer_id": "C-4", "subject": "no signal", "ticket_id": "T1"},
            "customer_id=C-4",
        ),
    ],
)
def test_an_object_is_keyed_by_its_own_id_when_the_tool_is_about_it(
    tool, args, answer, key
) -> None:
    call = ToolCall(0, 1, tool, args, json.dumps(answer), answer, 2, False)
    assert [k for k, _ in answer_entities(call)] == [key]


def test_a_new_id_is_found_even_when_every_id_of_the_shape_is_taken() -> None:
    taken = {f"code={chr(65 + i)}{d}": {} for i in range(26) for d in range(10)}
    call = Call(name="make_code", arguments={})
    made = new_id(["A1", "B2"], "code", taken, call)
    assert f"code={made}" not in taken and re.fullmatch(r"[A-Z]\d+", made)
    number = new_id([4012, 4013], "code", {}, call)
    assert isinstance(number, int) and 0 <= number <= 9999  # numbers stay numbers, 4 digits


def test_fuzzed_calls_of_a_world_that_creates_never_raise(world: World) -> None:
    names = ["open_ticket", "add_note", "close_ticket", "get_ticket", "get_customer"]
    keys = ["customer_id", "ticket_id", "subject", "priority", "text", "@new"]
    fuzz_calls(world, names, keys, ["C-1", "C-9", "TK-00000", ["C-1"]], 200)
