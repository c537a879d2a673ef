"""The forge through the API (embedded app, SQLite): traces, documents, review by family,
tiers from a run, the task list, and bad uploads."""

from __future__ import annotations

import json
from typing import Any

import pytest

from tests.fakes import FakeOpenAIServer
from tests.forge_data import ALETSCH, BELL_ROCK, DOCUMENTS, bot, trace, traces, user
from tests.forge_support import JSONL, forge, script_documents, spec, upload

Headers = dict[str, str]


def jsonl(rows: list[Any]) -> str:
    return "".join((r if isinstance(r, str) else json.dumps(r)) + "\n" for r in rows)


def documents() -> str:
    return jsonl([{"id": name, "text": text} for name, text in DOCUMENTS.items()])


def script_miner(fake: FakeOpenAIServer) -> dict[str, Any]:
    def item(text: str) -> dict[str, Any]:
        return {
            "items": [
                {
                    "text": text,
                    "polarity": "good",
                    "importance": 2,
                    "rationale": "seen",
                    "cited": [],
                }
            ]
        }

    fake.configure(
        "miner",
        replies=[
            {
                "match": "reset",
                "contents": [item("Did the agent point to the reset button in the app?")],
            },
            {
                "match": "ATM",
                "contents": [item("Did the agent say when a lookup failed and offer another way?")],
            },
            {
                "match": "freeze",
                "contents": [item("Did the agent avoid calling the same tool again and again?")],
            },
            {"match": "debit", "contents": [item("Did the agent answer before the user gave up?")]},
        ],
    )
    return spec(fake, "miner")


def test_traces_give_one_task_per_request_families_for_review_and_mined_items(
    client, keys: dict[str, Headers], fake: FakeOpenAIServer
):
    job = forge(client, keys["reviewer"], "traces", jsonl(traces()), miner=script_miner(fake))
    counts = job["counts"]
    assert {
        k: counts[k]
        for k in ("traces", "candidates", "duplicates_merged", "tasks", "failed_traces")
    } == {
        "traces": 7,
        "candidates": 8,
        "duplicates_merged": 4,
        "tasks": 4,
        "failed_traces": 4,
    }
    assert counts["families"] == len(job["families"]) >= 2
    assert {k: [s["kind"] for s in v] for k, v in job["result"]["failed"].items()} == {
        "t3": ["user_complaint"],
        "t4": ["tool_error"],
        "t5": ["retry_loop"],
        "t6": ["abandoned"],
    }
    tasks = client.get("/v1/tasks", params={"job_id": job["id"]}, headers=keys["trainer"]).json()[
        "tasks"
    ]
    reset = next(t for t in tasks if "reset" in t["prompt"][-1]["content"])
    assert reset["duplicates"] == 2 and reset["source"]["traces"] == ["t1", "t2", "t3"]
    assert (
        reset["prompt"][0]["role"] == "system"
        and reset["tools"][0]["function"]["name"] == "lookup_account"
    )
    assert [f["kind"] for f in reset["failures"]] == ["user_complaint"]
    # one review item per family, with counts and sample tasks
    items = client.get(
        "/v1/review", params={"kind": "task_family"}, headers=keys["reviewer"]
    ).json()["items"]
    assert sorted(i["payload"]["family_id"] for i in items) == sorted(
        f["id"] for f in job["families"]
    )
    assert sum(i["payload"]["counts"]["tasks"] for i in items) == 4
    assert all(i["evidence"]["tasks"] for i in items)
    page = client.get("/review", params={"kind": "task_family"}, headers=keys["reviewer"])
    assert page.status_code == 200 and f"Task family: {items[0]['payload']['name']}" in page.text
    assert "How do I reset my online banking password?" in page.text
    # every failed family was mined, and its proposals wait in the review queue
    mined = job["result"]["mining"]
    assert {m["family_id"] for m in mined} == {
        f["id"] for f in job["families"] if f["failed_traces"]
    }
    proposals = client.get(
        "/v1/review", params={"kind": "rubric_item"}, headers=keys["reviewer"]
    ).json()["items"]
    assert len(proposals) >= 2 and {p["rubric"] for p in proposals} == {"production-traces"}
    assert sorted(p["id"] for p in proposals) == sorted(i for m in mined for i in m["items"])
    assert all(p["payload"]["family_id"] in {f["id"] for f in job["families"]} for p in proposals)


