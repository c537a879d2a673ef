"""The retail trace corpus (data/retail): shape, ground truth, determinism and realism."""

from __future__ import annotations

import json
import sys
from collections import Counter
from pathlib import Path

import pytest

RETAIL = Path(__file__).resolve().parents[2] / "data" / "retail"
sys.path.insert(0, str(RETAIL))

import compare_real  # noqa: E402
import generate  # noqa: E402
from retail_tools import WRITE_TOOLS, RetailTools, end_state, load_db  # noqa: E402


def read_jsonl(path: Path) -> list[dict]:
    return [json.loads(x) for x in path.read_text(encoding="utf-8").splitlines() if x.strip()]


@pytest.fixture(scope="module")
def traces() -> list[dict]:
    return read_jsonl(RETAIL / "traces.jsonl")


@pytest.fixture(scope="module")
def truth() -> list[dict]:
    return read_jsonl(RETAIL / "truth.jsonl")


@pytest.fixture(scope="module")
def tasks() -> dict[int, dict]:
    return {t["task_index"]: t for t in generate.load_tasks()}


def calls(trace: dict) -> list[tuple[str, dict, str]]:
    """(name, arguments, answer) for every tool call of a trace."""
    answers = {m["tool_call_id"]: m["content"] for m in trace["messages"] if m["role"] == "tool"}
    out = []
    for message in trace["messages"]:
        for call in message.get("tool_calls") or []:
            fn = call["function"]
            out.append((fn["name"], json.loads(fn["arguments"]), answers[call["id"]]))
    return out


def ok_writes(trace: dict) -> list[tuple[str, dict]]:
    return [
        (n, a) for n, a, ans in calls(trace) if n in WRITE_TOOLS and not ans.startswith("Error")
    ]


def test_corpus_size_goals_and_runs(traces: list[dict], truth: list[dict]) -> None:
    assert len(traces) >= 300
    assert [t["id"] for t in traces] == [t["trace_id"] for t in truth]
    runs = Counter(t["goal_id"] for t in truth)
    assert len(runs) >= 60
    assert set(runs.values()) <= {3, 4, 5}


def test_traces_parse_with_valid_roles_and_matched_calls(traces: list[dict]) -> None:
    schemas = json.loads((RETAIL / "tools.json").read_text(encoding="utf-8"))
    for trace in traces:
        assert set(trace) == {"id", "messages", "tools", "metadata"}
        assert set(trace["metadata"]) == {"outcome", "reward"}
        assert trace["tools"] == schemas
        messages = trace["messages"]
        assert messages[0]["role"] == "system"
        assert {m["role"] for m in messages[1:]} <= {"user", "assistant", "tool"}
        for i, message in enumerate(messages):
            for call in message.get("tool_calls") or []:
                assert len(message["tool_calls"]) == 1 and message["content"] is None
                reply = messages[i + 1]
                assert reply["role"] == "tool" and reply["tool_call_id"] == call["id"]
                assert reply["name"] == call["function"]["name"]
            if message["role"] == "tool":
                assert messages[i - 1].get("tool_calls")


def test_regeneration_is_byte_identical() -> None:
    first = generate.generate(5, 11)
    second = generate.generate(5, 11)
    assert json.dumps(first) == json.dumps(second)
    assert json.dumps(first) != json.dumps(generate.generate(5, 12))


def test_end_states_are_replays(traces: list[dict], truth: list[dict], tasks: dict) -> None:
    db = load_db()
    for trace, row in zip(traces, truth, strict=True):
        task = tasks[int(row["goal_id"].split("-")[1])]
        actions = [(a["name"], a["kwargs"]) for a in task["actions"]]
        assert row["reference_end_state"] == end_state(db, actions)
        assert row["end_state"] == end_state(db, ok_writes(trace))
        success = row["end_state"] == row["reference_end_state"]
        assert (
            row["outcome"] == trace["metadata"]["outcome"] == ("success" if success else "failure")
        )


