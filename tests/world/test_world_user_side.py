"""Users with tools: the world learns the tools the user calls on their own side.

A small corpus of another shape than retail: a support agent reads the account; the user,
told what to do, checks and switches a setting on their own device. Then the real telecom
runs of τ²-bench (``data/real_traces``), where the user holds the phone: each run verified
against the reference of the task that run alone formed.
"""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import pytest

from judge_service.traces.conversation import parse_traces
from judge_service.world.build import build_world
from judge_service.world.lookup import merge
from judge_service.world.model import Call
from judge_service.world.user_side import SIDE_KEY, done_writes, side_fields, write_mark
from judge_service.world.verify import verify
from judge_service.world.world import World

REAL = Path(__file__).resolve().parents[2] / "data" / "real_traces"
OFF = "Radio: OFF\nSignal: none"
ON = "Radio: ON\nSignal: good"


def _call(call_id: str, name: str, args: dict[str, Any]) -> dict[str, Any]:
    return {
        "id": call_id,
        "type": "function",
        "function": {"name": name, "arguments": json.dumps(args)},
    }


def run(trace_id: str, fixed: bool) -> dict[str, Any]:
    """The agent reads the account and asks the user to check, then (``fixed``) to switch
    the radio on; the user does it on their device."""
    messages: list[dict[str, Any]] = [
        {"role": "user", "content": "My phone has no signal. Account AC-7."},
        {
            "role": "assistant",
            "content": None,
            "tool_calls": [_call("a1", "get_account", {"account_id": "AC-7"})],
        },
        {
            "role": "tool",
            "tool_call_id": "a1",
            "content": json.dumps({"account_id": "AC-7", "plan": "basic"}),
        },
        {"role": "assistant", "content": "Please run check_status on your phone."},
        {"role": "user", "content": None, "tool_calls": [_call("u1", "check_status", {})]},
        {"role": "tool", "tool_call_id": "u1", "content": OFF},
        {"role": "user", "content": "It says the radio is off."},
    ]
    if fixed:
        messages += [
            {"role": "assistant", "content": "Please use toggle_radio, then check_status again."},
            {"role": "user", "content": None, "tool_calls": [_call("u2", "toggle_radio", {})]},
            {"role": "tool", "tool_call_id": "u2", "content": "Radio is now ON."},
            {"role": "user", "content": None, "tool_calls": [_call("u3", "check_status", {})]},
            {"role": "tool", "tool_call_id": "u3", "content": ON},
            {"role": "user", "content": "It works now, thanks! ###STOP###"},
        ]
    return {"id": trace_id, "messages": messages}


@pytest.fixture(scope="module")
def world() -> World:
    runs = [run(f"r{i}", fixed=i % 2 == 0) for i in range(4)]
    return build_world(parse_traces("\n".join(json.dumps(r) for r in runs)))


def test_the_users_tools_are_learned_as_the_users(world: World) -> None:
    assert world.tools["toggle_radio"].caller == "user"
    assert world.tools["toggle_radio"].effect == "write"
    assert world.tools["check_status"].caller == "user"
    assert world.tools["get_account"].caller == "agent"
    assert set(world.agent_tools()) == {"get_account"}
    report = world.report()
    assert report["toggle_radio"]["caller"] == "user"
    assert report["check_status"]["side_answers"] == 2  # before the fix and after
    assert "caller" not in report["get_account"]


def test_a_user_read_answers_by_the_writes_done_before(world: World) -> None:
    check = Call(name="check_status", arguments={})
    state = world.task_state([])
    assert world.answer(state, check, done=[]).text == OFF
    toggled = [write_mark("toggle_radio", {})]
    assert world.answer(state, check, done=toggled).text == ON
    toggle = world.answer(state, Call(name="toggle_radio", arguments={}), done=[])
    assert toggle.text == "Radio is now ON." and not toggle.error


def test_the_users_side_is_an_entity_its_answers_show() -> None:
    assert side_fields("check_status", OFF, read=True) == {"radio": "OFF", "signal": "none"}
    assert side_fields("check_battery", "It is at 80%.", read=True) == {
        "check_battery": "It is at 80%."
    }
    assert side_fields("toggle_radio", "Radio is now ON.", read=False) == {"radio": "ON"}
    assert side_fields("reboot", "Restarting services...", read=False) == {}
    assert side_fields("check_saver", "Data Saver mode is ON (limits data).", read=True) == {
        "data saver mode": "ON"
    }
    assert side_fields("open_url", "See http://x.org/a for help", read=True) == {
        "open_url": "See http://x.org/a for help"
    }


