"""Shapes seen in real traces of other domains: a read that shows what a write changed, and a
user with tools of their own."""

from __future__ import annotations

import json
from typing import Any

from judge_service.forge.calls import tool_calls
from judge_service.forge.effects import classify_tools, write_tools
from judge_service.forge.end_states import goal_outcome
from judge_service.forge.traces import Trace


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
