"""Revoking API keys, on both databases: ``GET``/``DELETE /v1/keys`` for admins (their project
only) and ``judge-service keys list|revoke``. A revoked key is refused at once by the process
that revoked it, and its web sessions end."""

from __future__ import annotations

from collections.abc import Iterator
from pathlib import Path

import pytest
from fastapi.testclient import TestClient
from sqlalchemy import select

from judge_service.core.api.app import create_app
from judge_service.core.settings import get_settings
from judge_service.core.storage.db import session_scope
from judge_service.core.storage.tables import ApiKeyRow, AuditRow
from tests.access.test_projects import bearer
from tests.helpers import run_cli, service_env
from tests.service.test_cli import run_raw

Headers = dict[str, str]


@pytest.fixture
def api(database_url: str) -> Iterator[TestClient]:
    # a long key cache: a revoked key must be refused by this process all the same
    settings = get_settings(database_url=database_url, key_cache_s=300)
    with TestClient(create_app(settings)) as client:
        yield client


def key_id(headers: Headers) -> str:
    """The id inside a plain key (``js_<id>_<secret>``)."""
    return headers["Authorization"].removeprefix("Bearer ").split("_")[1]


def revocations(url: str) -> list[str]:
    with session_scope(url) as session:
        return list(session.scalars(select(AuditRow.target).where(AuditRow.action == "key.revoke")))


def test_an_admin_revokes_a_key_of_its_project_and_it_is_refused_at_once(api, database_url):
    admin_a = bearer(database_url, "admin", "a")
    admin_b = bearer(database_url, "admin", "b")
    trainer_a = bearer(database_url, "trainer", "a")
    target = key_id(trainer_a)
    assert api.get("/v1/rubrics", headers=trainer_a).status_code == 200  # checked and cached

    listed = api.get("/v1/keys", headers=admin_a)
    assert listed.status_code == 200
    keys = {k["id"]: k for k in listed.json()["keys"]}
    assert set(keys) == {key_id(admin_a), target}  # project a's only
    assert keys[target]["role"] == "trainer" and keys[target]["revoked_at"] is None
    assert "key" not in keys[target] and "key_hash" not in keys[target]
    assert api.get("/v1/keys", headers=trainer_a).status_code == 403

    for refused, headers in ((404, admin_b), (403, trainer_a)):  # another project's; no admin
        answer = api.delete(f"/v1/keys/{target}", headers=headers)
        assert answer.status_code == refused, answer.text
    assert api.delete("/v1/keys/nosuchkey", headers=admin_a).status_code == 404
    assert api.delete("/v1/keys/%E2%80%AE", headers=admin_a).status_code == 404
    assert revocations(database_url) == []
    assert api.get("/v1/rubrics", headers=trainer_a).status_code == 200  # nothing changed

    revoked = api.delete(f"/v1/keys/{target}", headers=admin_a)
    assert revoked.status_code == 200, revoked.text
    assert revoked.json()["id"] == target and revoked.json()["revoked_at"] is not None
    refused = api.get("/v1/rubrics", headers=trainer_a)
    assert refused.status_code == 401 and refused.json()["error"]["code"] == "unauthorized"
    again = api.delete(f"/v1/keys/{target}", headers=admin_a)
    assert again.status_code == 200 and again.json()["revoked_at"] == revoked.json()["revoked_at"]
    assert revocations(database_url) == [target]  # once, though asked twice
    still = {k["id"]: k for k in api.get("/v1/keys", headers=admin_a).json()["keys"]}
    assert still[target]["revoked_at"] is not None
    assert api.get("/v1/rubrics", headers=admin_a).status_code == 200  # the others still work


def test_an_all_projects_admin_lists_every_key_or_one_projects(api, database_url):
    admin_all = bearer(database_url, "admin", "*")
    trainer_a = bearer(database_url, "trainer", "a")
    trainer_b = bearer(database_url, "trainer", "b")
    every = {k["id"] for k in api.get("/v1/keys", headers=admin_all).json()["keys"]}
    assert every == {key_id(admin_all), key_id(trainer_a), key_id(trainer_b)}
    only_b = api.get("/v1/keys?project=b", headers=admin_all).json()["keys"]
    assert [k["id"] for k in only_b] == [key_id(trainer_b)]
    assert api.get("/v1/keys?project=Bad%20Name", headers=admin_all).status_code == 422
    assert api.delete(f"/v1/keys/{key_id(trainer_a)}", headers=admin_all).status_code == 200
    assert api.get("/v1/rubrics", headers=trainer_a).status_code == 401
    assert api.get("/v1/rubrics", headers=trainer_b).status_code == 200


def test_revoking_a_key_ends_its_web_sessions(api, database_url):
    reviewer = bearer(database_url, "reviewer", "a")
    admin = bearer(database_url, "admin", "a")
    browser = TestClient(api.app)
    plain = reviewer["Authorization"].removeprefix("Bearer ")
    signed_in = browser.post("/review/login", data={"key": plain}, follow_redirects=False)
    assert signed_in.status_code == 303, signed_in.text
    assert "Sign out" in browser.get("/review").text
    assert api.delete(f"/v1/keys/{key_id(reviewer)}", headers=admin).status_code == 200
    page = browser.get("/review")
    assert "Sign out" not in page.text and "Sign in" in page.text


def test_keys_list_and_revoke_on_the_cli(database_url: str, tmp_path: Path):
    env = service_env(JS_DATABASE_URL=database_url)
    made = run_cli(
        "keys", "create", "--role", "trainer", "--name", "[bold]gpu-node", env=env, cwd=tmp_path
    )
    plain = made.strip().splitlines()[-1]
    target = plain.split("_")[1]
    run_cli("keys", "create", "--role", "admin", "--project", "team-b", env=env, cwd=tmp_path)
    listed = run_cli("keys", "list", env=env, cwd=tmp_path)
    assert target in listed and "[bold]gpu-node" in listed and "team-b" in listed
    assert plain not in listed
    only_b = run_cli("keys", "list", "--project", "team-b", env=env, cwd=tmp_path)
    assert "team-b" in only_b and target not in only_b

    assert run_cli("keys", "revoke", target, env=env, cwd=tmp_path).startswith("revoked key")
    assert "revoked already" in run_cli("keys", "revoke", target, env=env, cwd=tmp_path)
    unknown = run_raw("keys", "revoke", "nosuchkey", env=env, cwd=tmp_path)
    assert unknown.returncode == 2 and "no key 'nosuchkey'" in unknown.stderr
    bad = run_raw("keys", "list", "--project", "Bad Name", env=env, cwd=tmp_path)
    assert bad.returncode == 2 and "--project" in bad.stderr
    with session_scope(database_url) as session:
        rows = {r.id: r.revoked_at for r in session.scalars(select(ApiKeyRow))}
    assert rows[target] is not None
    assert sum(1 for when in rows.values() if when is not None) == 1
    assert revocations(database_url) == [target]
    with TestClient(create_app(get_settings(database_url=database_url))) as api:
        refused = api.get("/v1/rubrics", headers={"Authorization": f"Bearer {plain}"})
    assert refused.status_code == 401
