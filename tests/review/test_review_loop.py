"""The issue's whole loop through the API, on real SQLite and PostgreSQL, with LLM judges.

Create a rubric (v1) -> score a run with it (answers say name@1) -> mine the run -> a pending
rubric_item -> a trainer's decision is refused, a reviewer's approval writes v2 -> the next
batch says name@2 and scores the new criterion. Then the same state survives a restart of a
real ``judge-service serve`` process, and mining also runs on a real Celery worker.
"""

from __future__ import annotations

from collections.abc import Iterator
from pathlib import Path

import httpx
import pytest
from fastapi.testclient import TestClient
from sqlalchemy import func, select

from judge_service.core.api.app import create_app
from judge_service.core.settings import get_settings
from judge_service.core.storage import audit
from judge_service.core.storage.db import session_scope
from judge_service.judging import local_gate
from judge_service.judging.local_build import BuildState
from judge_service.judging.names import LOCAL_JUDGE_NAME
from judge_service.review.tables import MiningJobRow
from tests.conftest import make_key
from tests.fakes import FakeOpenAIServer
from tests.helpers import Server, Worker, service_env
from tests.review_support import RUBRIC, llm_judge, mine, samples, score
from tests.support_workers import start_together

NAME = RUBRIC["name"]


@pytest.fixture
def api(database_url: str) -> Iterator[TestClient]:
    """The embedded app (in-process executor) on SQLite or PostgreSQL."""
    with TestClient(create_app(get_settings(database_url=database_url))) as client:
        yield client


def bearer(url: str, role: str) -> dict[str, str]:
    return {"Authorization": f"Bearer {make_key(url, role)}"}


def test_the_whole_loop(api: TestClient, database_url: str, fake: FakeOpenAIServer):
    admin, trainer, reviewer = (bearer(database_url, r) for r in ("admin", "trainer", "reviewer"))
    judge = llm_judge(fake)

    created = api.post("/v1/rubrics", json=RUBRIC, headers=admin)
    assert created.status_code == 201, created.text
    assert (created.json()["ref"], created.json()["active"]) == (f"{NAME}@1", True)

    # 1. Score a run with the rubric: every answer says name@1, every criterion is a component.
    for step in range(2):
        batch = score(
            api, trainer, samples=samples(4, prefix=f"st{step}-"), judges=[judge],
            rubric=NAME, run_id="loop-run", step=step,
        )  # fmt: skip
        assert batch["rubric"] == f"{NAME}@1"
        for result in batch["results"]:
            assert result["valid"], result
            assert {f"rubric/{c['id']}" for c in RUBRIC["criteria"]} <= set(result["components"])
    polled = api.get(f"/v1/rewards/{batch['batch_id']}", headers=reviewer).json()
    assert polled["rubric"] == f"{NAME}@1"

    # 2. Mine the run (8 rollouts): a rubric_item reaches the pending review queue.
    job = mine(api, reviewer, NAME, run_id="loop-run", model=judge, max_items=3)
    assert job["result"]["considered"] >= 1 and job["result"]["items"]
    pending = api.get("/v1/review?status=pending&kind=rubric_item", headers=trainer).json()
    items = [i for i in pending["items"] if i["rubric"] == NAME]
    assert len(items) == len(job["result"]["items"]) >= 1
    item = items[0]
    criterion = item["payload"]["criterion"]
    assert criterion["id"] not in {c["id"] for c in RUBRIC["criteria"]}
    # The fake model cites an id that is no rollout of the run: the citation goes, the item stays.
    assert item["payload"]["cited"] == []
    assert item["payload"]["dropped_citations"]
    assert item["evidence"]["rollouts"], "the reviewer sees the rollouts the model looked at"

    # 3. A trainer may not decide; a reviewer's approval writes version 2 with both criteria.
    refused = api.post(
        f"/v1/review/{item['id']}/decision", json={"decision": "approve"}, headers=trainer
    )
    assert refused.status_code == 403
    assert refused.json()["error"]["code"] == "forbidden"
    approved = api.post(
        f"/v1/review/{item['id']}/decision",
        json={"decision": "approve", "note": "seen in both failures"},
        headers=reviewer,
    )
    assert approved.status_code == 200, approved.text
    assert approved.json()["rubric"] == f"{NAME}@2"
    assert approved.json()["item"]["status"] == "approved"
    again = api.post(
        f"/v1/review/{item['id']}/decision", json={"decision": "reject"}, headers=reviewer
    )
    assert again.status_code == 409

    v2 = api.get(f"/v1/rubrics/{NAME}", headers=trainer).json()
    assert v2["version"] == 2 and v2["active"]
    ids = [c["id"] for c in v2["criteria"]]
    assert ids == [c["id"] for c in RUBRIC["criteria"]] + [criterion["id"]]
    v1 = api.get(f"/v1/rubrics/{NAME}?version=1", headers=trainer).json()
    assert [c["id"] for c in v1["criteria"]] == [c["id"] for c in RUBRIC["criteria"]]
    assert not v1["active"]

    # 4. The next batch says name@2 and scores the new criterion; name@1 still pins v1.
    after = score(api, trainer, samples=samples(2), judges=[judge], rubric=NAME, run_id="loop-run")
    assert after["rubric"] == f"{NAME}@2"
    assert f"rubric/{criterion['id']}" in after["results"][0]["components"]
    pinned = score(api, trainer, samples=samples(1), judges=[judge], rubric=f"{NAME}@1")
    assert pinned["rubric"] == f"{NAME}@1"
    assert f"rubric/{criterion['id']}" not in pinned["results"][0]["components"]

    # Every decision is in the audit log, with who and when.
    with session_scope(database_url) as session:
        entries = audit.entries(session=session, action="review.approve")
        assert [(e.target, e.detail["rubric"]) for e in entries] == [
            (f"review_item:{item['id']}", f"{NAME}@2")
        ]
        assert entries[0].actor == approved.json()["item"]["decided_by"]
        assert entries[0].at is not None