def test_every_mistake_kind_occurs_with_the_right_outcome(truth: list[dict]) -> None:
    kinds = Counter(t["mistake"] for t in truth)
    for kind in ("wrong_item", "missed_confirmation", "unjustified_write", "false_claim"):
        assert kinds[kind] >= 3, kind
    assert kinds["premature_transfer"] >= 1
    for row in truth:
        if row["mistake"] == "missed_confirmation":
            assert row["outcome"] == "success" and row["policy_violation"]
        elif row["mistake"] is not None:
            assert row["outcome"] == "failure"
    per_goal = Counter((t["goal_id"], t["mistake"]) for t in truth if t["mistake"])
    assert max(per_goal.values()) == 1


def test_false_claim_claims_success_without_the_write(
    traces: list[dict], truth: list[dict], tasks: dict
) -> None:
    runs = [
        (tr, row) for tr, row in zip(traces, truth, strict=True) if row["mistake"] == "false_claim"
    ]
    assert runs
    for trace, row in runs:
        task = tasks[int(row["goal_id"].split("-")[1])]
        assert len(ok_writes(trace)) < len(task["actions"])
        last = [
            m["content"] for m in trace["messages"] if m["role"] == "assistant" and m["content"]
        ]
        assert "Done!" in last[-1] or "updated successfully" in last[-1]
    assert any(not ok_writes(trace) for trace, _ in runs)


def test_some_successful_run_recovers_from_a_tool_error(
    traces: list[dict], truth: list[dict]
) -> None:
    recovered = [
        tr
        for tr, row in zip(traces, truth, strict=True)
        if row["outcome"] == "success" and any(a.startswith("Error") for _, _, a in calls(tr))
    ]
    assert recovered
    identity_retry = [
        tr
        for tr in recovered
        if calls(tr)[0][2].startswith("Error") and calls(tr)[0][0].startswith("find")
    ]
    assert identity_retry


def test_successes_use_varied_call_lists(
    traces: list[dict], truth: list[dict], tasks: dict
) -> None:
    exact = wins = 0
    for trace, row in zip(traces, truth, strict=True):
        if row["outcome"] != "success":
            continue
        wins += 1
        task = tasks[int(row["goal_id"].split("-")[1])]
        writes = [(n, a) for n, a, _ in calls(trace) if n in WRITE_TOOLS]
        exact += writes == [(a["name"], a["kwargs"]) for a in task["actions"]]
    assert 0.65 <= wins / len(truth) <= 0.85
    assert exact / wins < 0.5


def test_user_turns_look_like_the_real_conversations(traces: list[dict]) -> None:
    real = compare_real.stats(compare_real.load_real(RETAIL / "conversations_gpt4o.jsonl"))
    ours = compare_real.stats(compare_real.from_traces(traces))
    tolerance = {
        "user turns / conversation": 1.5,
        "words / user turn (mean)": 3.0,
        "words / user turn (median)": 3.0,
        "share of user turns >= 15 words": 0.1,
        "share ending in thanks/goodbye": 0.1,
        "share with an 'also'-type new-request turn": 0.15,
    }
    for key, limit in tolerance.items():
        assert abs(real[key] - ours[key]) <= limit, (key, real[key], ours[key])


def test_tools_follow_the_policy() -> None:
    db = load_db()
    tools = RetailTools(db)
    delivered = next(o for o in db["orders"].values() if o["status"] == "delivered")
    answer = tools.call(
        "cancel_pending_order", {"order_id": delivered["order_id"], "reason": "no longer needed"}
    )
    assert answer == "Error: non-pending order cannot be cancelled"
    assert tools.call("get_order_details", {"order_id": "#W0"}) == "Error: order not found"
    pending = next(o for o in db["orders"].values() if o["status"] == "pending")
    done = json.loads(
        tools.call(
            "cancel_pending_order",
            {"order_id": pending["order_id"], "reason": "ordered by mistake"},
        )
    )
    assert done["status"] == "cancelled"
    assert db["orders"][pending["order_id"]]["status"] == "pending"
    effects = json.loads((RETAIL / "tool_effects.json").read_text(encoding="utf-8"))
    assert len(effects) == 16 and sorted(k for k, v in effects.items() if v == "write") == sorted(
        WRITE_TOOLS
    )
