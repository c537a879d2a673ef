"""Projects on both databases: a key sees only its project's batches, runs, rubrics, review
items and forge jobs (404 for the rest); an all-projects admin sees every project."""

from __future__ import annotations

from collections.abc import Iterator
from pathlib import Path

import pytest
from fastapi.testclient import TestClient
from sqlalchemy import select

from judge_service.core.api.app import create_app
from judge_service.core.settings import get_settings
from judge_service.core.storage.db import session_scope
from judge_service.core.storage.keys import create_key
from judge_service.core.storage.tables import ApiKeyRow, BatchRow
from judge_service.forge import store as forge_store
from judge_service.review.job_review_enqueue import enqueue_review
from judge_service.review.tables import ReviewItemRow
from judge_service.rubrics import files as rubric_files
from judge_service.scoring.job import known_hack_texts
from tests.fakes import FakeOpenAIServer
from tests.helpers import run_cli, service_env
from tests.review.test_review_queue import flagged_batch
from tests.review_support import llm_judge

Headers = dict[str, str]


@pytest.fixture
def api(database_url: str) -> Iterator[TestClient]:
    with TestClient(create_app(get_settings(database_url=database_url))) as client:
        yield client


def bearer(url: str, role: str, project: str) -> Headers:
    with session_scope(url) as session:
        return {
            "Authorization": f"Bearer {create_key(session=session, role=role, project=project)[1]}"
        }


@pytest.fixture
def keys(database_url: str) -> dict[str, Headers]:
    """Trainer, reviewer and admin keys of projects ``a`` and ``b``, and an all-projects admin."""
    found = {
        f"{role}_{project}": bearer(database_url, role, project)
        for role in ("trainer", "reviewer", "admin")
        for project in ("a", "b")
    }
    found["admin_all"] = bearer(database_url, "admin", "*")
    return found


def score(api: TestClient, headers: Headers, run_id: str, **extra: object) -> dict:
    body = {
        "judges": ["reference_match"],
        "run_id": run_id,
        "step": 1,
        "samples": [
            {
                "id": f"s{i}",
                "prompt": f"secret prompt of {run_id}",
                "completion": "4",
                "reference": "4",
            }
            for i in range(3)
        ],
        **extra,
    }
    response = api.post("/v1/rewards", json=body, headers=headers)
    assert response.status_code == 200, response.text
    return response.json()


def test_a_trainer_cannot_read_another_projects_batch_or_run(api, keys, database_url):
    mine = score(api, keys["trainer_a"], "run-a")
    theirs = api.get(f"/v1/rewards/{mine['batch_id']}", headers=keys["trainer_b"])
    unknown = api.get(f"/v1/rewards/{'0' * 32}", headers=keys["trainer_b"])
    assert theirs.status_code == unknown.status_code == 404
    assert theirs.json()["error"]["code"] == unknown.json()["error"]["code"] == "not_found"
    assert "secret" not in theirs.text
    own = api.get(f"/v1/rewards/{mine['batch_id']}", headers=keys["trainer_a"])
    assert own.status_code == 200 and own.json()["results"][0]["reward"] == 1.0
    with session_scope(database_url) as session:
        assert session.get(BatchRow, mine["batch_id"]).project == "a"
    # Runs: the same run_id in another project is another run.
    assert api.get("/v1/runs/run-a/report", headers=keys["trainer_b"]).status_code == 404
    assert api.get("/v1/runs/run-a/report", headers=keys["trainer_a"]).status_code == 200
    score(api, keys["trainer_b"], "run-a")
    report_a = api.get("/v1/runs/run-a/report", headers=keys["trainer_a"]).json()
    assert report_a["steps"][0]["samples"] == 3, report_a["steps"][0]
    # A key of one project cannot name another; the all-projects admin sees both and may.
    refused = api.get(f"/v1/rewards/{mine['batch_id']}?project=a", headers=keys["trainer_b"])
    assert refused.status_code == 403 and refused.json()["error"]["detail"]["field"] == "project"
    assert api.get(f"/v1/rewards/{mine['batch_id']}", headers=keys["admin_all"]).status_code == 200
    scoped = api.get(f"/v1/rewards/{mine['batch_id']}?project=b", headers=keys["admin_all"])
    assert scoped.status_code == 404
    both = api.get("/v1/runs/run-a/report", headers=keys["admin_all"]).json()
    assert both["steps"][0]["samples"] == 6
    bad = api.get("/v1/runs/run-a/report?project=Not%20A%20Name", headers=keys["admin_all"])
    assert bad.status_code == 422 and bad.json()["error"]["detail"]["field"] == "project"