def test_unknown_rubrics_and_versions_are_422_naming_them(api: TestClient, database_url: str):
    admin, trainer = bearer(database_url, "admin"), bearer(database_url, "trainer")
    api.post("/v1/rubrics", json=RUBRIC, headers=admin)
    for ref in ("no-such-rubric", f"{NAME}@7", f"{NAME}@x"):
        body = {"samples": samples(1), "judges": ["reference_match"], "rubric": ref}
        response = api.post("/v1/rewards", json=body, headers=trainer)
        assert response.status_code == 422, ref
        error = response.json()["error"]
        assert error["code"] == "unknown_rubric" and ref in error["message"]


def test_edit_approves_with_new_text_and_weight(
    api: TestClient, database_url: str, fake: FakeOpenAIServer
):
    admin, reviewer = bearer(database_url, "admin"), bearer(database_url, "reviewer")
    api.post("/v1/rubrics", json=RUBRIC, headers=admin)
    score(api, admin, samples=samples(8), judges=[llm_judge(fake)], rubric=NAME, run_id="r-edit")
    item = mine(api, reviewer, NAME, run_id="r-edit", model=llm_judge(fake))["result"]["items"][0]
    no_change = api.post(f"/v1/review/{item}/decision", json={"decision": "edit"}, headers=admin)
    assert no_change.status_code == 422
    text = "Did the agent quote the refund policy rule it applied?"
    edited = api.post(
        f"/v1/review/{item}/decision",
        json={"decision": "edit", "text": text, "weight": -1.5, "note": "a pitfall"},
        headers=admin,
    )
    assert edited.status_code == 200, edited.text
    assert edited.json()["item"]["status"] == "edited"
    new = api.get(f"/v1/rubrics/{NAME}", headers=reviewer).json()["criteria"][-1]
    assert (new["text"], new["weight"], new["id"]) == (
        text,
        -1.5,
        "quote-the-refund-policy-rule-it",
    )


