"""Rubric files, `judge-service rubrics import`, the rubric API, and immutable versions."""

from __future__ import annotations

import subprocess
from collections.abc import Iterator
from pathlib import Path

import pytest
import yaml
from fastapi.testclient import TestClient

from judge_service.core.api.app import create_app
from judge_service.core.settings import get_settings
from judge_service.core.storage import audit
from judge_service.core.storage.db import session_scope
from judge_service.rubrics import files as rubric_files
from judge_service.rubrics import store as rubrics
from tests.conftest import make_key
from tests.helpers import JUDGE_SERVICE, run_cli, service_env
from tests.review_support import RUBRIC

SEEDS = {"customer-refund", "research-report", "travel-booking"}


def test_seed_rubrics_ship_with_the_package_and_have_pitfalls():
    loaded = rubric_files.load()
    assert {f.rubric.name for f in loaded} == SEEDS
    for item in loaded:
        weights = [c.weight for c in item.rubric.criteria]
        assert len(weights) >= 6 and any(w < 0 for w in weights), item.source
        assert all(c.text.strip() for c in item.rubric.criteria)
    travel = next(f for f in loaded if f.rubric.name == "travel-booking")
    assert "guidance" in travel.rubric.prompts


@pytest.mark.parametrize(
    ("text", "complaint"),
    [
        ("name: x\ncriteria: []\n", "criteria"),
        ("name: x\ncriteria:\n  - {id: a, text: A}\n  - {id: a, text: B}\n", "unique"),
        ("name: x\ncriteria:\n  - {id: a, text: A, weight: 0}\n", "weight"),
        ("name: x\ncriteria:\n  - {id: 'has space', text: A}\n", "criteria.0.id"),
        ("name: x\ncriteria:\n  - {id: a, text: A, colour: red}\n", "colour"),
        ("- just\n- a list\n", "mapping"),
        ("name: [unclosed\n", "YAML"),
    ],
)
def test_bad_rubric_files_are_refused_naming_the_file(text: str, complaint: str):
    with pytest.raises(rubric_files.RubricFileError) as caught:
        rubric_files.parse(text, "bad.yaml")
    assert "bad.yaml" in str(caught.value) and complaint in str(caught.value)


def test_cli_import_loads_versions_only_when_content_changes(tmp_path: Path, database_url: str):
    env = service_env(JS_DATABASE_URL=database_url)
    seeded = run_cli("rubrics", "import", env=env, cwd=tmp_path)  # the installed seeds
    assert sorted(line.split("\t")[:2] for line in seeded.splitlines()) == [
        [f"{name}@1", "created"] for name in sorted(SEEDS)
    ]
    folder = tmp_path / "rubrics"
    folder.mkdir()
    (folder / "refund-desk.yaml").write_text(yaml.safe_dump(RUBRIC), encoding="utf-8")
    (folder / "notes.txt").write_text("not a rubric")
    assert "refund-desk@1\tcreated" in run_cli(
        "rubrics", "import", str(folder), env=env, cwd=tmp_path
    )
    assert "refund-desk@1\tunchanged" in run_cli(
        "rubrics", "import", str(folder), env=env, cwd=tmp_path
    )
    changed = {**RUBRIC, "description": "only the description changed"}
    (folder / "refund-desk.yaml").write_text(yaml.safe_dump(changed), encoding="utf-8")
    assert "unchanged" in run_cli("rubrics", "import", str(folder), env=env, cwd=tmp_path)
    extra = {"id": "apologises", "text": "Did the agent apologise?", "weight": 0.5}
    changed = {**RUBRIC, "criteria": [*RUBRIC["criteria"], extra]}
    (folder / "refund-desk.yaml").write_text(yaml.safe_dump(changed), encoding="utf-8")
    out = run_cli("rubrics", "import", str(folder / "refund-desk.yaml"), env=env, cwd=tmp_path)
    assert out.startswith("refund-desk@2\tupdated")
    listed = run_cli("rubrics", "list", env=env, cwd=tmp_path)
    assert "refund-desk@2\t4 criteria\t2 versions" in listed
    shown = run_cli("rubrics", "show", "refund-desk", "--version", "1", env=env, cwd=tmp_path)
    assert '"ref": "refund-desk@1"' in shown and "apologises" not in shown


def test_cli_import_of_a_bad_file_imports_nothing(tmp_path: Path, sqlite_url: str):
    env = service_env(JS_DATABASE_URL=sqlite_url)
    run_cli("db", "upgrade", env=env, cwd=tmp_path)
    (tmp_path / "a.yaml").write_text(yaml.safe_dump(RUBRIC))
    (tmp_path / "b.yaml").write_text("name: b\ncriteria: []\n")
    done = subprocess.run(
        [JUDGE_SERVICE, "rubrics", "import", str(tmp_path)],
        env=env,
        cwd=tmp_path,
        capture_output=True,
        text=True,
        check=False,
    )
    assert done.returncode == 2 and "b.yaml" in done.stderr
    assert "refund-desk" not in run_cli("rubrics", "list", env=env, cwd=tmp_path)


# --- the shipped rubrics, brought by `db upgrade` ----------------------------------------


def audit_actions(url: str) -> list[str]:
    with session_scope(url) as session:
        return [row.action for row in audit.entries(session=session, limit=1000)]