def test_idempotency_keys_do_not_reach_into_another_project(api, keys):
    first = score(api, keys["trainer_a"], "r", idempotency_key="same-key")
    again = score(api, keys["trainer_a"], "r", idempotency_key="same-key")
    assert again["batch_id"] == first["batch_id"]
    body = {
        "judges": ["reference_match"],
        "run_id": "r",
        "step": 1,
        "idempotency_key": "same-key",
        "samples": [{"id": "x", "prompt": "p", "completion": "4", "reference": "4"}],
    }
    other = api.post("/v1/rewards", json=body, headers=keys["trainer_b"])
    assert other.status_code == 409
    assert first["batch_id"] not in other.text


def test_all_projects_admin_creates_in_the_project_it_names(api, keys, database_url):
    made = score(api, keys["admin_all"], "admin-run")  # no ?project=: default
    body = {
        "judges": ["reference_match"],
        "samples": [{"id": "x", "prompt": "p", "completion": "4", "reference": "4"}],
    }
    in_b = api.post("/v1/rewards?project=b", json=body, headers=keys["admin_all"])
    assert in_b.status_code == 200, in_b.text
    with session_scope(database_url) as session:
        assert session.get(BatchRow, made["batch_id"]).project == "default"
        assert session.get(BatchRow, in_b.json()["batch_id"]).project == "b"
    assert (
        api.get(f"/v1/rewards/{in_b.json()['batch_id']}", headers=keys["trainer_b"]).status_code
        == 200
    )
    assert (
        api.get(f"/v1/rewards/{in_b.json()['batch_id']}", headers=keys["trainer_a"]).status_code
        == 404
    )


def test_reviewers_see_and_decide_only_their_projects_items(api, keys, database_url):
    batch_a = _flagged_in(database_url, "a")
    batch_b = _flagged_in(database_url, "b")
    items_a = api.get("/v1/review", headers=keys["reviewer_a"]).json()["items"]
    items_b = api.get("/v1/review", headers=keys["trainer_b"]).json()["items"]
    assert [(i["batch_id"], i["project"]) for i in items_a] == [(batch_a, "a")]
    assert [(i["batch_id"], i["project"]) for i in items_b] == [(batch_b, "b")]
    theirs = items_b[0]["id"]
    assert api.get(f"/v1/review/{theirs}", headers=keys["reviewer_a"]).status_code == 404
    decided = api.post(
        f"/v1/review/{theirs}/decision", json={"decision": "approve"}, headers=keys["reviewer_a"]
    )
    assert decided.status_code == 404
    label = {"batch_id": batch_b, "sample_id": "h0", "label": "bad"}
    assert api.post("/v1/labels", json=label, headers=keys["reviewer_a"]).status_code == 404
    with session_scope(database_url) as session:
        row = session.get(ReviewItemRow, theirs)
        assert (row.status, row.decided_by) == ("pending", None)
    assert api.post("/v1/labels", json=label, headers=keys["reviewer_b"]).status_code == 201
    ok = api.post(
        f"/v1/review/{theirs}/decision", json={"decision": "approve"}, headers=keys["reviewer_b"]
    )
    assert ok.status_code == 200, ok.text
    settings = get_settings(database_url=database_url)  # the confirmed hack is b's alone
    assert len(known_hack_texts(settings, "b")) == 1
    assert known_hack_texts(settings, "a") == []
    every = api.get("/v1/review?status=any", headers=keys["admin_all"]).json()["items"]
    assert sorted(i["project"] for i in every) == ["a", "b"]
    only_b = api.get("/v1/review?status=any&project=b", headers=keys["admin_all"]).json()
    assert [i["batch_id"] for i in only_b["items"]] == [batch_b]