def _restart_scenario(url: str, env: dict[str, str], tmp_path: Path, fake: FakeOpenAIServer):
    admin, reviewer = bearer(url, "admin"), bearer(url, "reviewer")
    first = Server(env=env, cwd=tmp_path, log=tmp_path / "serve1.log")
    try:
        with httpx.Client(base_url=first.url, timeout=60) as http:
            assert http.post("/v1/rubrics", json=RUBRIC, headers=admin).status_code == 201
            body = {"samples": samples(8), "judges": [llm_judge(fake)], "rubric": NAME}
            assert http.post("/v1/rewards", json={**body, "run_id": "r1"}, headers=admin).is_success
            job = mine(http, reviewer, NAME, run_id="r1", model=llm_judge(fake), max_items=2)
            decided = job["result"]["items"][0]
            http.post(
                f"/v1/review/{decided}/decision",
                json={"decision": "approve", "note": "before restart"},
                headers=reviewer,
            ).raise_for_status()
            split = [
                {"name": "slow_constant", "score": 0.0, "delay_s": 0},
                {"name": "slow_constant", "score": 1.0, "delay_s": 0},
            ]
            http.post(
                "/v1/rewards", json={"samples": samples(1), "judges": split, "run_id": "r1"},
                headers=admin,
            ).raise_for_status()  # fmt: skip
            login = http.post("/review/login", data={"key": reviewer["Authorization"][7:]})
            cookie = login.cookies["js_session"]
            before = http.get("/v1/review?status=any", headers=reviewer).json()["items"]
    finally:
        first.kill()  # SIGKILL: nothing gets a chance to flush on the way out

    second = Server(env=env, cwd=tmp_path, log=tmp_path / "serve2.log")
    try:
        with httpx.Client(base_url=second.url, timeout=60) as http:
            versions = http.get(f"/v1/rubrics/{NAME}/versions", headers=reviewer).json()
            assert [v["ref"] for v in versions["versions"]] == [f"{NAME}@1", f"{NAME}@2"]
            after = http.get("/v1/review?status=any", headers=reviewer).json()["items"]
            assert after == before
            kinds = {i["kind"] for i in after}
            assert kinds == {"rubric_item", "disagreement"}
            item = http.get(f"/v1/review/{decided}", headers=reviewer).json()
            assert item["status"] == "approved"
            assert [(d["decision"], d["note"]) for d in item["decisions"]] == [
                ("approve", "before restart")
            ]
        with httpx.Client(base_url=second.url, cookies={"js_session": cookie}) as browser:
            page = browser.get("/review")
            assert page.status_code == 200 and "Sign out" in page.text  # the session survives
    finally:
        second.kill()


def test_restart_keeps_rubrics_review_items_and_decisions(
    database_url: str, tmp_path: Path, fake: FakeOpenAIServer
):
    env = service_env(JS_DATABASE_URL=database_url)
    _restart_scenario(database_url, env, tmp_path, fake)


def test_mining_runs_on_a_celery_worker(
    migrated_postgres_url: str, redis_url: str, tmp_path: Path, fake: FakeOpenAIServer
):
    url = get_settings(database_url=migrated_postgres_url).database_url
    # the fake server is named by api_base: free endpoints, as for local use
    env = service_env(JS_DATABASE_URL=url, JS_BROKER_URL=redis_url, JS_ALLOW_FREE_ENDPOINTS="true")
    admin = bearer(url, "admin")
    worker, server = start_together(
        lambda: Worker(env=env, cwd=tmp_path, log=tmp_path / "worker.log"),
        lambda: Server(env=env, cwd=tmp_path, log=tmp_path / "serve.log"),
    )
    try:
        with httpx.Client(base_url=server.url, timeout=60) as http:
            http.post("/v1/rubrics", json=RUBRIC, headers=admin).raise_for_status()
            body = {"samples": samples(8), "judges": [llm_judge(fake)], "rubric": NAME}
            batch = http.post("/v1/rewards", json={**body, "run_id": "celery-run"}, headers=admin)
            assert batch.json()["rubric"] == f"{NAME}@1"
            job = mine(http, admin, NAME, run_id="celery-run", model=llm_judge(fake))
            assert job["result"]["items"], worker.log()
    finally:
        server.kill()
        worker.kill()


