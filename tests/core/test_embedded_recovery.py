"""The embedded executor is a worker like a Celery one: it scores a batch under its lease,
beats and sweeps, and so picks up what a dead process left, on both real databases."""

from __future__ import annotations

import os
import time
from collections.abc import Callable
from datetime import datetime, timedelta

from fastapi.testclient import TestClient
from sqlalchemy import select

from judge_service.core.api.app import create_app
from judge_service.core.batch_plan import BatchPlan, JudgeEntry
from judge_service.core.registry import Registry
from judge_service.core.settings import get_settings
from judge_service.core.storage import leases, workers
from judge_service.core.storage.db import session_scope, upgrade
from judge_service.core.storage.tables import BatchRow
from judge_service.core.storage.types import utcnow
from judge_service.core.worker.inprocess import InProcessDispatcher
from judge_service.core.worker.lease import Leases
from judge_service.core.worker.liveness import Liveness
from judge_service.forge import store as forge_store
from judge_service.review import store_mining as mining
from judge_service.scoring import store_batches as batches

#: Long enough that a sweep after the first needs 30 s of idling: only the first, run as
#: the executor starts, can score a batch within the tests' deadlines.
LONG_LEASE_S = 60
DEAD, OTHER = "gone-host:1:dead", "other-host:2:live"


def _batch(url: str, batch_id: str, *, created_at: datetime) -> None:
    with session_scope(url) as session:
        batches.create_batch(
            session=session,
            batch_id=batch_id,
            samples=[
                {"id": f"s{i}", "prompt": "2+2?", "completion": "4", "reference": "4"}
                for i in range(2)
            ],
            plan=BatchPlan(judges=[JudgeEntry(name="reference_match")]),
            request_hash="h",
            timeout_s=600,
            now=created_at,
        )


def _lease(url: str, batch_id: str, owner: str, *, lease_s: float, now: datetime) -> None:
    with session_scope(url) as session:
        taken = leases.take(
            session=session, batch_id=batch_id, owner=owner, lease_s=lease_s, now=now
        )
    assert taken == "taken"


def _status(url: str, batch_id: str) -> str | None:
    with session_scope(url) as session:
        return session.scalar(select(BatchRow.status).where(BatchRow.id == batch_id))


def _holder(url: str, batch_id: str) -> str | None:
    with session_scope(url) as session:
        return leases.holder(session=session, batch_id=batch_id)[0]


def _wait_for(condition: Callable[[], bool], timeout_s: float, what: str) -> None:
    deadline = time.monotonic() + timeout_s
    while not condition():
        assert time.monotonic() < deadline, f"{what}: not within {timeout_s} s"
        time.sleep(0.05)


def test_the_first_sweep_scores_a_dead_workers_batch_and_leaves_a_live_ones(database_url):
    settings = get_settings(database_url=database_url, lease_s=LONG_LEASE_S)
    long_ago = utcnow() - timedelta(seconds=3 * LONG_LEASE_S)
    _batch(database_url, "dead", created_at=long_ago)
    _batch(database_url, "live", created_at=long_ago)
    _lease(database_url, "dead", DEAD, lease_s=LONG_LEASE_S, now=long_ago)  # lapsed long ago
    _lease(database_url, "live", OTHER, lease_s=600, now=utcnow())
    dispatcher = InProcessDispatcher(settings, Registry())
    try:
        dispatcher.start()
        _wait_for(lambda: _status(database_url, "dead") == "done", 20, "the dead worker's batch")
        _wait_for(lambda: _holder(database_url, "dead") is None, 5, "its lease released")
        # a message for the live worker's batch is dropped, as on a Celery worker
        assert dispatcher._run("live") == "dropped: leased"
        with session_scope(database_url) as session:
            assert batches.count_results(session=session, batch_id="live") == 0
            assert leases.holder(session=session, batch_id="live")[0] == OTHER
        assert _status(database_url, "live") == "queued"
    finally:
        dispatcher.close()