def _flagged_in(url: str, project: str) -> str:
    """A flagged batch of ``project`` with its review item queued."""
    batch_id = flagged_batch(url, [0.9], batch_id=f"hb{project:0<30}", project=project)
    assert enqueue_review(batch_id, database_url=url) == 1
    return batch_id


def test_rubric_names_are_per_project_and_resolve_in_the_callers(api, keys, fake: FakeOpenAIServer):
    rubric = {
        "name": "house-style",
        "description": "d",
        "criteria": [{"id": "c1", "text": "Is it polite?"}],
    }
    assert api.post("/v1/rubrics", json=rubric, headers=keys["admin_a"]).status_code == 201
    again = api.post("/v1/rubrics", json=rubric, headers=keys["admin_a"])
    assert again.status_code == 409
    other = {**rubric, "criteria": [{"id": "c9", "text": "Is it short?"}]}
    assert api.post("/v1/rubrics", json=other, headers=keys["admin_b"]).status_code == 201
    got_a = api.get("/v1/rubrics/house-style", headers=keys["trainer_a"]).json()
    got_b = api.get("/v1/rubrics/house-style", headers=keys["trainer_b"]).json()
    assert [c["text"] for c in got_a["criteria"]] == ["Is it polite?"]
    assert [c["text"] for c in got_b["criteria"]] == ["Is it short?"]
    assert got_a["version"] == got_b["version"] == 1
    # A rubric only project a has is unknown to b, at submission too.
    only_a = {**rubric, "name": "only-a"}
    assert api.post("/v1/rubrics", json=only_a, headers=keys["admin_a"]).status_code == 201
    assert api.get("/v1/rubrics/only-a", headers=keys["trainer_b"]).status_code == 404
    names_b = [
        r["name"] for r in api.get("/v1/rubrics", headers=keys["trainer_b"]).json()["rubrics"]
    ]
    assert "only-a" not in names_b and "house-style" in names_b
    body = {
        "rubric": "only-a",
        "judges": [llm_judge(fake)],  # a model judge: one that asks a rubric's criteria
        "samples": [{"id": "x", "prompt": "p", "completion": "4", "reference": "4"}],
    }
    refused = api.post("/v1/rewards", json=body, headers=keys["trainer_b"])
    assert refused.status_code == 422 and refused.json()["error"]["code"] == "unknown_rubric"
    assert "only-a" not in refused.json()["error"]["detail"]["known"]
    accepted = api.post("/v1/rewards", json=body, headers=keys["trainer_a"])
    assert accepted.status_code == 200 and accepted.json()["rubric"] == "only-a@1"


def test_a_new_project_gets_its_own_copy_of_the_shipped_rubrics(api, keys, database_url):
    made = api.post(
        "/v1/keys", json={"role": "trainer", "project": "fresh"}, headers=keys["admin_all"]
    )
    assert made.status_code == 201, made.text
    assert made.json()["project"] == "fresh"
    fresh = {"Authorization": f"Bearer {made.json()['key']}"}
    listed = api.get("/v1/rubrics", headers=fresh).json()["rubrics"]
    shipped = sorted(f.rubric.name for f in rubric_files.load())
    assert shipped and [r["name"] for r in listed] == shipped
    # The copy is the project's own: another project (here default) is untouched.
    assert api.get("/v1/rubrics", headers=keys["admin_all"]).json()["rubrics"] == []