def test_approving_a_family_makes_its_tasks_exportable_and_rejecting_retires_them(
    client, keys: dict[str, Headers], fake: FakeOpenAIServer
):
    job = forge(client, keys["admin"], "traces", jsonl(traces()), miner=script_miner(fake))
    items = client.get(
        "/v1/review", params={"kind": "task_family"}, headers=keys["reviewer"]
    ).json()["items"]
    first, second = items[0], items[1]
    assert (
        client.get("/v1/tasks", params={"approved": "true"}, headers=keys["trainer"]).json()[
            "tasks"
        ]
        == []
    )
    decided = client.post(
        f"/v1/review/{first['id']}/decision", json={"decision": "approve"}, headers=keys["reviewer"]
    )
    assert decided.status_code == 200, decided.text
    rejected = client.post(
        f"/v1/review/{second['id']}/decision", json={"decision": "reject"}, headers=keys["reviewer"]
    )
    assert rejected.status_code == 200
    approved = client.get("/v1/tasks", params={"approved": "true"}, headers=keys["trainer"]).json()[
        "tasks"
    ]
    assert {t["family_id"] for t in approved} == {first["payload"]["family_id"]}
    assert len(approved) == first["payload"]["counts"]["tasks"]
    families = {
        f["id"]: f["status"]
        for f in client.get(f"/v1/forge/jobs/{job['id']}", headers=keys["trainer"]).json()[
            "families"
        ]
    }
    assert families[first["payload"]["family_id"]] == "approved"
    assert families[second["payload"]["family_id"]] == "retired"
    edit = client.post(
        f"/v1/review/{items[2]['id'] if len(items) > 2 else first['id']}/decision",
        json={"decision": "edit", "text": "x"},
        headers=keys["reviewer"],
    )
    assert edit.status_code in (409, 422)
    assert (
        client.post(
            "/v1/forge/traces", content=jsonl(traces()), headers={**keys["trainer"], **JSONL}
        ).status_code
        == 403
    )


def test_a_generator_that_invents_quotes_keeps_no_task(client, keys, fake: FakeOpenAIServer):
    invented = {**ALETSCH, "quote": "Aletsch, the grandest ice river of Europe"}
    options = script_documents(
        fake,
        {"Aletsch": invented, "Bell Rock": {**BELL_ROCK, "quote": "Stevenson designed it in 1799"}},
        {"Aletsch": ["The Aletsch Glacier"], "Bell Rock": ["Robert Stevenson"]},
        {"largest": ["no idea"], "built": ["no idea"]},
    )
    job = forge(client, keys["reviewer"], "documents", documents(), **options)
    assert job["counts"]["tasks"] == 0 and job["families"] == []
    dropped = job["counts"]["dropped"]
    assert dropped["ungrounded"] == job["counts"]["candidates"] == job["counts"]["chunks"] == 2
    assert sum(dropped.values()) == 2


def test_a_solver_that_answers_everything_keeps_no_task(client, keys, fake):
    options = script_documents(
        fake,
        {"Aletsch": ALETSCH, "Bell Rock": BELL_ROCK},
        {"Aletsch": ["The Aletsch Glacier"], "Bell Rock": ["Robert Stevenson"]},
        {"largest": ["The Aletsch Glacier"], "built": ["Robert Stevenson built it"]},
    )
    job = forge(client, keys["reviewer"], "documents", documents(), **options)
    assert job["counts"]["tasks"] == 0, (job, fake.bodies)
    assert job["counts"]["dropped"]["too_easy"] == 2 and sum(job["counts"]["dropped"].values()) == 2