def test_each_run_starts_from_its_own_side_and_a_read_answers_by_it() -> None:
    """A run whose phone was fine from the start: its task starts with the radio on, and a
    check there answers as that side shows, whichever trace came first."""
    broken = run("broken", fixed=False)
    fine = run("fine", fixed=False)
    fine["messages"][5]["content"] = ON
    world = build_world(parse_traces("\n".join(json.dumps(r) for r in (broken, fine))))
    assert world.sides == {
        "broken": {"radio": "OFF", "signal": "none"},
        "fine": {"radio": "ON", "signal": "good"},
    }
    check = Call(name="check_status", arguments={})
    for trace_id, shown in (("broken", OFF), ("fine", ON)):
        state = world.task_state([trace_id])
        assert state[SIDE_KEY] == world.sides[trace_id]
        assert world.answer(state, check, done=[]).text == shown
    assert SIDE_KEY not in world.task_state([])


def test_a_users_call_changes_their_side(world: World) -> None:
    """A write that says what it set changes that field; a read shows the rest."""
    state = world.task_state(["r0"])
    assert state[SIDE_KEY] == {"radio": "OFF", "signal": "none"}
    toggle = world.answer(state, Call(name="toggle_radio", arguments={}), done=[])
    assert toggle.state_after[SIDE_KEY] == {"radio": "ON", "signal": "none"}
    assert state[SIDE_KEY] == {"radio": "OFF", "signal": "none"}  # the state is not changed
    check = world.answer(
        toggle.state_after,
        Call(name="check_status", arguments={}),
        done=[write_mark("toggle_radio", {})],
    )
    assert check.state_after[SIDE_KEY] == {"radio": "ON", "signal": "good"}


def test_done_writes_are_the_successful_ones() -> None:
    records = [
        {"tool": "toggle_radio", "arguments": {}, "write": True, "path": "replay"},
        {"tool": "toggle_radio", "arguments": {}, "write": True, "error": True, "path": "read"},
        {"tool": "check_status", "arguments": {}, "write": False, "path": "replay"},
        {"tool": "set_mode", "arguments": {"m": 1}, "write": True, "path": "model_needed"},
    ]
    assert done_writes(records) == ["toggle_radio:{}"]


def test_verify_counts_the_users_own_writes(world: World) -> None:
    reference = {"write:toggle_radio": ["{}"]}
    start = world.task_state([])
    fixed, _ = verify(world, start, run("x", fixed=True)["messages"], reference)
    assert fixed.reward == 1.0, fixed.diff
    unfixed, _ = verify(world, start, run("y", fixed=False)["messages"], reference)
    assert unfixed.reward == 0.0
    assert unfixed.diff[0]["entity"] == "write:toggle_radio"


def _forged(path: Path) -> tuple[list[dict[str, Any]], Any]:
    from judge_service.forge.trace_tasks import forge_traces

    rows = [json.loads(line) for line in path.read_text(encoding="utf-8").splitlines() if line]
    bare = "\n".join(json.dumps({"id": r["id"], "messages": r["messages"]}) for r in rows)
    return rows, forge_traces(parse_traces(bare))


def test_real_telecom_runs_verify_against_their_own_reference() -> None:
    """A successful run that alone formed its task reaches its own reference: its writes
    are mostly the user's own (toggling, rebooting, granting a permission)."""
    rows, forged = _forged(REAL / "telecom_gpt4o.jsonl")
    traces = parse_traces(
        "\n".join(json.dumps({"id": r["id"], "messages": r["messages"]}) for r in rows)
    )
    world = build_world(traces)
    users = {n for n, t in world.tools.items() if t.caller == "user"}
    assert {"toggle_airplane_mode", "reboot_device", "can_send_mms"} <= users
    assert "get_customer_by_phone" not in users
    messages = {r["id"]: r["messages"] for r in rows}
    passed = {r["id"] for r in rows if r["metadata"]["reward"] >= 1}
    alone = [t for family in forged.families for t in family.tasks if len(t.trace_ids) == 1]
    checked = [(t, t.trace_ids[0]) for t in alone if t.trace_ids[0] in passed]
    assert len(checked) >= 8
    for task, trace_id in checked:
        start = world.task_state(task.trace_ids)
        verdict, _ = verify(world, start, messages[trace_id], task.consensus.reference)
        assert verdict.reward == 1.0, (trace_id, verdict.diff[:3])


def test_a_view_that_shows_other_fields_beside_some_keeps_the_rest_of_the_entity() -> None:
    """A usage view of a line (some of its fields, as text, and fields of its own) leaves
    the line's other fields and typed values as they were; a view of every field is the
    entity."""
    line = {"line_id": "L1", "status": "Active", "data_used_gb": 3.2, "roaming": False}
    usage = {"line_id": "L1", "data_used_gb": "3.2", "data_limit_gb": "5.0"}
    seen = merge(line, usage)
    assert seen == {**line, "data_limit_gb": "5.0"}
    assert seen["data_used_gb"] == 3.2  # the same value written as text is no change
    # a changed value is taken as shown, and a fuller view replaces the entity
    assert merge(line, {**usage, "data_used_gb": "4.0"})["data_used_gb"] == "4.0"
    fuller = {**line, "roaming": True, "plan": "P1"}
    assert merge(line, fuller) == fuller
    assert merge(line, {"line_id": "L1", "status": "Suspended"}) == {**line, "status": "Suspended"}