def test_keys_api_takes_a_project_and_checks_it(api, keys, database_url):
    made = api.post("/v1/keys", json={"role": "reviewer"}, headers=keys["admin_a"])
    assert made.status_code == 201 and made.json()["project"] == "a"
    denied = api.post("/v1/keys", json={"role": "trainer", "project": "b"}, headers=keys["admin_a"])
    assert denied.status_code == 403
    escalate = api.post("/v1/keys", json={"role": "admin", "project": "*"}, headers=keys["admin_a"])
    assert escalate.status_code == 403
    for bad in ("Team A", "-x", "a" * 64, "a/b", ""):
        answer = api.post(
            "/v1/keys", json={"role": "trainer", "project": bad}, headers=keys["admin_all"]
        )
        assert answer.status_code == 422, bad
        assert "project" in answer.text
    star = api.post("/v1/keys", json={"role": "trainer", "project": "*"}, headers=keys["admin_all"])
    assert star.status_code == 422 and star.json()["error"]["detail"]["field"] == "project"
    every = api.post("/v1/keys", json={"role": "admin", "project": "*"}, headers=keys["admin_all"])
    assert every.status_code == 201 and every.json()["project"] == "*"
    with session_scope(database_url) as session:
        projects = dict(session.execute(select(ApiKeyRow.id, ApiKeyRow.project)).all())
    assert projects[made.json()["id"]] == "a" and projects[every.json()["id"]] == "*"


def test_forge_jobs_and_tasks_are_the_projects(api, keys, database_url):
    with session_scope(database_url) as session:
        job = forge_store.create_job(
            session=session, kind="traces", options={}, inputs="", created_by="t", project="b"
        )
        family = forge_store.add_family(
            session=session, job_id=job.id, index=0, name="refunds", terms=["refund"], tasks=1
        )
        forge_store.add_task(
            session=session,
            family=family,
            position=0,
            kind="trace",
            prompt="secret task prompt",
            tools=None,
            reference=None,
            source={},
            failures=[],
        )
        job_id = job.id
    assert api.get(f"/v1/forge/jobs/{job_id}", headers=keys["reviewer_a"]).status_code == 404
    assert api.get(f"/v1/forge/jobs/{job_id}", headers=keys["reviewer_b"]).status_code == 200
    assert api.get("/v1/tasks", headers=keys["trainer_a"]).json()["tasks"] == []
    tasks_b = api.get("/v1/tasks", headers=keys["trainer_b"]).json()["tasks"]
    assert [t["prompt"] for t in tasks_b] == ["secret task prompt"]


def test_pages_show_only_the_signed_in_keys_project(api, keys, database_url):
    score(api, keys["trainer_a"], "page-run-a")
    score(api, keys["trainer_b"], "page-run-b")
    batch_b = _flagged_in(database_url, "b")
    runs = api.get("/runs", headers=keys["reviewer_a"])
    assert runs.status_code == 200
    assert "page-run-a" in runs.text and "page-run-b" not in runs.text
    assert api.get("/runs/page-run-b", headers=keys["reviewer_a"]).status_code == 404
    assert api.get("/runs/page-run-b", headers=keys["reviewer_b"]).status_code == 200
    queue_a = api.get("/review", headers=keys["reviewer_a"])
    queue_b = api.get("/review", headers=keys["reviewer_b"])
    assert batch_b not in queue_a.text and "secret prompt of page-run-b" not in queue_a.text
    assert batch_b in queue_b.text
    with session_scope(database_url) as session:
        item = session.scalars(
            select(ReviewItemRow.id).where(ReviewItemRow.batch_id == batch_b)
        ).one()
    assert api.get(f"/review/items/{item}", headers=keys["reviewer_a"]).status_code == 404
    assert api.get(f"/review/items/{item}", headers=keys["reviewer_b"]).status_code == 200
    every = api.get("/runs", headers=keys["admin_all"]).text
    assert "page-run-a" in every and "page-run-b" in every