def test_where_the_gap_exists_tasks_are_kept_with_their_source_quote(client, keys, fake):
    options = script_documents(
        fake,
        {"Aletsch": ALETSCH, "Bell Rock": BELL_ROCK},
        {"Aletsch": ["the Aletsch glacier"], "Bell Rock": ["Thomas Telford"]},
        {
            "largest": ["Mont Blanc glacier", "The Aletsch Glacier", "Rhone", "no idea"],
            "built": ["x"],
        },
    )
    job = forge(client, keys["reviewer"], "documents", documents(), samples_per_task=4, **options)
    assert job["counts"]["tasks"] == 1 and job["counts"]["dropped"]["unanswerable"] == 1
    (task,) = client.get("/v1/tasks", params={"job_id": job["id"]}, headers=keys["trainer"]).json()[
        "tasks"
    ]
    assert task["prompt"] == ALETSCH["question"] and task["reference"] == ALETSCH["answer"]
    assert (
        task["source"]["document"] == "glaciers.md" and task["source"]["quote"] == ALETSCH["quote"]
    )
    start, end = task["source"]["span"]
    assert ALETSCH["quote"] in DOCUMENTS["glaciers.md"][start:end]
    assert task["with_context"] == 1.0 and task["without_context"] == 0.25
    assert job["families"][0]["name"].startswith("glaciers.md")


def count_state(client, headers) -> tuple[int, int]:
    tasks = client.get("/v1/tasks", headers=headers).json()["tasks"]
    items = client.get("/v1/review", params={"status": "any"}, headers=headers).json()["items"]
    return len(tasks), len(items)


@pytest.mark.parametrize(
    ("kind", "body", "line", "field"),
    [
        (  # every trace set aside (no user words, none at all): refused with the first
            "traces",
            jsonl([trace("a", user("###STOP###"), bot("hello")), trace("b", bot("anyone?"))]),
            1,
            "messages",
        ),
        ("traces", jsonl([trace("a", user("hi")), "this is not json"]), 2, None),
        (
            "traces",
            jsonl([{"id": "a", "messages": [{"role": "user"}], "tools": "x"}]),
            1,
            "messages",
        ),
        (
            "documents",
            jsonl([{"id": "a", "text": "Some text."}, {"id": "b", "text": ""}]),
            2,
            "text",
        ),
        ("documents", jsonl([{"text": "no id"}]), 1, "id"),
    ],
)
def test_bad_uploads_name_the_line_and_field_and_store_nothing(
    client, keys, fake, kind: str, body: str, line: int, field: str | None
):
    forge(client, keys["reviewer"], "traces", jsonl(traces()), miner=script_miner(fake))
    before = count_state(client, keys["reviewer"])
    answer = upload(client, keys["reviewer"], kind, body, expect=422)
    assert answer["error"]["detail"] == {"line": line, "field": field}
    assert f"line {line}" in answer["error"]["message"]
    if field:
        assert f"`{field}`" in answer["error"]["message"]
    assert count_state(client, keys["reviewer"]) == before


def test_bad_options_and_a_50_mb_file_are_refused(client, keys):
    answer = upload(
        client, keys["reviewer"], "documents", documents(), expect=422, samples_per_task=0
    )
    assert answer["error"]["detail"] == {"field": "samples_per_task"}
    answer = upload(client, keys["reviewer"], "traces", jsonl(traces()), expect=422, rubirc="x")
    assert answer["error"]["detail"] == {"field": "rubirc"}
    line = json.dumps(trace("big", user("x" * 1_000_000))) + "\n"
    response = client.post(
        "/v1/forge/traces", content=line * 50, headers={**keys["reviewer"], **JSONL}
    )
    assert response.status_code == 413 and response.json()["error"]["code"] == "payload_too_large"
    assert count_state(client, keys["reviewer"]) == (0, 0)
    assert client.get("/v1/forge/jobs/nope", headers=keys["reviewer"]).status_code == 404


