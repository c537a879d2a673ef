"""The yardstick's figures (``bench/real_traces_figures.py``): their shapes on a few real retail
goals, the upload that hides every label, and the ground-truth comparison on hand-made runs."""

from __future__ import annotations

import json
from typing import Any

import pytest

from bench.real_traces_figures import (
    TARGETS,
    figures,
    measure,
    real_runs,
    renamed,
    same_writes,
    table,
    upload_text,
)
from judge_service.forge.embed import TfidfEmbedder, get_embedder
from judge_service.forge.trace_tasks import forge_traces
from judge_service.traces.conversation import parse_traces

GOALS = ("0", "1", "2")


@pytest.fixture(scope="module")
def subset() -> tuple[list[dict[str, Any]], dict[str, list[dict[str, Any]]]]:
    runs, truth = real_runs("retail")
    return [r for r in runs if r["metadata"]["task_id"] in GOALS], truth


def test_the_upload_holds_no_label(subset: Any) -> None:
    runs, _ = subset
    lines = [json.loads(line) for line in upload_text(runs).splitlines()]
    assert [set(line) for line in lines] == [{"id", "messages"}] * len(runs)
    assert "reward" not in upload_text(runs)


def test_figures_of_three_real_goals(subset: Any) -> None:
    runs, truth = subset
    assert len(runs) == 6  # two agents, one run each
    got = measure(runs, truth, TfidfEmbedder())
    assert (got["runs"], got["goals"]) == (6, 3)
    assert got["failed_runs"] == sum(r["metadata"]["reward"] < 1 for r in runs)
    assert 1 <= got["tasks_per_goal"] <= got["tasks"]
    for key in (
        "goals_merged",
        "signs_balanced_accuracy",
        "signs_precision",
        "signs_recall",
        "goals_with_reference",
        "reference_gt_all",
        "passed_runs_gt",
    ):
        assert 0 <= got[key] <= 1, key
    assert got["reference_gt_disagreeing"] is None or 0 <= got["reference_gt_disagreeing"] <= 1
    assert sum(got["reference_sources"].values()) == got["tasks"]
    for kind, sign in got["sign_precision"].items():
        assert 1 <= sign["runs"] <= 6 and 0 <= sign["precision"] <= 1, kind
    # the runs that passed wrote what the ground truth writes (tasks 0-2 hold no refused call)
    assert got["passed_runs_gt"] == 1.0
    printed = table({"retail": got, "other": got})
    header, _rule, *rows = printed.splitlines()
    assert header.split()[-2:] == ["retail", "other"]
    for label, _, target, _ in TARGETS:
        assert any(row.startswith(label) and target in row for row in rows), label


def _conversation(trace_id: str, order: str, reason: str) -> dict[str, Any]:
    before = {"order_id": order, "user_id": "ann_lee_1", "status": "pending"}
    after = {**before, "status": "cancelled", "reason": reason}

    def call(n: int, name: str, args: dict[str, Any], answer: dict[str, Any]) -> list[Any]:
        function = {"name": name, "arguments": json.dumps(args)}
        return [
            {
                "role": "assistant",
                "content": None,
                "tool_calls": [{"id": f"c{n}", "function": function}],
            },
            {"role": "tool", "tool_call_id": f"c{n}", "content": json.dumps(answer)},
        ]

    messages = [
        {"role": "system", "content": "You are a store's agent."},
        {"role": "user", "content": f"Hi, I'm Ann Lee, please cancel my order {order}."},
        *call(1, "get_order_details", {"order_id": order}, before),
        {"role": "assistant", "content": f"Cancel {order} because it is {reason}? (yes/no)"},
        {"role": "user", "content": "Yes, go ahead."},
        *call(2, "cancel_pending_order", {"order_id": order, "reason": reason}, after),
        {"role": "assistant", "content": f"Done: {order} is cancelled."},
        {"role": "user", "content": "Thanks, bye!"},
    ]
    return {"id": trace_id, "messages": messages, "metadata": {"task_id": "g1", "reward": 1.0}}