def test_the_sweeper_takes_a_batch_once_its_lease_lapses_and_close_stops_the_threads(
    database_url,
):
    """A restart while the dead process's lease is live: the sweeper thread scores the
    batch once that lease lapses. close() stops both threads and marks the worker stopped."""
    settings = get_settings(database_url=database_url, lease_s=1)
    _batch(database_url, "left", created_at=utcnow() - timedelta(seconds=30))
    _lease(database_url, "left", DEAD, lease_s=1, now=utcnow())  # live for a second more
    dispatcher = InProcessDispatcher(settings, Registry())
    try:
        dispatcher.start()
        threads = dispatcher.liveness._threads
        assert all(thread.is_alive() for thread in threads)
        (me,) = dispatcher.workers()  # its heartbeat row, as a Celery worker's
        assert (me.id, me.pid) == (dispatcher.leases.owner, os.getpid())
        _wait_for(lambda: _status(database_url, "left") == "done", 30, "the left batch")
    finally:
        dispatcher.close()
    assert not any(thread.is_alive() for thread in threads)
    assert dispatcher.workers() == []  # stopped: no longer listed


def test_a_restarted_embedded_app_finishes_what_the_previous_process_left(sqlite_url):
    settings = get_settings(
        database_url=sqlite_url, broker_url=None, cache_url=None, lease_s=LONG_LEASE_S
    )
    upgrade(settings.database_url)
    url = settings.database_url
    long_ago = utcnow() - timedelta(seconds=3 * LONG_LEASE_S)
    _batch(url, "never-leased", created_at=long_ago)  # its task was lost with the process
    _batch(url, "was-scoring", created_at=long_ago)
    _lease(url, "was-scoring", DEAD, lease_s=LONG_LEASE_S, now=long_ago)
    with TestClient(create_app(settings)) as client:
        for batch_id in ("never-leased", "was-scoring"):
            _wait_for(lambda b=batch_id: _status(url, b) == "done", 20, batch_id)
        ready = client.get("/readyz").json()
        assert [w["pid"] for w in ready["workers"]] == [os.getpid()]  # its heartbeat row
        assert ready["checks"]["workers"] == "ok"


def test_a_running_job_is_re_sent_only_without_a_broker_and_with_nobody_to_run_it(
    database_url,
):
    quiet_s = 10
    settings = get_settings(database_url=database_url, lease_s=quiet_s)
    long_ago = utcnow() - timedelta(seconds=quiet_s + 5)
    with session_scope(database_url) as session:  # started by a process that died since
        mined = mining.create_job(
            session=session, rubric="r", run_id="run", model=None, max_items=3, created_by=None
        )
        forged = forge_store.create_job(
            session=session, kind="traces", options={}, inputs=[], created_by=None
        )
        session.flush()
        assert mining.start_job(session=session, job_id=mined.id)
        assert forge_store.start_job(session=session, job_id=forged.id)
        mined.created_at = forged.created_at = long_ago
        mined_id, forged_id = mined.id, forged.id
    sent: list[tuple[str, str]] = []
    holder = Leases(database_url, quiet_s)
    behind_a_broker = Liveness(
        settings, holder, send=lambda _: None, send_job=lambda *a: sent.append(a)
    )
    assert behind_a_broker.sweep(idle_proven=True) == 0  # the broker redelivers running jobs

    embedded = Liveness(
        settings,
        holder,
        send=lambda _: None,
        send_job=lambda *a: sent.append(a),
        own_jobs=lambda: {forged_id},  # this process runs the forge job
    )
    with session_scope(database_url) as session:
        workers.beat(session=session, worker_id=OTHER, hostname="other-host", pid=2, busy=1)
    assert embedded.sweep(idle_proven=True) == 0 and sent == []  # the other may be running it
    with session_scope(database_url) as session:
        workers.stopped(session=session, worker_id=OTHER)
    assert embedded.sweep(idle_proven=True) == 1
    assert sent == [("mining", mined_id)]
    assert embedded.sweep(idle_proven=True) == 0  # once per quiet period
