"""Migration 0009 on both databases: rows written before projects land in ``default``, admin
keys become all-projects keys, and rubric names become unique per project."""

from __future__ import annotations

import json

import pytest
from sqlalchemy import create_engine, text
from sqlalchemy.exc import IntegrityError

from judge_service.core.storage.db import dispose_engines, upgrade
from tests.helpers import database_at

NOW = "2026-11-30 12:00:00+00:00"


@pytest.fixture(params=["sqlite", "postgresql"])
def old_url(request: pytest.FixtureRequest) -> str:
    """A database at 0006 (before projects), on each real database."""
    return database_at(request, "0006")


def _insert_old_rows(url: str) -> None:
    empty = json.dumps({})
    engine = create_engine(url)
    with engine.begin() as db:
        for key_id, role in (("k-admin", "admin"), ("k-trainer", "trainer")):
            db.execute(
                text(
                    "INSERT INTO api_keys (id, role, key_hash, created_at) "
                    "VALUES (:id, :role, :hash, :at)"
                ),
                {"id": key_id, "role": role, "hash": key_id * 4, "at": NOW},
            )
        db.execute(
            text(
                "INSERT INTO batches (id, status, created_at, deadline_at, timeout_s, run_id, "
                "plan, request_hash, n_samples) VALUES ('b-old', 'done', :at, :at, 60, 'old-run', "
                ":plan, 'h', 0)"
            ),
            {"at": NOW, "plan": empty},
        )
        db.execute(
            text(
                "INSERT INTO rubric_versions (name, version, description, criteria, prompts, "
                "status, created_at) VALUES ('legacy', 1, '', '[]', :empty, 'approved', :at)"
            ),
            {"at": NOW, "empty": empty},
        )
        db.execute(
            text(
                "INSERT INTO review_items (kind, status, dedupe_key, priority, payload, evidence, "
                "created_at, batch_id) VALUES ('hack_finding', 'pending', 'old:1', 0.5, :empty, "
                ":empty, :at, 'b-old')"
            ),
            {"at": NOW, "empty": empty},
        )
        db.execute(
            text(
                "INSERT INTO mining_jobs (id, rubric, run_id, max_items, status, created_at) "
                "VALUES ('m-old', 'legacy', 'old-run', 3, 'done', :at)"
            ),
            {"at": NOW},
        )
        db.execute(
            text(
                "INSERT INTO forge_jobs (id, kind, status, options, inputs, created_at) "
                "VALUES ('f-old', 'traces', 'done', :empty, '\"\"', :at)"
            ),
            {"at": NOW, "empty": empty},
        )
        db.execute(
            text(
                "INSERT INTO known_hacks (confirmed, sample, finding, hack_score, reviewer, "
                "created_at) VALUES (:yes, :empty, :empty, 0.9, 'k-admin', :at)"
            ),
            {"at": NOW, "empty": empty, "yes": True},
        )
    engine.dispose()


def test_upgrade_from_0006_puts_existing_rows_into_default(old_url: str) -> None:
    _insert_old_rows(old_url)
    upgrade(old_url)
    dispose_engines()
    engine = create_engine(old_url)
    with engine.connect() as db:
        for table in (
            "batches",
            "rubric_versions",
            "review_items",
            "mining_jobs",
            "forge_jobs",
            "known_hacks",
        ):
            projects = db.execute(text(f"SELECT DISTINCT project FROM {table}")).scalars().all()
            assert projects == ["default"], table
        keys = dict(db.execute(text("SELECT id, project FROM api_keys")).all())
        assert keys == {"k-admin": "*", "k-trainer": "default"}
    insert = text(
        "INSERT INTO rubric_versions (project, name, version, description, criteria, prompts, "
        "status, created_at) VALUES (:project, 'legacy', 1, '', '[]', '{}', 'approved', :at)"
    )
    with engine.begin() as db:  # the same name and version in another project is fine
        db.execute(insert, {"project": "team-b", "at": NOW})
    with pytest.raises(IntegrityError), engine.begin() as db:  # in the same project it is not
        db.execute(insert, {"project": "default", "at": NOW})
    with engine.begin() as db:  # a row written without a project is a default row
        db.execute(
            text(
                "INSERT INTO forge_jobs (id, kind, status, options, inputs, created_at) "
                "VALUES ('f-new', 'traces', 'queued', '{}', '\"\"', :at)"
            ),
            {"at": NOW},
        )
        assert db.execute(text("SELECT project FROM forge_jobs WHERE id = 'f-new'")).scalar() == (
            "default"
        )
    engine.dispose()


def test_downgrade_to_0006_and_up_again(old_url: str) -> None:
    _insert_old_rows(old_url)
    upgrade(old_url)
    from alembic import command

    from judge_service.core.storage.db import alembic_config

    command.downgrade(alembic_config(old_url), "0006")
    dispose_engines()
    engine = create_engine(old_url)
    with engine.connect() as db:
        assert db.execute(text("SELECT COUNT(*) FROM batches")).scalar() == 1
        columns = db.execute(text("SELECT * FROM batches")).keys()
        assert "project" not in columns
    engine.dispose()
    upgrade(old_url)