def test_a_rubric_no_judge_asks_is_422_naming_it(
    client: TestClient, keys: dict, fake: FakeOpenAIServer, embedded_settings
):
    """Only model judges ask a rubric's criteria: a panel of deterministic judges alone (the
    request's, or the default JS_DEFAULT_JUDGES) with a rubric is refused naming ``rubric``,
    not scored with an answer that names a rubric it never used. One model judge suffices."""
    trainer = keys["trainer"]
    assert client.post("/v1/rubrics", json=RUBRIC, headers=keys["admin"]).status_code == 201
    body = {"samples": samples(2), "judges": ["reference_match"], "rubric": NAME}
    refused = client.post("/v1/rewards", json=body, headers=trainer)
    assert refused.status_code == 422, refused.text
    error = refused.json()["error"]
    assert error["code"] == "rubric_not_applicable"
    assert error["detail"] == {
        "field": "rubric",
        "rubric": f"{NAME}@1",
        "judges": ["reference_match"],
    }
    assert error["message"].startswith(f"rubric: {NAME}@1 cannot be applied")
    mixed = score(
        client, trainer, samples=samples(2), judges=["reference_match", llm_judge(fake)],
        rubric=NAME,
    )  # fmt: skip
    assert mixed["rubric"] == f"{NAME}@1"
    assert all(
        f"rubric/{c['id']}" in r["components"] for r in mixed["results"] for c in RUBRIC["criteria"]
    )
    defaults = embedded_settings.model_copy(update={"default_judges": "reference_match"})
    with TestClient(create_app(defaults)) as by_default:
        del body["judges"]
        for path, sent in (("/v1/rewards", body), (f"/get_reward?rubric={NAME}", {"query": ["q"]})):
            refused = by_default.post(path, json=sent, headers=trainer)
            assert refused.status_code == 422, (path, refused.text)
            assert refused.json()["error"]["code"] == "rubric_not_applicable"
            assert "JS_DEFAULT_JUDGES" in refused.json()["error"]["message"]


def test_mining_without_a_model_uses_the_local_smollm2(client: TestClient, keys: dict):
    """No ``model`` and no JS_DEFAULT_JUDGES: the real local model proposes (grammar-bound)."""
    admin = keys["admin"]
    assert client.post("/v1/rubrics", json=RUBRIC, headers=admin).status_code == 201
    right = {"reference": "1234"}
    batch = [{**s, **right} for s in samples(8)]
    score(client, admin, samples=batch, judges=["reference_match"], run_id="local")
    job = mine(client, admin, NAME, run_id="local", max_items=1, timeout=300)
    assert job["result"]["model"] == "openai/smollm2"
    assert job["result"]["usage"]["judge_calls"] >= 1
    assert job["result"]["usage"]["cost_usd"] == 0.0
    run_ids = {s["id"] for s in batch}
    for item_id in job["result"]["items"]:
        item = client.get(f"/v1/review/{item_id}", headers=admin).json()
        assert item["kind"] == "rubric_item" and item["payload"]["criterion"]["text"]
        assert set(item["payload"]["cited"]) <= run_ids


class _Building:
    """This machine's llama-server build, as the gate sees it: still compiling."""

    def ready(self) -> bool:
        return False

    def start_in_background(self, **_: object) -> None:
        pass

    def stop(self) -> None:
        pass

    def state(self) -> BuildState:
        return BuildState("building", "compiling 40%", 75.0)


def test_mining_on_the_local_judge_while_it_builds_is_503_like_a_batch(
    client: TestClient,
    keys: dict,
    embedded_settings,
    fake: FakeOpenAIServer,
    monkeypatch: pytest.MonkeyPatch,
):
    """Not 202 and a job that fails: the same 503 ``local_judge_starting`` as ``/v1/rewards``,
    with its Retry-After, and no job stored; another model is not held up."""
    admin = keys["admin"]
    assert client.post("/v1/rubrics", json=RUBRIC, headers=admin).status_code == 201
    score(client, admin, samples=samples(8), judges=["reference_match"], run_id="r")
    monkeypatch.setattr(local_gate, "machine_build", _Building)
    local = {"samples": samples(1), "judges": [LOCAL_JUDGE_NAME]}
    batch = client.post("/v1/rewards", json=local, headers=admin)
    for model in ({}, {"model": LOCAL_JUDGE_NAME}, {"model": {"name": LOCAL_JUDGE_NAME}}):
        body = {"run_id": "r", **model}
        answer = client.post(f"/v1/rubrics/{NAME}/mine", json=body, headers=admin)
        assert answer.status_code == batch.status_code == 503, answer.text
        error = answer.json()["error"]
        assert error["code"] == batch.json()["error"]["code"] == "local_judge_starting"
        assert error["detail"] == {**batch.json()["error"]["detail"], "field": "model"}
        assert answer.headers["retry-after"] == batch.headers["retry-after"]
    with session_scope(embedded_settings.database_url) as session:
        assert session.scalar(select(func.count()).select_from(MiningJobRow)) == 0
    other = {"run_id": "r", "model": llm_judge(fake)}
    assert client.post(f"/v1/rubrics/{NAME}/mine", json=other, headers=admin).status_code == 202
