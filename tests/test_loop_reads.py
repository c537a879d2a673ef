"""The idempotency-key read the event loop makes itself on SQLite (``storage.loop_reads``)."""

from __future__ import annotations

from pathlib import Path

import pytest

from judge_service.storage import batches, loop_reads
from judge_service.storage.db import session_scope, upgrade


@pytest.fixture(autouse=True)
def _fresh_connections():
    loop_reads.close()
    yield
    loop_reads.close()


def _store(url: str, key: str) -> None:
    with session_scope(url) as session:
        batches.create_batch(
            session=session,
            batch_id=f"b-{key}",
            samples=[{"id": "s0", "prompt": "p", "completion": "c"}],
            plan={"judges": [{"name": "reference_match", "weight": 1.0}]},
            request_hash="h",
            timeout_s=60,
            idempotency_key=key,
        )


def test_a_key_is_seen_once_committed_on_a_sqlite_file(tmp_path: Path):
    url = f"sqlite:///{tmp_path / 'odd name #1?.db'}"  # URI characters in the file name
    upgrade(url)
    assert loop_reads.idempotency_key_taken(url, "step-7/chunk-0") is False
    _store(url, "step-7/chunk-0")
    # the same connection, kept open: it sees what another connection committed since
    assert loop_reads.idempotency_key_taken(url, "step-7/chunk-0") is True
    assert loop_reads.idempotency_key_taken(url, "step-7/chunk-1") is False


def test_other_databases_are_left_to_a_thread(tmp_path: Path, postgres_url: str):
    assert loop_reads.idempotency_key_taken(postgres_url, "k") is None
    assert loop_reads.idempotency_key_taken("sqlite://", "k") is None
    assert loop_reads.idempotency_key_taken("sqlite:///:memory:", "k") is None
    uri = f"sqlite:///file:{tmp_path / 'x.db'}?mode=ro&uri=true"
    assert loop_reads.idempotency_key_taken(uri, "k") is None


def test_a_database_it_cannot_read_is_left_to_a_thread_and_not_created(tmp_path: Path):
    missing = tmp_path / "missing.db"
    assert loop_reads.idempotency_key_taken(f"sqlite:///{missing}", "k") is None
    assert not missing.exists()  # read-only: no empty database appears
    unmigrated = tmp_path / "empty.db"
    unmigrated.touch()
    assert loop_reads.idempotency_key_taken(f"sqlite:///{unmigrated}", "k") is None
