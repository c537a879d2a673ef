"""Trace forge jobs through the API (embedded app, SQLite) on real-shaped retail traces:
reference end states with their evidence, a reviewer's choice, repeat uploads, read/write
overrides, and goal lines written by a model."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import pytest

from tests.fakes import FakeOpenAIServer
from tests.forge_support import JSONL, forge, spec, upload, wait_job

RETAIL = Path(__file__).resolve().parents[2] / "data" / "retail"
GOALS = ("task-0000", "task-0004", "task-0016")
Headers = dict[str, str]


def _rows(goals: tuple[str, ...] = GOALS) -> list[dict[str, Any]]:
    truth = {
        r["trace_id"]: r["goal_id"]
        for r in map(json.loads, (RETAIL / "truth.jsonl").read_text().splitlines())
    }
    rows = map(json.loads, (RETAIL / "traces.jsonl").read_text().splitlines())
    return [r for r in rows if truth[r["id"]] in goals]


def _text(rows: list[dict[str, Any]]) -> str:
    return "".join(json.dumps(r) + "\n" for r in rows)


@pytest.fixture(scope="module")
def rows() -> list[dict[str, Any]]:
    return _rows()


def _miner(fake: FakeOpenAIServer) -> dict[str, Any]:
    """A mining model that proposes one item for any family (and no goal lines)."""
    item = {"text": "Did the agent make the change it said it made?", "polarity": "good"}
    item |= {"importance": 2, "rationale": "seen", "cited": []}
    fake.configure("miner", replies=[{"match": "", "contents": [{"items": [item]}]}])
    return spec(fake, "miner")


def _tasks(client, headers: Headers, job_id: str) -> list[dict[str, Any]]:
    answer = client.get("/v1/tasks", params={"job_id": job_id}, headers=headers)
    assert answer.status_code == 200, answer.text
    return answer.json()["tasks"]


def test_a_trace_job_gives_one_task_per_goal_with_its_end_state_and_evidence(
    client, keys: dict[str, Headers], fake: FakeOpenAIServer, rows
):
    job = forge(client, keys["reviewer"], "traces", _text(rows), miner=_miner(fake))
    counts, result = job["counts"], job["result"]
    assert counts["traces"] == len(rows) == 10 and counts["tasks"] == 3
    assert counts["with_reference"] == 3 and counts["already_seen"] == 0
    assert "all-MiniLM-L6-v2" in result["embedding_model"]
    assert result["tools"]["return_delivered_order_items"]["effect"] == "write"
    assert result["tools"]["get_order_details"]["effect"] == "read"
    assert result["failure_signs"]["labelled"] == 10
    assert result["goal_lines"] == {"model": 0, "rule": 3, "ungrounded": 0}
    assert all(m["items"] for m in result["mining"]), "failed families are mined"
    tasks = _tasks(client, keys["trainer"], job["id"])
    claimed = next(t for t in tasks if t["needs_review"])  # task-0016: one run only claimed
    assert claimed["end_state_source"] == "consensus"
    assert [c["count"] for c in claimed["end_states"]] == [3, 1]
    assert claimed["end_states"][1]["end_state"] == {}, "the false claim wrote nothing"
    one = client.get(f"/v1/tasks/{claimed['id']}", headers=keys["trainer"]).json()
    assert one["end_state"] == claimed["end_states"][0]["end_state"] and one["goal"]
    (key,) = one["end_state"]
    assert key.startswith("order_id=#W") and one["end_state"][key]["status"]
    evidence = one["source"]["evidence"]
    assert len(evidence) == 4 and all(e["turns"] and e["trace_id"] for e in evidence)
    assert {e["end_state"] for e in evidence} == {0, 1}
    failed = job["result"]["failed"]
    liar = claimed["end_states"][1]["traces"][0]
    assert [s["kind"] for s in failed[liar]] == [
        "claimed_without_write",
        "disagrees_with_consensus",
    ]
    assert "missing" in failed[liar][1]["evidence"]
    # the family's review item shows the candidate end states side by side
    items = client.get(
        "/v1/review", params={"kind": "task_family"}, headers=keys["reviewer"]
    ).json()["items"]
    shown = [t for i in items for t in i["evidence"]["tasks"] if t["id"] == claimed["id"]]
    assert shown and [c["count"] for c in shown[0]["end_states"]] == [3, 1]
    page = client.get("/review", params={"kind": "task_family"}, headers=keys["reviewer"]).text
    assert "the runs disagree on the end state" in page and "3 runs" in page and "1 run<" in page
    assert f"/v1/tasks/{claimed['id']}/end_state" in page
    assert client.get("/v1/tasks/nope", headers=keys["trainer"]).status_code == 404


def test_a_reviewer_chooses_or_supplies_the_reference(
    client, keys: dict[str, Headers], fake: FakeOpenAIServer, rows
):
    job = forge(client, keys["reviewer"], "traces", _text(rows), miner=_miner(fake))
    claimed = next(t for t in _tasks(client, keys["trainer"], job["id"]) if t["needs_review"])
    url = f"/v1/tasks/{claimed['id']}/end_state"
    assert client.post(url, json={"choose": 1}, headers=keys["trainer"]).status_code == 403
    for body, field in (
        ({"choose": 2}, "choose"),
        ({}, "exactly one of choose and end_state"),
        ({"choose": 0, "end_state": {}}, "exactly one of choose and end_state"),
        ({"choose": "first"}, '"field":"choose"'),
    ):
        answer = client.post(url, json=body, headers=keys["reviewer"])
        assert answer.status_code == 422 and field in answer.text, answer.text
    chosen = client.post(
        url, json={"choose": 1, "note": "empty on purpose"}, headers=keys["reviewer"]
    )
    assert chosen.status_code == 200, chosen.text
    assert chosen.json()["end_state"] == {} and chosen.json()["end_state_source"] == "review"
    assert chosen.json()["needs_review"] is False
    supplied = {"order_id=#W1": {"status": "cancelled"}}
    given = client.post(url, json={"end_state": supplied}, headers=keys["admin"]).json()
    assert given["end_state"] == supplied and given["end_state_source"] == "upload"
    again = client.get(f"/v1/tasks/{claimed['id']}", headers=keys["trainer"]).json()
    assert again["end_state"] == supplied


def test_a_repeat_upload_adds_no_task_and_links_to_the_tasks_it_made(
    client, keys: dict[str, Headers], fake: FakeOpenAIServer, rows
):
    miner = _miner(fake)
    first = forge(client, keys["reviewer"], "traces", _text(rows), miner=miner)
    made = {t["id"] for t in _tasks(client, keys["trainer"], first["id"])}
    again = forge(client, keys["reviewer"], "traces", _text(rows), miner=miner)
    assert again["counts"]["tasks"] == 0 and again["counts"]["already_seen"] == len(rows)
    linked = {i for seen in again["result"]["already_seen"] for i in seen["task_ids"]}
    assert linked == made
    everything = client.get("/v1/tasks", headers=keys["trainer"]).json()["tasks"]
    assert len(everything) == len(made)
    # the same id with other content is another trace
    changed = [{**rows[0], "metadata": {**rows[0]["metadata"], "note": "edited"}}]
    third = forge(client, keys["reviewer"], "traces", _text(changed + rows[1:2]), miner=miner)
    assert third["counts"]["already_seen"] == 1 and third["counts"]["traces"] == 1


def test_tool_classes_can_be_overridden_and_a_bad_override_is_named(
    client, keys: dict[str, Headers], fake: FakeOpenAIServer, rows
):
    job = forge(
        client,
        keys["reviewer"],
        "traces",
        _text(rows),
        miner=_miner(fake),
        **{"tools.writes": "get_order_details", "tools.reads": "think,calculate"},
    )
    tools = job["result"]["tools"]
    assert tools["get_order_details"] == {**tools["get_order_details"], "effect": "write"}
    assert tools["get_order_details"]["source"] == "override"
    assert tools["think"]["source"] == "override"
    assert job["options"]["tools"] == {
        "writes": ["get_order_details"],
        "reads": ["think", "calculate"],
    }
    both = client.post(
        "/v1/forge/traces",
        content=_text(rows),
        params={"tools.writes": "think", "tools.reads": "think"},
        headers={**keys["reviewer"], **JSONL},
    )
    assert both.status_code == 422 and "tools" in both.json()["error"]["detail"]["field"]
    unknown = client.post(
        "/v1/forge/traces",
        content=_text(rows),
        params={"tools.deletes": "x"},
        headers={**keys["reviewer"], **JSONL},
    )
    assert unknown.status_code == 422


def test_the_miner_writes_goal_lines_and_an_ungrounded_one_is_not_kept(
    client, keys: dict[str, Headers], fake: FakeOpenAIServer, rows
):
    fake.configure(
        "goals",
        replies=[
            # task-0000's runs name the kettle: a grounded line
            {"match": "kettle", "contents": [{"goal": "Return the electric kettle and clock."}]},
            # an id no user wrote: ungrounded
            {"match": "customer_turns", "contents": [{"goal": "Cancel order #W0000001 now."}]},
        ],
    )
    job = upload(client, keys["reviewer"], "traces", _text(rows), miner=spec(fake, "goals"))
    done = wait_job(client, keys["reviewer"], job["id"])
    assert done["status"] == "done", done
    assert done["result"]["goal_lines"] == {"model": 1, "rule": 2, "ungrounded": 2}
    goals = {t["goal"] for t in _tasks(client, keys["trainer"], job["id"])}
    assert "Return the electric kettle and clock." in goals
    assert not any("#W0000001" in g for g in goals)


def test_the_miner_finds_policy_violations_and_an_invented_one_adds_no_sign(
    client, keys: dict[str, Headers], fake: FakeOpenAIServer, rows
):
    first = rows[0]
    opening = first["messages"][1]["content"]
    turn, said = next(
        (i, m["content"])
        for i, m in enumerate(first["messages"])
        if m["role"] == "assistant" and m.get("content")
    )
    quoted = " ".join(said.split()[:6])
    fake.configure(
        "auditor",
        replies=[
            {
                "match": opening,
                "contents": [
                    {"violations": [{"turn": turn, "rule": "confirm first", "excerpt": quoted}]}
                ],
            },
            {
                "match": "<conversation>",
                "contents": [
                    {"violations": [{"turn": 2, "rule": "x", "excerpt": "I refunded $9,999."}]}
                ],
            },
        ],
    )
    auditor = spec(fake, "auditor")
    job = forge(client, keys["reviewer"], "traces", _text(rows), miner=auditor, policy="true")
    assert job["result"]["policy"] == {
        "checked": len(rows),
        "failed_calls": 0,
        "violations": 1,
        "dropped": len(rows) - 1,
    }
    (sign,) = [s for s in job["result"]["failed"][first["id"]] if s["kind"] == "policy_violation"]
    assert sign["turn"] == turn and "confirm first" in sign["evidence"]
    assert quoted.split()[0] in sign["evidence"]
    no_model = client.post(
        "/v1/forge/traces",
        content=_text(rows),
        params={"policy": "true"},
        headers={**keys["reviewer"], **JSONL},
    )
    assert no_model.status_code == 422 and "policy needs a miner" in no_model.text


def test_without_a_model_the_job_mines_nothing_and_says_why(client, keys: dict[str, Headers], rows):
    job = forge(client, keys["reviewer"], "traces", _text(rows))
    assert job["counts"]["failed_traces"] >= 1 and job["result"]["mining"] == []
    assert job["result"]["mining_skipped"].startswith("no miner")
    assert job["result"]["goal_lines"] == {"rule": 3}
    off = forge(client, keys["reviewer"], "traces", _text(_rows(("task-0009",))), mine="false")
    assert off["result"]["mining_skipped"] == "mine=false"