def test_keys_create_takes_a_project_on_the_cli(database_url: str, tmp_path: Path):
    env = service_env(JS_DATABASE_URL=database_url)
    out = run_cli(
        "keys", "create", "--role", "trainer", "--project", "team-x", env=env, cwd=tmp_path
    )
    assert "project team-x" in out
    admin = run_cli("keys", "create", "--role", "admin", "--all-projects", env=env, cwd=tmp_path)
    assert "every project" in admin
    with session_scope(database_url) as session:
        rows = dict(session.execute(select(ApiKeyRow.role, ApiKeyRow.project)).all())
    assert rows == {"trainer": "team-x", "admin": "*"}
    listed = run_cli("rubrics", "list", "--project", "team-x", env=env, cwd=tmp_path)
    assert listed.strip(), "the new project has no copy of the shipped rubrics"
    from tests.service.test_cli import (
        run_raw,  # the CLI's refusals: exit status and the option named
    )

    bad = run_raw(
        "keys", "create", "--role", "trainer", "--project", "Bad Name", env=env, cwd=tmp_path
    )
    assert bad.returncode != 0 and "--project" in bad.stderr and "js_" not in bad.stdout
    wide = run_raw("keys", "create", "--role", "trainer", "--all-projects", env=env, cwd=tmp_path)
    assert wide.returncode != 0 and "js_" not in wide.stdout


def _cli_key(env: dict[str, str], cwd: Path, *args: str) -> tuple[str, Headers]:
    """``keys create ARGS``: its output and the key (its last line) as a bearer header."""
    out = run_cli("keys", "create", *args, env=env, cwd=cwd)
    return out, {"Authorization": f"Bearer {out.strip().splitlines()[-1]}"}


def test_the_first_admin_key_of_a_new_database_is_for_every_project(
    api, database_url: str, tmp_path: Path
):
    """The README's first command: that admin key makes keys of any project. Later admin keys
    made without ``--project`` are of ``default``, and can make keys of ``default`` only."""
    env = service_env(JS_DATABASE_URL=database_url)
    out, first = _cli_key(env, tmp_path, "--role", "admin")
    assert "every project" in out
    made = api.post("/v1/keys", json={"role": "reviewer", "project": "team-a"}, headers=first)
    assert made.status_code == 201, made.text
    assert made.json()["project"] == "team-a"
    out, second = _cli_key(env, tmp_path, "--role", "admin")
    assert "project default" in out
    denied = api.post("/v1/keys", json={"role": "reviewer", "project": "team-a"}, headers=second)
    assert denied.status_code == 403
    error = denied.json()["error"]
    assert error["detail"] == {"field": "project", "project": "default"}
    assert "'default'" in error["message"] and "all-projects" in error["message"]
    own = api.post("/v1/keys", json={"role": "reviewer"}, headers=second)
    assert own.status_code == 201 and own.json()["project"] == "default"


def test_an_explicit_project_limits_even_the_first_admin_key(
    api, database_url: str, tmp_path: Path
):
    env = service_env(JS_DATABASE_URL=database_url)
    out, admin = _cli_key(env, tmp_path, "--role", "admin", "--project", "team-b")
    assert "project team-b" in out
    denied = api.post("/v1/keys", json={"role": "trainer", "project": "team-a"}, headers=admin)
    assert denied.status_code == 403 and "'team-b'" in denied.json()["error"]["message"]
    with session_scope(database_url) as session:
        assert session.scalars(select(ApiKeyRow.project)).all() == ["team-b"]
    from tests.service.test_cli import run_raw

    both = run_raw(
        "keys", "create", "--role", "admin", "--project", "x", "--all-projects", env=env,
        cwd=tmp_path,
    )  # fmt: skip
    assert both.returncode != 0 and "--project" in both.stderr and "js_" not in both.stdout
