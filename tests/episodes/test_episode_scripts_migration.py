"""Migration 0016 on both databases: an episode's script moves to ``episode_scripts`` with
nothing lost, the episode still plays from it, and a downgrade puts it back."""

from __future__ import annotations

import json

import pytest
from alembic import command
from sqlalchemy import create_engine, inspect, text

from judge_service.core.storage.db import alembic_config, dispose_engines, get_engine, upgrade
from judge_service.episodes import store
from tests.helpers import database_at

NOW = "2026-12-04 12:00:00+00:00"
SCRIPT = {"task_id": "t1", "system": "Be kind. ✓ 𝄞", "tools": [{"name": "find"}]}


@pytest.fixture(params=["sqlite", "postgresql"])
def old_url(request: pytest.FixtureRequest) -> str:
    """A database at 0015 (scripts in the episodes row), on each real database."""
    return database_at(request, "0015")


def _columns(url: str, table: str) -> set[str]:
    engine = create_engine(url)
    try:
        return {c["name"] for c in inspect(engine).get_columns(table)}
    finally:
        engine.dispose()


def test_scripts_move_to_their_table_and_back(old_url: str) -> None:
    engine = create_engine(old_url)
    with engine.begin() as db:
        for episode_id in ("e1", "e2"):
            db.execute(
                text(
                    "INSERT INTO episodes (id, world_id, task_id, project, key_id, seed, status, "
                    "version, created_at, updated_at, episode, script) VALUES (:id, 'w', 't1', "
                    "'default', 'k', 0, 'open', 3, :at, :at, :episode, :script)"
                ),
                {
                    "id": episode_id,
                    "at": NOW,
                    "episode": json.dumps({"turns": 3}),
                    "script": json.dumps({**SCRIPT, "task_id": episode_id}),
                },
            )
    engine.dispose()
    dispose_engines()

    upgrade(old_url)
    assert "script" not in _columns(old_url, "episodes")
    with get_engine(old_url).connect() as connection:
        assert store.read_script(connection, "e1") == {**SCRIPT, "task_id": "e1"}
        assert store.read_script(connection, "e2")["task_id"] == "e2"
        step = store.read_step(connection, "e1")
        assert step.version == 3 and step.episode == {"turns": 3}
    dispose_engines()

    config = alembic_config(old_url)
    with get_engine(old_url).begin() as connection:
        config.attributes["connection"] = connection
        command.downgrade(config, "0015")
    dispose_engines()
    assert "script" in _columns(old_url, "episodes")
    engine = create_engine(old_url)
    with engine.connect() as db:
        rows = db.execute(text("SELECT id, script FROM episodes ORDER BY id")).all()
    engine.dispose()
    scripts = {i: s if isinstance(s, dict) else json.loads(s) for i, s in rows}
    assert scripts == {"e1": {**SCRIPT, "task_id": "e1"}, "e2": {**SCRIPT, "task_id": "e2"}}