def test_the_reference_against_the_ground_truth() -> None:
    runs = [_conversation(f"r{n}", "#W100", "no longer needed") for n in range(3)]
    forged = forge_traces(parse_traces(upload_text(runs)), embedder=TfidfEmbedder())
    assert forged.tools["cancel_pending_order"].effect == "write"
    read = {"name": "get_order_details", "arguments": {"order_id": "#W100"}}
    cancel = {
        "name": "cancel_pending_order",
        "arguments": {"reason": "no longer needed", "order_id": "#W100"},
    }
    right = figures(runs, forged, {"g1": [read, cancel]})
    assert right["goals_with_reference"] == 1.0
    assert right["reference_gt_all"] == 1.0
    assert right["passed_runs_gt"] == 1.0
    assert right["reference_gt_disagreeing"] is None  # the runs agree
    other = {**cancel, "arguments": {"order_id": "#W100", "reason": "ordered by mistake"}}
    assert figures(runs, forged, {"g1": [read, other]})["reference_gt_all"] == 0.0
    assert figures(runs, forged, {"g1": [read]})["reference_gt_all"] == 0.0  # no write expected

    # runs that disagree: two cancel for one reason, one for another; the majority is the reference
    runs[2] = _conversation("r2", "#W100", "ordered by mistake")
    forged = forge_traces(parse_traces(upload_text(runs)), embedder=TfidfEmbedder())
    split = figures(runs, forged, {"g1": [cancel]})
    assert split["disagreeing_goals"] == 1
    assert split["reference_gt_disagreeing"] == 1.0
    assert figures(runs, forged, {"g1": [other]})["reference_gt_disagreeing"] == 0.0


def test_same_writes() -> None:
    writers = {"return_items"}
    truth = [
        {"name": "get_order", "arguments": {"order_id": "#W1"}},
        {"name": "return_items", "arguments": {"order_id": "#W1", "item_ids": ["2", "1"]}},
    ]
    made = [{"tool": "return_items", "arguments": {"item_ids": ["1", "2"], "order_id": "#W1"}}]
    assert same_writes(made, truth, writers, {"get_order", "return_items"})
    assert not same_writes(made * 2, truth, writers, {"get_order", "return_items"})  # a multiset
    assert not same_writes([], truth, writers, {"get_order", "return_items"})
    assert not same_writes(None, truth, writers)  # no reference
    assert same_writes([], truth[:1], writers, {"get_order"})  # empty reference, no write
    assert not same_writes([], truth[:1], writers, set())  # a tool the forge never saw: a write
    priced = [{"name": "return_items", "arguments": {"amount": 5}}]
    assert same_writes([{"tool": "return_items", "arguments": {"amount": 5.0}}], priced, writers)


def test_renaming_every_tool_and_field_keeps_the_real_retail_figures() -> None:
    """No rule may rest on one domain's names: with every tool named ``op_<n>`` and every
    field of the calls and answers in the other case style, the forge's figures on the real
    retail runs are the same (before the forge read which tools write from the traces rather
    than their names, failed lookups whose name said nothing read as failed writes: balanced
    accuracy 0.74 against 0.77)."""
    runs, truth = real_runs("retail")
    other_runs, other_truth = renamed(runs, truth)
    called = {
        c["function"]["name"]
        for r in other_runs
        for m in r["messages"]
        for c in m.get("tool_calls") or []
    }
    assert called and all(name.startswith("op_") for name in called)
    assert {a["name"] for actions in other_truth.values() for a in actions} <= called | {
        f"op_{n}" for n in range(len(called) + 5)
    }
    answers = [m["content"] for r in other_runs for m in r["messages"] if m["role"] == "tool"]
    assert not any('"order_id"' in a for a in answers)
    assert any('"orderId"' in a for a in answers)
    embedder = get_embedder()
    named, other = measure(runs, truth, embedder), measure(other_runs, other_truth, embedder)
    for key in (
        "tasks_per_goal",
        "goals_merged",
        "signs_balanced_accuracy",
        "signs_precision",
        "goals_with_reference",
        "reference_gt_disagreeing",
        "reference_gt_all",
    ):
        assert other[key] == named[key], (key, named[key], other[key])
