"""The batch plan at the storage boundary: what the API stores is what the worker reads,
in the JSON shape rows had before the plan was typed, and such rows still load."""

from __future__ import annotations

import json

import pytest
from sqlalchemy import text
from sqlalchemy.exc import StatementError

from judge_service.core.batch_plan import BatchPlan, CalibrationMap, JudgeEntry, ModelEntry
from judge_service.core.registry import Registry
from judge_service.core.settings import get_settings
from judge_service.core.storage.db import session_scope
from judge_service.domain import Rubric
from judge_service.scoring import store_batches as batches
from judge_service.scoring.job_offline import batch_plan_for

FULL = BatchPlan(
    judges=[
        JudgeEntry(name="reference_match"),
        JudgeEntry.model_validate({"name": "openai/j", "weight": 2.0, "endpoint": "vllm-a"}),
    ],
    aggregator="mean",
    quorum=1,
    detectors=["test_tampering"],
    hindsight=[ModelEntry.model_validate({"name": "openai/h", "endpoint": "vllm-a"})],
    penalty="scale",
    rubric=Rubric(name="refunds", version=3),
    calibration={"reference_match": CalibrationMap(x=[0.0, 1.0], y=[0.1, 0.9])},
    warnings=["slow local judge"],
)

#: A plan as the API stored it when it was a dict (no rubric, calibration or warnings keys).
OLD_ROW = {
    "judges": [{"name": "openai/j", "weight": 1.0, "endpoint": "vllm-a"}],
    "aggregator": "mean",
    "quorum": None,
    "detectors": ["test_tampering"],
    "hindsight": None,
    "penalty": "floor",
}


def _store(url: str, plan: object, batch_id: str = "b1") -> None:
    with session_scope(url) as session:
        batches.create_batch(
            session=session,
            batch_id=batch_id,
            samples=[{"id": "s0", "prompt": "p", "completion": "c"}],
            plan=plan,  # type: ignore[arg-type]
            request_hash="h",
            timeout_s=60,
        )


def _raw_plan(url: str, batch_id: str = "b1") -> dict:
    with session_scope(url) as session:
        stored = session.execute(
            text("SELECT plan FROM batches WHERE id = :id"), {"id": batch_id}
        ).scalar_one()
    return json.loads(stored)


def test_a_stored_plan_reads_back_equal(database_url: str) -> None:
    _store(database_url, FULL)
    with session_scope(database_url) as session:
        batch = batches.get_batch(session=session, batch_id="b1")
        assert batch is not None and batch.plan == FULL
        assert batch.plan.rubric_ref == "refunds@3"


def test_the_stored_json_keeps_the_dict_shape(database_url: str) -> None:
    _store(database_url, FULL)
    raw = _raw_plan(database_url)
    assert set(OLD_ROW) <= set(raw)
    assert raw["judges"][1] == {"name": "openai/j", "weight": 2.0, "endpoint": "vllm-a"}
    assert raw["hindsight"] == [{"name": "openai/h", "endpoint": "vllm-a"}]  # no weight
    assert raw["rubric"]["name"] == "refunds" and raw["rubric"]["version"] == 3
    assert raw["calibration"] == {"reference_match": {"x": [0.0, 1.0], "y": [0.1, 0.9]}}


@pytest.mark.parametrize(
    "row",
    [OLD_ROW, {}, {**OLD_ROW, "judges": ["reference_match"], "retired_key": 1}],
    ids=["dict-era", "empty", "bare-names-and-unknown-keys"],
)
def test_plans_stored_before_the_model_still_load(database_url: str, row: dict) -> None:
    _store(database_url, BatchPlan())
    with session_scope(database_url) as session:
        session.execute(
            text("UPDATE batches SET plan = :plan WHERE id = 'b1'"), {"plan": json.dumps(row)}
        )
    with session_scope(database_url) as session:
        batch = batches.get_batch(session=session, batch_id="b1")
        assert batch is not None
        plan = batch.plan
    assert isinstance(plan, BatchPlan) and plan.rubric is None and plan.warnings == []
    assert [j.as_spec() for j in plan.judges] == [
        j if isinstance(j, dict) else {"name": j, "weight": 1.0} for j in row.get("judges", [])
    ]


def test_a_dict_is_not_a_plan(migrated_sqlite_url: str) -> None:
    with pytest.raises(StatementError, match="BatchPlan"):
        _store(migrated_sqlite_url, dict(OLD_ROW))


def test_judge_service_score_builds_the_plan_the_api_would_store(sqlite_url: str) -> None:
    settings = get_settings(database_url=sqlite_url, broker_url=None, cache_url=None)
    plan = batch_plan_for(
        settings=settings,
        registry=Registry(),
        judges=["reference_match", '{"name": "numeric_match", "weight": 2}'],
        aggregator=None,
        audit=False,
    )
    assert isinstance(plan, BatchPlan)
    assert [(j.name, j.weight) for j in plan.judges] == [
        ("reference_match", 1.0),
        ("numeric_match", 2.0),
    ]
    assert plan.aggregator == settings.default_aggregator and plan.detectors == []