def test_run_tiers_easy_hard_learnable_and_stored_on_tasks(client, keys, fake):
    options = script_documents(
        fake,
        {"Aletsch": ALETSCH, "Bell Rock": BELL_ROCK},
        {"Aletsch": ["the Aletsch glacier"], "Bell Rock": ["Robert Stevenson"]},
        {"largest": ["The Aletsch Glacier", "no"], "built": ["Robert Stevenson", "no"]},
    )
    job = forge(client, keys["reviewer"], "documents", documents(), samples_per_task=2, **options)
    tasks = client.get("/v1/tasks", params={"job_id": job["id"]}, headers=keys["trainer"]).json()[
        "tasks"
    ]
    glacier, lighthouse = sorted(tasks, key=lambda t: t["source"]["document"])
    answers = {
        glacier["id"]: ["The Aletsch Glacier"] * 2,
        lighthouse["id"]: ["nobody", "no"],
        "g-mixed": ["4", "5"],
    }
    references = {
        glacier["id"]: glacier["reference"],
        lighthouse["id"]: lighthouse["reference"],
        "g-mixed": "4",
    }
    for step in (0, 1):
        samples = [
            {
                "id": f"{task}-{n}",
                "group_id": task,
                "prompt": "q",
                "completion": answer,
                "reference": references[task],
                "metadata": {"task_id": task} if task != "g-mixed" else {},
            }
            for task, given in answers.items()
            for n, answer in enumerate(given)
        ]
        scored = client.post(
            "/v1/rewards",
            json={
                "samples": samples,
                "judges": ["reference_match"],
                "run_id": "tiers",
                "step": step,
            },
            headers=keys["trainer"],
        )
        assert scored.status_code == 200, scored.text
    answer = client.get("/v1/runs/tiers/tasks", headers=keys["trainer"]).json()
    by_task = {t["task_id"]: t for t in answer["tasks"]}
    assert (
        by_task[glacier["id"]]["tier"] == "too_easy" and by_task[glacier["id"]]["pass_rate"] == 1.0
    )
    assert by_task[lighthouse["id"]]["tier"] == "too_hard"
    assert by_task["g-mixed"]["tier"] == "learnable" and by_task["g-mixed"]["steps"] == [0, 1]
    assert by_task["g-mixed"]["reward_std"] == 0.5 and not by_task["g-mixed"]["stored"]
    assert answer["tiers"] == {"too_easy": 1, "learnable": 1, "too_hard": 1}
    assert answer["steps"]["0"] == pytest.approx(
        {"too_easy": 1 / 3, "learnable": 1 / 3, "too_hard": 1 / 3}
    )
    stored = client.get("/v1/tasks", params={"tier": "too_easy"}, headers=keys["trainer"]).json()[
        "tasks"
    ]
    assert [(t["id"], t["tier_run_id"]) for t in stored] == [(glacier["id"], "tiers")]
    assert client.get("/v1/runs/nothing/tasks", headers=keys["trainer"]).status_code == 404


def test_a_redelivered_job_writes_the_same_tasks_and_review_items_once(
    client, keys, fake: FakeOpenAIServer, embedded_settings
):
    from sqlalchemy import update

    from judge_service.core.storage.db import session_scope
    from judge_service.forge.job import run_forge
    from judge_service.forge.tables import ForgeJobRow

    job = forge(client, keys["reviewer"], "traces", jsonl(traces()), miner=script_miner(fake))
    before = count_state(client, keys["reviewer"])
    assert run_forge(job["id"], settings=embedded_settings) == "done"  # finished: not run again
    with session_scope(embedded_settings.database_url) as session:  # as if re-delivered mid-run
        session.execute(
            update(ForgeJobRow).where(ForgeJobRow.id == job["id"]).values(status="running")
        )
    assert run_forge(job["id"], settings=embedded_settings) == "done"
    assert count_state(client, keys["reviewer"]) == before
    again = client.get(f"/v1/forge/jobs/{job['id']}", headers=keys["reviewer"]).json()
    assert again["counts"] == job["counts"] and [f["id"] for f in again["families"]] == [
        f["id"] for f in job["families"]
    ]
