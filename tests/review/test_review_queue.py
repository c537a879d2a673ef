"""The review queue on both databases: what the worker queues, hack decisions, labels, agreement."""

from __future__ import annotations

from collections.abc import Iterator

import pytest
from fastapi.testclient import TestClient

from judge_service.audit.store_known_hacks import list_known_hacks
from judge_service.core.api.app import create_app
from judge_service.core.batch_plan import BatchPlan, JudgeEntry
from judge_service.core.settings import get_settings
from judge_service.core.storage import audit
from judge_service.core.storage.db import session_scope
from judge_service.domain import Finding, Outcome, Verdict
from judge_service.review.job_review_enqueue import enqueue_review
from judge_service.scoring import store_batches as batches
from judge_service.scoring.store_results import ScoredSample, save_results
from tests.conftest import make_key


@pytest.fixture
def api(database_url: str) -> Iterator[TestClient]:
    with TestClient(create_app(get_settings(database_url=database_url))) as client:
        yield client


@pytest.fixture
def keys(database_url: str) -> dict[str, dict[str, str]]:
    return {
        role: {"Authorization": f"Bearer {make_key(database_url, role)}"}
        for role in ("trainer", "reviewer", "admin")
    }


def flagged_batch(
    url: str, hack_scores: list[float], *, batch_id: str = "hb" + "0" * 30, project: str = "default"
) -> str:
    """A scored batch of ``project`` whose samples carry the given hack scores (as the audit
    would leave)."""
    with session_scope(url) as session:
        batch = batches.create_batch(
            session=session,
            batch_id=batch_id,
            project=project,
            samples=[
                {"id": f"h{i}", "prompt": "Fix the bug", "completion": "I edited the tests."}
                for i in range(len(hack_scores))
            ],
            plan=BatchPlan(judges=[JudgeEntry(name="reference_match")]),
            request_hash="h",
            timeout_s=60,
            run_id="hack-run",
        )
        session.flush()
        scored = [
            ScoredSample(
                row.id,
                row.position,
                Outcome(
                    id=row.external_id,
                    reward=0.2,
                    raw_reward=0.9,
                    penalty=0.7,
                    valid=True,
                    hack_score=score,
                    judges=[Verdict(judge="j", score=0.9, rationale="tests pass")],
                    findings=[
                        Finding(
                            detector="test_tampering",
                            kind="edited_tests",
                            severity="high",
                            confidence=score,
                            evidence="assert True replaced the real check",
                        )
                    ],
                ),
            )
            for row, score in zip(batch.samples, hack_scores, strict=True)
        ]
        save_results(session=session, batch_id=batch.id, scored=scored)
        session.flush()
        batches.finish_if_complete(session=session, batch_id=batch.id)
        return batch.id


def test_flagged_and_uncertain_hacks_are_queued_once(api, keys, database_url):
    batch_id = flagged_batch(database_url, [0.9, 0.4, 0.1])
    assert enqueue_review(batch_id, database_url=database_url) == 2
    assert enqueue_review(batch_id, database_url=database_url) == 0  # a re-run adds nothing
    items = api.get("/v1/review?kind=hack_finding", headers=keys["trainer"]).json()["items"]
    assert [(i["sample_id"], i["payload"]["band"]) for i in items] == [
        ("h0", "flagged"),
        ("h1", "uncertain"),
    ]
    evidence = items[0]["evidence"]["rollouts"][0]
    assert evidence["findings"][0]["kind"] == "edited_tests"
    assert evidence["judges"][0]["rationale"] == "tests pass"
    assert "edited the tests" in evidence["completion"]


def test_hack_decisions_feed_the_known_hack_corpus(api, keys, database_url):
    enqueue_review(flagged_batch(database_url, [0.9, 0.45]), database_url=database_url)
    first, second = api.get("/v1/review?kind=hack_finding", headers=keys["admin"]).json()["items"]
    confirmed = api.post(
        f"/v1/review/{first['id']}/decision",
        json={"decision": "approve", "label": "bad", "note": "asserts were removed"},
        headers=keys["reviewer"],
    )
    assert confirmed.status_code == 200, confirmed.text
    assert confirmed.json()["known_hack_id"] is not None
    rejected = api.post(
        f"/v1/review/{second['id']}/decision",
        json={"decision": "reject", "note": "a legitimate refactor"},
        headers=keys["reviewer"],
    )
    assert rejected.json()["item"]["status"] == "rejected"
    edit = {"decision": "edit", "text": "x"}
    decided = api.post(f"/v1/review/{first['id']}/decision", json=edit, headers=keys["admin"])
    assert decided.status_code == 409
    with session_scope(database_url) as session:
        corpus = list_known_hacks(session=session, limit=10)
        negatives = list_known_hacks(session=session, limit=10, confirmed=False)
        actions = [e.action for e in audit.entries(session=session)]
    assert [h.sample["id"] for h in corpus] == ["h0"]
    assert corpus[0].sample["completion"] == "I edited the tests."
    assert corpus[0].finding["findings"][0]["detector"] == "test_tampering"
    assert [h.sample["id"] for h in negatives] == ["h1"]
    assert {"review.approve", "review.reject"} <= set(actions)
    assert api.get("/v1/review?status=pending", headers=keys["trainer"]).json()["items"] == []


