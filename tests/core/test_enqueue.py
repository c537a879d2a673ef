"""Work the queue refuses: a 503, and the committed row undone (a batch removed, a mining or
forge job finished as failed), through the one submit helper all three routes share."""

from __future__ import annotations

import json
from typing import Any

import pytest
from fastapi.testclient import TestClient
from sqlalchemy import func, select

from judge_service.core.api.enqueue import submit_or_undo
from judge_service.core.errors import Unavailable
from judge_service.core.settings import Settings
from judge_service.core.storage.db import session_scope
from judge_service.core.storage.tables import BatchRow
from judge_service.forge.tables import ForgeJobRow
from judge_service.review.tables import MiningJobRow
from tests.forge_data import traces
from tests.forge_support import JSONL
from tests.review_support import RUBRIC, samples


def refuse(*args: Any) -> None:
    raise ConnectionError("the broker is down")


def test_submit_or_undo_undoes_only_a_submit_that_failed() -> None:
    calls: list[str] = []
    submit_or_undo(lambda: calls.append("sent"), lambda: calls.append("undone"))
    assert calls == ["sent"]
    with pytest.raises(Unavailable) as caught:
        submit_or_undo(refuse, lambda: calls.append("undone"))
    assert calls == ["sent", "undone"]
    assert caught.value.status_code == 503
    assert str(caught.value) == "the task queue is unavailable: ConnectionError"
    assert isinstance(caught.value.__cause__, ConnectionError)


def assert_unavailable(response: Any) -> None:
    assert response.status_code == 503, response.text
    error = response.json()["error"]
    assert error["code"] == "unavailable"
    assert error["message"] == "the task queue is unavailable: ConnectionError"


def test_a_batch_the_queue_refuses_is_not_kept(
    client: TestClient, keys: dict, embedded_settings: Settings, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setattr(client.app.state.dispatcher, "submit", refuse)
    body = {"judges": ["reference_match"], "samples": samples(2)}
    assert_unavailable(client.post("/v1/rewards", json=body, headers=keys["trainer"]))
    with session_scope(embedded_settings.database_url) as session:
        assert session.scalar(select(func.count()).select_from(BatchRow)) == 0


def test_a_mining_job_the_queue_refuses_is_failed(
    client: TestClient, keys: dict, embedded_settings: Settings, monkeypatch: pytest.MonkeyPatch
) -> None:
    admin = keys["admin"]
    assert client.post("/v1/rubrics", json=RUBRIC, headers=admin).status_code == 201
    batch = {"judges": ["reference_match"], "samples": samples(2), "run_id": "r1"}
    assert client.post("/v1/rewards", json=batch, headers=admin).status_code == 200
    monkeypatch.setattr(client.app.state.dispatcher, "submit_task", refuse)
    mine = client.post(f"/v1/rubrics/{RUBRIC['name']}/mine", json={"run_id": "r1"}, headers=admin)
    assert_unavailable(mine)
    with session_scope(embedded_settings.database_url) as session:
        (job,) = session.scalars(select(MiningJobRow)).all()
        assert (job.status, job.error) == ("failed", "queue unavailable")


def test_a_forge_job_the_queue_refuses_is_failed(
    client: TestClient, keys: dict, embedded_settings: Settings, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setattr(client.app.state.dispatcher, "submit_task", refuse)
    text = "".join(json.dumps(t) + "\n" for t in traces())
    headers = {**keys["reviewer"], **JSONL}
    assert_unavailable(client.post("/v1/forge/traces", content=text, headers=headers))
    with session_scope(embedded_settings.database_url) as session:
        (job,) = session.scalars(select(ForgeJobRow)).all()
        assert (job.status, job.error) == ("failed", "queue unavailable")
