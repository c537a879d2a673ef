"""Mining and forge jobs whose message the broker lost: found, claimed once per quiet
period, and re-sent by a worker's sweeper, on both real databases."""

from __future__ import annotations

import threading
from datetime import timedelta

from judge_service.core.settings import get_settings
from judge_service.core.storage import lost_jobs
from judge_service.core.storage.db import session_scope
from judge_service.core.storage.lost_jobs import LostJob
from judge_service.core.storage.types import utcnow
from judge_service.core.worker.lease import Leases
from judge_service.core.worker.liveness import Liveness
from judge_service.forge import store as forge_store
from judge_service.review import store_mining as mining

QUIET_S = 10


def _jobs(url: str) -> tuple[str, str]:
    """A queued mining job and a queued forge job; returns their ids."""
    with session_scope(url) as session:
        mined = mining.create_job(
            session=session, rubric="r", run_id="run", model=None, max_items=3, created_by=None
        )
        forged = forge_store.create_job(
            session=session, kind="traces", options={}, inputs=[], created_by=None
        )
        return mined.id, forged.id


def _lost(url: str, seconds_later: float) -> list[LostJob]:
    now = utcnow() + timedelta(seconds=seconds_later)
    with session_scope(url) as session:
        return lost_jobs.lost_jobs(session=session, quiet_s=QUIET_S, now=now)


def _claim(url: str, job: LostJob, seconds_later: float) -> bool:
    now = utcnow() + timedelta(seconds=seconds_later)
    with session_scope(url) as session:
        return lost_jobs.claim_redispatch(session=session, job=job, quiet_s=QUIET_S, now=now)


def test_queued_jobs_are_lost_only_after_the_quiet_period_and_claimed_once(database_url):
    mined, forged = _jobs(database_url)
    assert _lost(database_url, 0) == []  # just sent: its message may be in the queue
    lost = _lost(database_url, QUIET_S + 1)
    assert set(lost) == {LostJob("mining", mined), LostJob("forge", forged)}
    assert _claim(database_url, LostJob("mining", mined), QUIET_S + 1)
    assert not _claim(database_url, LostJob("mining", mined), QUIET_S + 1)  # claimed already
    assert _lost(database_url, QUIET_S + 2) == [LostJob("forge", forged)]
    # another quiet period after the re-send, still queued: lost again
    assert LostJob("mining", mined) in _lost(database_url, 2 * QUIET_S + 2)


def test_started_or_finished_jobs_are_never_lost(database_url):
    mined, forged = _jobs(database_url)
    with session_scope(database_url) as session:
        assert mining.start_job(session=session, job_id=mined)
        assert forge_store.start_job(session=session, job_id=forged)
        forge_store.finish_job(session=session, job_id=forged, counts={}, result={})
    assert _lost(database_url, QUIET_S + 1) == []
    assert not _claim(database_url, LostJob("mining", mined), QUIET_S + 1)


def test_racing_sweepers_re_send_a_lost_job_once(database_url):
    mined, _ = _jobs(database_url)
    start = threading.Barrier(6)
    claims: list[bool] = []

    def race() -> None:
        start.wait()
        claims.append(_claim(database_url, LostJob("mining", mined), QUIET_S + 1))

    threads = [threading.Thread(target=race) for _ in range(6)]
    for thread in threads:
        thread.start()
    for thread in threads:
        thread.join(timeout=60)
    assert sorted(claims) == [False] * 5 + [True]


def test_an_idle_workers_sweeper_re_sends_lost_jobs_and_a_busy_ones_does_not(database_url):
    settings = get_settings(database_url=database_url, lease_s=QUIET_S)
    mined, forged = _jobs(database_url)
    old = utcnow() - timedelta(seconds=QUIET_S + 5)
    with session_scope(database_url) as session:  # sent long ago, never started
        mining.get_job(session=session, job_id=mined).created_at = old
        forge_store.get_job(session=session, job_id=forged).created_at = old
    sent: list[tuple[str, str]] = []
    holder = Leases(database_url, QUIET_S)
    liveness = Liveness(settings, holder, send=lambda _: None, send_job=lambda *a: sent.append(a))

    holder.task_started()  # busy: the queue may hold their messages still
    assert liveness.sweep() == 0 and sent == []
    holder.task_finished()
    holder._idle_since = holder._idle_since - QUIET_S  # free for a whole lease since
    assert liveness.sweep() == 2
    assert sorted(sent) == [("forge", forged), ("mining", mined)]
    assert liveness.sweep() == 0 and len(sent) == 2  # once per quiet period