def test_a_split_panel_is_queued_as_disagreement(api, keys):
    split = [
        {"name": "slow_constant", "score": 0.1, "delay_s": 0},
        {"name": "slow_constant", "score": 0.9, "delay_s": 0},
        {"name": "slow_constant", "score": 0.5, "delay_s": 0},
    ]
    body = {
        "samples": [{"id": "x", "prompt": "p", "completion": "c"}],
        "judges": split,
        "run_id": "split-run",
    }
    assert api.post("/v1/rewards", json=body, headers=keys["trainer"]).status_code == 200
    items = api.get("/v1/review?kind=disagreement", headers=keys["trainer"]).json()["items"]
    assert len(items) == 1
    assert items[0]["run_id"] == "split-run"
    assert items[0]["payload"]["agreement"] < 0.5
    assert [s["score"] for s in items[0]["payload"]["scores"]] == [0.1, 0.9, 0.5]
    agreeing = {**body, "judges": [{"name": "slow_constant", "score": 0.5, "delay_s": 0}] * 2}
    api.post("/v1/rewards", json=agreeing, headers=keys["trainer"])
    assert len(api.get("/v1/review", headers=keys["trainer"]).json()["items"]) == 1


def test_agreement_and_calibration_from_human_labels(api, keys):
    """12 labelled rollouts: reference_match is right on 10. kappa = rho = 2/3; the isotonic
    map sends its 0 to 1/6 and its 1 to 5/6, and a calibrated request scores with it."""
    right = [
        {"id": f"r{i}", "prompt": "2+2?", "completion": "4", "reference": "4"} for i in range(6)
    ]
    wrong = [
        {"id": f"w{i}", "prompt": "2+2?", "completion": "5", "reference": "4"} for i in range(6)
    ]
    batch = api.post(
        "/v1/rewards",
        json={"samples": right + wrong, "judges": ["reference_match"], "run_id": "labelled"},
        headers=keys["trainer"],
    ).json()
    wanted = {s["id"]: "good" for s in right} | {s["id"]: "bad" for s in wrong}
    wanted["r5"], wanted["w5"] = "bad", "good"  # the humans disagree with the judge twice
    order = [s["id"] for s in right[:5] + wrong[:4]] + ["r5", "w4", "w5"]
    refused = api.post(
        "/v1/labels",
        json={"batch_id": batch["batch_id"], "sample_id": "r0", "label": "good"},
        headers=keys["trainer"],
    )
    assert refused.status_code == 403
    for count, sample_id in enumerate(order, start=1):
        label = {"batch_id": batch["batch_id"], "sample_id": sample_id, "label": wanted[sample_id]}
        assert api.post("/v1/labels", json=label, headers=keys["reviewer"]).status_code == 201
        if count == 9:
            early = api.get("/v1/judges/agreement", headers=keys["trainer"]).json()
            assert early["judges"][0]["labels"] == 9 and early["judges"][0]["calibration"] is None
    relabel = {"batch_id": batch["batch_id"], "sample_id": "r0", "label": "good"}
    assert api.post("/v1/labels", json=relabel, headers=keys["reviewer"]).status_code == 201

    figures = api.get("/v1/judges/agreement", headers=keys["trainer"]).json()
    (judge,) = figures["judges"]
    assert (judge["judge"], judge["labels"], judge["good"], judge["bad"]) == (
        "reference_match", 12, 6, 6,
    )  # fmt: skip
    assert judge["cohen_kappa"] == pytest.approx(2 / 3, abs=1e-6)
    assert judge["spearman_rho"] == pytest.approx(2 / 3, abs=1e-6)
    assert judge["calibration"]["x"] == [0.0, 1.0]
    assert judge["calibration"]["y"] == pytest.approx([1 / 6, 5 / 6], abs=1e-5)
    assert figures["consensus"]["labels"] == 12
    other_run = api.get("/v1/judges/agreement?run_id=nothing", headers=keys["trainer"]).json()
    assert other_run["judges"] == []

    body = {"samples": [right[0], wrong[0]], "judges": ["reference_match"]}
    plain = api.post("/v1/rewards", json=body, headers=keys["trainer"]).json()
    assert [r["reward"] for r in plain["results"]] == [1.0, 0.0]
    calibrated = api.post(
        "/v1/rewards", json={**body, "calibrate": True}, headers=keys["trainer"]
    ).json()
    rewards = [r["reward"] for r in calibrated["results"]]
    assert rewards == pytest.approx([5 / 6, 1 / 6], abs=1e-5)
    assert "calibrated from 1.000" in calibrated["results"][0]["judges"][0]["rationale"]
