"""Storage on both real databases: migrations, batches, idempotent results, odd text."""

from __future__ import annotations

import math

import pytest
from sqlalchemy import func, select

from judge_service.core.batch_plan import BatchPlan, JudgeEntry
from judge_service.core.storage import audit
from judge_service.core.storage.db import schema_is_current, session_scope
from judge_service.core.storage.keys import create_key, find_key
from judge_service.core.storage.tables import ApiKeyRow, ResultRow, VerdictRow
from judge_service.core.storage.types import AsciiJSON
from judge_service.domain import Finding, Outcome, Verdict
from judge_service.scoring import store_batches as batches
from judge_service.scoring.store_results import ScoredSample, as_stored, load_outcomes, save_results
from tests.helpers import database_at

ODD = "nul\x00 lone\ud800 rtl\u202e emoji🚀"


def _batch(url: str, n: int = 3) -> tuple[str, list[int]]:
    with session_scope(url) as session:
        batch = batches.create_batch(
            session=session,
            batch_id="b1",
            samples=[
                {"id": f"s{i}", "prompt": ODD, "completion": ODD, "group_id": "g"} for i in range(n)
            ],
            plan=BatchPlan(judges=[JudgeEntry(name="reference_match")]),
            request_hash="h",
            timeout_s=60,
            idempotency_key="key-1",
        )
        session.flush()
        return batch.id, [s.id for s in batch.samples]


def _outcome(sid: str, reward: float) -> Outcome:
    return Outcome(
        id=sid,
        reward=reward,
        raw_reward=reward,
        valid=True,
        components={"judge/x": reward},
        judges=[Verdict(judge="x", score=reward, rationale=ODD)],
        findings=[Finding(detector="d", kind="k", severity="low", confidence=0.5, evidence=ODD)],
    )


def test_migrations_reach_head(database_url):
    assert schema_is_current(database_url)


@pytest.fixture(params=["sqlite", "postgresql"])
def old_database(request: pytest.FixtureRequest) -> str:
    return database_at(request, "0015")


def test_an_empty_or_older_database_is_not_current(old_database, sqlite_url):
    assert not schema_is_current(old_database)
    assert not schema_is_current(sqlite_url)  # no tables, not even alembic's


def test_batch_round_trip_keeps_odd_text(database_url):
    batch_id, _ = _batch(database_url)
    with session_scope(database_url) as session:
        batch = batches.get_batch(session=session, batch_id=batch_id)
        assert batch.n_samples == 3 and batch.status == "queued"
        assert [s.payload["prompt"] for s in batch.samples] == [ODD] * 3
        assert batches.find_by_idempotency_key(session=session, key="key-1").id == batch_id


def test_results_are_written_once_per_sample(database_url):
    batch_id, pks = _batch(database_url)
    scored = [ScoredSample(pk, i, _outcome(f"s{i}", 0.5)) for i, pk in enumerate(pks)]
    with session_scope(database_url) as session:
        assert save_results(session=session, batch_id=batch_id, scored=scored[:2]) == 2
    again = [ScoredSample(pk, i, _outcome(f"s{i}", 0.9)) for i, pk in enumerate(pks)]
    with session_scope(database_url) as session:  # a second run of the task
        assert save_results(session=session, batch_id=batch_id, scored=again) == 1
        assert batches.finish_if_complete(session=session, batch_id=batch_id)
    with session_scope(database_url) as session:
        count = session.scalar(select(func.count()).select_from(ResultRow))
        assert count == 3
        assert session.scalar(select(func.count()).select_from(VerdictRow)) == 3
        outcomes = load_outcomes(
            session=session, batch_id=batch_id, sample_ids={pk: f"s{i}" for i, pk in enumerate(pks)}
        )
    assert [o.reward for _, o in outcomes] == [0.5, 0.5, 0.9]
    assert outcomes[0][1].judges[0].rationale.startswith("nul")
    assert outcomes[0][1].findings[0].severity == "low"


