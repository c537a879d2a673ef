"""Settled outcomes: committed as one row before the answer, written out as results after.

Whoever writes a settled row out (the fast path after its answer, a poll, the deadline
expiry, a restart), what is stored is what was answered, and nothing scores it again.
"""

from __future__ import annotations

from datetime import timedelta

import pytest
from fastapi.testclient import TestClient
from pydantic import ValidationError
from sqlalchemy import func, select

from judge_service import wire
from judge_service.api.app import create_app
from judge_service.domain import CallUsage, JudgeScore, Outcome, Verdict
from judge_service.errors import UnknownJudge
from judge_service.panels import build_member
from judge_service.registry import Registry
from judge_service.settings import get_settings
from judge_service.storage import batches, settled
from judge_service.storage.db import get_engine, session_scope
from judge_service.storage.results import ScoredSample, load_outcomes, save_results
from judge_service.storage.tables import BatchRow, ResultRow, SettledRow, VerdictRow
from judge_service.storage.types import utcnow
from judge_service.worker.tasks import expire_batch, score_batch
from tests.conftest import make_key

ODD = "nul\x00 rtl\u202e emoji🚀"


def _stored_batch(url: str, batch_id: str = "b1", n: int = 3, timeout_s: float = 60) -> list[int]:
    """A running batch whose only judge always fails: scoring it again would mask every
    sample as ``judge_failed``, never give the settled rewards."""
    with session_scope(url) as session:
        batch = batches.create_batch(
            session=session,
            batch_id=batch_id,
            samples=[{"id": f"s{i}", "prompt": "2+2?", "completion": "4"} for i in range(n)],
            plan={"judges": [{"name": "always_fails"}], "aggregator": "mean"},
            request_hash="h",
            timeout_s=timeout_s,
            status="running",
        )
        session.flush()
        return [s.id for s in batch.samples]


def _scored(pks: list[int]) -> list[ScoredSample]:
    outcomes = [
        Outcome(
            id=f"s{i}",
            reward=0.25 * (i + 1),
            raw_reward=0.25 * (i + 1),
            valid=True,
            components={"judge/x": 0.25 * (i + 1)},
            judges=[Verdict(judge="x", score=0.25 * (i + 1), rationale=ODD)],
        )
        for i in range(len(pks) - 1)
    ]
    outcomes.append(Outcome.masked(f"s{len(pks) - 1}", "bad_sample", ODD))
    return [ScoredSample(pk, i, o) for i, (pk, o) in enumerate(zip(pks, outcomes, strict=True))]


def _settle(url: str, batch_id: str, scored: list[ScoredSample]) -> bool:
    with get_engine(url).begin() as connection:
        return settled.settle(connection=connection, batch_id=batch_id, scored=scored)


def _stored(url: str, batch_id: str, pks: list[int]) -> list[Outcome]:
    with session_scope(url) as session:
        ids = {pk: f"s{i}" for i, pk in enumerate(pks)}
        return [o for _, o in load_outcomes(session=session, batch_id=batch_id, sample_ids=ids)]


def _counts(url: str) -> tuple[int, int, int]:
    with session_scope(url) as session:
        return tuple(  # type: ignore[return-value]
            session.scalar(select(func.count()).select_from(table))
            for table in (SettledRow, ResultRow, VerdictRow)
        )


def _status(url: str, batch_id: str) -> str:
    with session_scope(url) as session:
        return session.get(BatchRow, batch_id).status


def test_a_settled_batch_is_written_out_once_as_what_was_settled(database_url):
    pks = _stored_batch(database_url)
    scored = _scored(pks)
    assert _settle(database_url, "b1", scored)
    assert _counts(database_url) == (1, 0, 0)  # one row; no result yet
    assert _status(database_url, "b1") == "running"
    with session_scope(database_url) as session:
        assert [s.outcome for s in settled.pending(session=session, batch_id="b1")] == [
            s.outcome for s in scored
        ]
    for _ in range(2):  # a second write-out (a poll racing the fast path) changes nothing
        with session_scope(database_url) as session:
            settled.write_out(session=session, batch_id="b1", scored=scored)
        assert _counts(database_url) == (0, 3, 2)
    assert _status(database_url, "b1") == "done"
    assert _stored(database_url, "b1", pks) == [s.outcome for s in scored]


def test_settling_is_refused_once_a_result_or_a_settled_row_exists(database_url):
    pks = _stored_batch(database_url)
    scored = _scored(pks)
    with session_scope(database_url) as session:
        save_results(session=session, batch_id="b1", scored=scored[:1])
    assert not _settle(database_url, "b1", scored)
    assert _counts(database_url) == (0, 1, 1)

    pks = _stored_batch(database_url, batch_id="b2")
    assert _settle(database_url, "b2", _scored(pks))
    assert not _settle(database_url, "b2", _scored(pks))  # one settled row per batch
    assert not _settle(database_url, "missing", _scored(pks))


def test_the_deadline_expiry_writes_settled_outcomes_out_instead_of_timeouts(database_url):
    pks = _stored_batch(database_url, timeout_s=0.01)
    scored = _scored(pks)
    assert _settle(database_url, "b1", scored)
    with session_scope(database_url) as session:  # well past the deadline
        session.get(BatchRow, "b1").deadline_at = utcnow() - timedelta(seconds=5)
    assert expire_batch("b1", database_url=database_url)
    stored = _stored(database_url, "b1", pks)
    assert stored == [s.outcome for s in scored]
    assert all(o.failure_kind != "timeout" for o in stored)


