"""Who asks and for what: the person a lookup found, the ids and values the user brought."""

from __future__ import annotations

import json
from typing import Any

from judge_service.traces.calls import tool_calls
from judge_service.traces.conversation import Trace
from judge_service.traces.goals import goals
from judge_service.traces.identity import who
from judge_service.traces.requested import requested, tool_values


def _call(call_id: str, name: str, args: dict[str, Any]) -> dict[str, Any]:
    function = {"name": name, "arguments": json.dumps(args)}
    return {
        "role": "assistant",
        "content": None,
        "tool_calls": [{"id": call_id, "function": function}],
    }


def _answer(call_id: str, payload: Any) -> dict[str, Any]:
    text = payload if isinstance(payload, str) else json.dumps(payload)
    return {"role": "tool", "tool_call_id": call_id, "content": text}


def _trace(messages: list[dict[str, Any]]) -> Trace:
    return Trace(id="t", line=1, messages=messages, tools=None, metadata={})


def test_a_lookup_that_reads_back_the_record_the_user_named_finds_no_one():
    trace = _trace(
        [
            {"role": "user", "content": "My booking BK-4471 was charged twice. I'm Ada Byron."},
            _call("1", "open_booking", {"booking_ref": "BK-4471"}),
            _answer("1", {"booking_ref": "BK-4471", "owner": "ab_17", "state": "paid"}),
            _call("2", "person_by_name", {"name": "Ada Byron"}),
            _answer("2", "ab_17"),
        ]
    )
    # the first lookup with the user's words answered the booking the user named itself
    assert who(trace, tool_calls(trace)) == "who:ab_17"


def test_ids_the_agent_showed_before_the_user_said_them_are_echoes_not_the_goals():
    trace = _trace(
        [
            {"role": "user", "content": "I want to swap a lamp from order Q-88120."},
            {"role": "assistant", "content": "Options: item 5520017 or item 6630018. Which?"},
            {"role": "user", "content": "Item 5520017 please, for Q-88120."},
        ]
    )
    (goal,) = goals(trace)
    assert goal.entities == ["Q-88120"]


def test_the_values_a_user_brought_that_a_tool_knows_are_what_the_goal_asks_for():
    messages = [
        {"role": "user", "content": "Please swap my vacuum for the canister one."},
        _call("1", "catalog", {"product": "vacuum"}),
        _answer("1", {"variants": [{"type": "canister"}, {"type": "robotic"}]}),
        {"role": "assistant", "content": "There is a robotic one or a canister one."},
        {"role": "user", "content": "Robotic is not what I want. Canister, as I said."},
    ]
    trace = _trace(messages)
    values = tool_values(tool_calls(trace))
    # "robotic" was shown by the agent before the user said it: an echo, not a request;
    # "swap" and "please" are words no tool holds
    assert requested(trace, values, 0, len(messages)) == [
        "said:product=vacuum",
        "said:type=canister",
    ]
    # a later goal's turns are its own: the first turn's values are not in them
    assert requested(trace, values, 4, len(messages)) == []