def test_an_outcome_as_stored_is_what_reading_it_back_gives(database_url):
    """The embedded executor answers from memory: that answer must equal a later read."""
    batch_id, pks = _batch(database_url, n=2)
    long_reason = "why " * 3000  # over the 4,000-character column limit
    outcomes = [
        _outcome("s0", 0.25),
        Outcome.masked("s1", "judge_failed", long_reason + ODD, [Verdict(judge="x", error=ODD)]),
    ]
    scored = [ScoredSample(pk, i, o) for i, (pk, o) in enumerate(zip(pks, outcomes, strict=True))]
    with session_scope(database_url) as session:
        save_results(session=session, batch_id=batch_id, scored=scored)
    with session_scope(database_url) as session:
        read = load_outcomes(
            session=session, batch_id=batch_id, sample_ids={pk: f"s{i}" for i, pk in enumerate(pks)}
        )
    answered = [item.outcome for item in scored]
    assert [o.model_dump() for _, o in read] == [o.model_dump() for o in answered]
    assert "\x00" not in answered[0].judges[0].rationale and len(answered[1].failure_reason) == 4000
    assert as_stored(answered[0]) is answered[0]  # clean text is not copied again


def test_reading_without_verdicts_leaves_only_the_judges_out(database_url):
    """``verdicts=False`` (a compact answer's read) gives every outcome as a full read does,
    findings and components included, with no judges."""
    batch_id, pks = _batch(database_url, n=2)
    outcomes = [
        _outcome("s0", 0.75),
        Outcome.masked("s1", "judge_failed", "no verdict", [Verdict(judge="x", error="boom")]),
    ]
    scored = [ScoredSample(pk, i, o) for i, (pk, o) in enumerate(zip(pks, outcomes, strict=True))]
    with session_scope(database_url) as session:
        save_results(session=session, batch_id=batch_id, scored=scored)
    ids = {pk: f"s{i}" for i, pk in enumerate(pks)}
    with session_scope(database_url) as session:
        full = load_outcomes(session=session, batch_id=batch_id, sample_ids=ids)
        short = load_outcomes(session=session, batch_id=batch_id, sample_ids=ids, verdicts=False)
    assert [len(o.judges) for _, o in full] == [1, 1]
    assert [o.judges for _, o in short] == [[], []]
    assert [(p, o.model_dump(exclude={"judges"})) for p, o in short] == [
        (p, o.model_dump(exclude={"judges"})) for p, o in full
    ]
    assert short[0][1].findings[0].evidence == full[0][1].findings[0].evidence


def test_unscored_samples_shrink_as_results_land(database_url):
    batch_id, pks = _batch(database_url)
    with session_scope(database_url) as session:
        save_results(
            session=session,
            batch_id=batch_id,
            scored=[ScoredSample(pks[1], 1, _outcome("s1", 1.0))],
        )
    with session_scope(database_url) as session:
        left = batches.unscored_samples(session=session, batch_id=batch_id)
        assert [s.position for s in left] == [0, 2]
        assert not batches.finish_if_complete(session=session, batch_id=batch_id)


def test_keys_are_stored_hashed(database_url):
    with session_scope(database_url) as session:
        row, plain = create_key(session=session, role="reviewer")
    with session_scope(database_url) as session:
        stored = session.get(ApiKeyRow, row.id)
        assert stored.key_hash != plain and plain not in stored.key_hash
        assert find_key(session=session, key=plain).role == "reviewer"
        assert find_key(session=session, key=plain + "x") is None


def test_audit_log_appends(database_url):
    with session_scope(database_url) as session:
        audit.record(
            session=session,
            actor="cli",
            action="key.create",
            target="k1",
            detail={"role": "admin", "note": ODD},
        )
    with session_scope(database_url) as session:
        (entry,) = audit.entries(session=session, action="key.create")
        assert entry.actor == "cli" and entry.detail["role"] == "admin"


def test_json_columns_store_ascii_and_read_back_every_value():
    """Both encoders of the JSON columns (pydantic-core for ASCII, ``json`` for the rest)
    give ASCII text that reads back to the same value: numbers JSON has no literal for,
    big integers, and text with NUL, lone surrogates and other non-ASCII characters."""
    column = AsciiJSON()
    values = [
        {"nan": math.nan, "inf": math.inf, "-inf": -math.inf, "big": 2**70, "small": 1e-7},
        {"text": "plain", "list": [1, 2.5, None, True], "nested": {"k": ["v"]}},
        {"odd": ODD},
        {"café": "naïve ü", "emoji": "🚀"},
        "\ud800",
    ]
    for value in values:
        stored = column.process_bind_param(value, None)
        assert stored is not None and stored.isascii(), stored
        back = column.process_result_value(stored, None)
        if isinstance(value, dict) and "nan" in value:
            assert math.isnan(back.pop("nan")) and math.isnan(value["nan"])
            value = {k: v for k, v in value.items() if k != "nan"}
        assert back == value