def test_a_restart_writes_settled_outcomes_out_without_judging_again(embedded_settings):
    """The process answered and stopped before writing out: the embedded executor's
    resume on start stores the settled outcomes; it does not call the judges again
    (this batch's only judge always fails)."""
    url = embedded_settings.database_url
    pks = _stored_batch(url)
    scored = _scored(pks)
    assert _settle(url, "b1", scored)
    assert score_batch("b1", settings=embedded_settings, registry=Registry()) == "done"
    assert _stored(url, "b1", pks) == [s.outcome for s in scored]
    assert _counts(url) == (0, 3, 2)

    pks = _stored_batch(url, batch_id="b2")
    assert _settle(url, "b2", _scored(pks))
    with TestClient(create_app(embedded_settings)) as client:  # resume_unfinished on start
        client.app.state.dispatcher.pool.shutdown(wait=True)  # let the resumed batch finish
    assert _status(url, "b2") == "done"
    assert [o.reward for o in _stored(url, "b2", pks)] == [0.25, 0.5, None]


def test_the_answer_is_committed_before_its_results_and_a_read_sees_it(database_url):
    """The fast path (embedded, on either database) answers from the settled row; the
    results are written out later (here: held back), and a GET in between writes them
    out and answers the same."""
    url = database_url
    settings = get_settings(database_url=url, broker_url=None, cache_url=None)
    keys = {"trainer": {"Authorization": f"Bearer {make_key(url, 'trainer')}"}}
    with TestClient(create_app(settings)) as client:
        client.app.state.dispatcher.write_outs.delay_s = 600  # hold write-outs back
        body = {
            "samples": [
                {"id": "right", "prompt": "2+2?", "completion": "4", "reference": "4"},
                {"id": "wrong", "prompt": "2+2?", "completion": "5", "reference": "4"},
                {"id": "blank", "prompt": "2+2?", "completion": " ", "reference": "4"},
            ],
            "judges": ["reference_match"],
        }
        answer = client.post("/v1/rewards", json=body, headers=keys["trainer"])
        assert answer.status_code == 200, answer.text
        answered = answer.json()
        assert [r["reward"] for r in answered["results"]] == [1.0, 0.0, None]
        batch_id = answered["batch_id"]
        assert _counts(url) == (1, 0, 0) and _status(url, batch_id) == "running"
        read = client.get(f"/v1/rewards/{batch_id}", headers=keys["trainer"])
        assert read.status_code == 200 and read.json() == answered
        assert _counts(url) == (0, 3, 2) and _status(url, batch_id) == "done"

        client.post("/v1/rewards", json=body, headers=keys["trainer"])
        assert _counts(url)[0] == 1
    assert _counts(url) == (0, 6, 4)  # shutdown writes out what was answered


def test_a_write_out_waits_for_a_judge_wait_or_its_delay():
    """Write-outs start when a batch's judge calls are out (``start_waiting``), after
    ``delay_s`` when none comes, or at once when asked; a failing one fails its future."""
    import asyncio

    import pytest

    from judge_service.worker.write_outs import DeferredWriteOuts

    async def scenario() -> list[str]:
        ran: list[str] = []
        held = DeferredWriteOuts(delay_s=600)
        kicked = held.add(lambda: ran.append("kicked"))
        await asyncio.sleep(0.05)
        assert ran == []  # held back: no batch started, and the delay is long
        held.start_waiting()
        await asyncio.wait_for(kicked, 5)
        timed = DeferredWriteOuts(delay_s=0.05)
        later = timed.add(lambda: ran.append("after the delay"))
        await asyncio.wait_for(later, 5)
        failing = held.add(lambda: 1 / 0, now=True)
        with pytest.raises(ZeroDivisionError):
            await asyncio.wait_for(failing, 5)
        last = held.add(lambda: ran.append("on wait"))
        await held.wait(timeout=5)  # a read in the process: starts and waits for the rest
        assert last.done()
        return ran

    assert asyncio.run(scenario()) == ["kicked", "after the delay", "on wait"]


@pytest.mark.parametrize("odd", [float("nan"), float("inf"), float("-inf")])
def test_no_nan_or_infinity_reaches_an_outcome_so_a_settled_row_always_reads_back(odd):
    """JSON holds neither: pydantic-core would write null, which would not read back. So
    they are refused where numbers enter an outcome: a judge's score and components, the
    usage, a judge's weight (request or default), and the consensus (tested in
    ``test_pipeline``)."""
    with pytest.raises(ValidationError):
        JudgeScore(score=0.5, components={"c": odd})
    with pytest.raises(ValidationError):
        CallUsage(cost_usd=odd)
    with pytest.raises(ValidationError) as weight:
        wire.RewardRequest.model_validate(
            {
                "samples": [{"id": "s", "prompt": "p", "completion": "c"}],
                "judges": [{"name": "reference_match", "weight": odd}],
            }
        )
    locations = [error["loc"] for error in weight.value.errors()]
    assert ("judges", 0, "JudgeSpecObject", "weight") in locations
    with pytest.raises(UnknownJudge):
        build_member({"name": "reference_match", "weight": odd}, registry=Registry(), extra={})