def test_db_upgrade_imports_the_shipped_rubrics_once(tmp_path: Path, database_url: str):
    """On a fresh database `db upgrade` adds every seed as version 1; again, nothing."""
    env = service_env(JS_DATABASE_URL=database_url)
    out = run_cli("db", "upgrade", env=env, cwd=tmp_path)
    for name in SEEDS:
        assert f"imported the shipped rubric {name}@1" in out
    listed = run_cli("rubrics", "list", env=env, cwd=tmp_path)
    assert {line.split("\t")[0] for line in listed.splitlines()} == {f"{n}@1" for n in SEEDS}
    with session_scope(database_url) as session:
        refund = rubrics.get_version(session=session, name="customer-refund")
        assert refund is not None and refund.created_by == "db-upgrade"
        seed = next(f for f in rubric_files.load() if f.rubric.name == "customer-refund")
        assert [c["id"] for c in refund.criteria] == [c.id for c in seed.rubric.criteria]
    actions = audit_actions(database_url)
    assert actions.count("rubric.created") == len(SEEDS)

    again = run_cli("db", "upgrade", env=env, cwd=tmp_path)
    assert "imported" not in again
    assert run_cli("rubrics", "list", env=env, cwd=tmp_path) == listed
    assert audit_actions(database_url) == actions


def test_db_upgrade_never_touches_a_rubric_that_exists(tmp_path: Path, migrated_sqlite_url: str):
    """A user's own `customer-refund` (version 1 from their file, then an edited version 2)
    stays as it is; only the seeds the database lacks are added."""
    env = service_env(JS_DATABASE_URL=migrated_sqlite_url)
    # migrated_sqlite_url: the schema alone, no seeds
    mine = {**RUBRIC, "name": "customer-refund"}
    (tmp_path / "refund.yaml").write_text(yaml.safe_dump(mine), encoding="utf-8")
    run_cli("rubrics", "import", str(tmp_path / "refund.yaml"), env=env, cwd=tmp_path)
    extra = {"id": "apologises", "text": "Did the agent apologise?", "weight": 0.5}
    edited = {**mine, "criteria": [*mine["criteria"], extra]}
    (tmp_path / "refund.yaml").write_text(yaml.safe_dump(edited), encoding="utf-8")
    assert "customer-refund@2\tupdated" in run_cli(
        "rubrics", "import", str(tmp_path / "refund.yaml"), env=env, cwd=tmp_path
    )

    for _ in range(2):
        out = run_cli("db", "upgrade", env=env, cwd=tmp_path)
        assert "customer-refund" not in out
        with session_scope(migrated_sqlite_url) as session:
            versions = rubrics.list_versions(session=session, name="customer-refund")
            assert [v.version for v in versions] == [1, 2]
            active = rubrics.get_version(session=session, name="customer-refund")
            assert active is not None and active.version == 2
            assert [c["id"] for c in active.criteria][-1] == "apologises"
            assert all(v.created_by == "cli" for v in versions)
            for name in SEEDS - {"customer-refund"}:
                assert [v.version for v in rubrics.list_versions(session=session, name=name)] == [1]


@pytest.fixture
def api(database_url: str) -> Iterator[TestClient]:
    with TestClient(create_app(get_settings(database_url=database_url))) as client:
        yield client


def test_rubric_api_roles_versions_and_errors(api: TestClient, database_url: str):
    admin, reviewer, trainer = (
        {"Authorization": f"Bearer {make_key(database_url, role)}"}
        for role in ("admin", "reviewer", "trainer")
    )
    assert api.post("/v1/rubrics", json=RUBRIC, headers=reviewer).status_code == 403
    assert api.post("/v1/rubrics", json=RUBRIC).status_code == 401
    created = api.post("/v1/rubrics", json=RUBRIC, headers=admin)
    assert created.status_code == 201
    body = created.json()
    assert (body["version"], body["status"], body["active"]) == (1, "approved", True)
    assert body["criteria"][2] == {**RUBRIC["criteria"][2], "weight": -2.0}
    again = api.post("/v1/rubrics", json=RUBRIC, headers=admin)
    assert again.status_code == 409 and again.json()["error"]["code"] == "conflict"
    bad = api.post("/v1/rubrics", json={**RUBRIC, "name": "a b"}, headers=admin)
    assert bad.status_code == 422 and "name" in bad.json()["error"]["message"]

    listed = api.get("/v1/rubrics", headers=trainer).json()["rubrics"]
    assert [(r["name"], r["ref"], r["criteria"]) for r in listed] == [
        ("refund-desk", "refund-desk@1", 3)
    ]
    assert api.get("/v1/rubrics/refund-desk", headers=trainer).json()["version"] == 1
    assert api.get("/v1/rubrics/refund-desk?version=1", headers=trainer).json()["active"]
    missing = api.get("/v1/rubrics/refund-desk?version=2", headers=trainer)
    assert missing.status_code == 404 and "latest: 1" in missing.json()["error"]["message"]
    assert api.get("/v1/rubrics/nope", headers=trainer).status_code == 404
    assert api.get("/v1/rubrics", headers={}).status_code == 401


def test_a_written_version_never_changes(database_url: str):
    with session_scope(database_url) as session:
        row = rubrics.write_version(
            session=session, name="frozen", description="", criteria=[], created_by="t"
        )
    with pytest.raises(ValueError, match="immutable"), session_scope(database_url) as session:
        stored = rubrics.get_version(session=session, name="frozen")
        stored.description = "changed"
        session.flush()
    with session_scope(database_url) as session:
        assert rubrics.get_version(session=session, name="frozen").description == ""
        assert row.ref == "frozen@1"
