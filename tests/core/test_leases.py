"""Leases and worker heartbeats in storage, on both real databases.

The lease is taken by one conditional UPDATE: these tests race real threads, each with
its own connection, for one batch and check that exactly one wins.
"""

from __future__ import annotations

import threading
from datetime import timedelta

from judge_service.core.batch_plan import BatchPlan, JudgeEntry
from judge_service.core.storage import leases, workers
from judge_service.core.storage.db import session_scope
from judge_service.core.storage.types import utcnow
from judge_service.domain import Outcome
from judge_service.scoring import store_batches as batches
from judge_service.scoring.store_results import ScoredSample, save_results


def _batch(url: str, batch_id: str = "b1", n: int = 2, timeout_s: float = 60) -> list[int]:
    with session_scope(url) as session:
        batch = batches.create_batch(
            session=session,
            batch_id=batch_id,
            samples=[{"id": f"s{i}", "prompt": "p", "completion": "c"} for i in range(n)],
            plan=BatchPlan(judges=[JudgeEntry(name="reference_match")]),
            request_hash="h",
            timeout_s=timeout_s,
        )
        session.flush()
        return [s.id for s in batch.samples]


def _take(url: str, owner: str, batch_id: str = "b1", **kwargs) -> str:
    with session_scope(url) as session:
        return leases.take(session=session, batch_id=batch_id, owner=owner, lease_s=10, **kwargs)


def test_a_lease_cannot_be_taken_twice(database_url):
    _batch(database_url)
    assert _take(database_url, "w1") == "taken"
    assert _take(database_url, "w2") == "leased"
    assert _take(database_url, "w1") == "leased"  # not even by its holder: one run per batch
    with session_scope(database_url) as session:
        assert leases.holder(session=session, batch_id="b1")[0] == "w1"
    assert _take(database_url, "w9", batch_id="nope") == "missing"


def test_racing_workers_get_one_lease(database_url):
    """Eight threads, each its own connection, released together: one lease, one winner."""
    _batch(database_url)
    start = threading.Barrier(8)
    outcomes: dict[str, str] = {}

    def race(owner: str) -> None:
        start.wait()
        outcomes[owner] = _take(database_url, owner)

    threads = [threading.Thread(target=race, args=(f"w{i}",)) for i in range(8)]
    for thread in threads:
        thread.start()
    for thread in threads:
        thread.join(timeout=60)
    winners = [owner for owner, taken in outcomes.items() if taken == "taken"]
    assert len(outcomes) == 8 and len(winners) == 1, outcomes
    assert set(outcomes.values()) == {"taken", "leased"}
    with session_scope(database_url) as session:
        assert leases.holder(session=session, batch_id="b1")[0] == winners[0]


def test_a_lapsed_lease_goes_to_the_next_worker_and_the_old_holder_cannot_renew(database_url):
    _batch(database_url)
    past = utcnow() - timedelta(seconds=30)
    assert _take(database_url, "dead", now=past) == "taken"  # its lease ran out 20 s ago
    assert _take(database_url, "alive") == "taken"
    with session_scope(database_url) as session:
        assert leases.renew(session=session, batch_ids=["b1"], owner="dead", lease_s=10) == set()
        kept = leases.renew(session=session, batch_ids=["b1"], owner="alive", lease_s=10)
        assert kept == {"b1"}
        owner, until = leases.holder(session=session, batch_id="b1")
    assert owner == "alive" and until > utcnow() + timedelta(seconds=5)


def test_release_frees_the_batch_and_a_done_batch_is_never_leased(database_url):
    pks = _batch(database_url)
    assert _take(database_url, "w1") == "taken"
    with session_scope(database_url) as session:
        leases.release(session=session, batch_id="b1", owner="w2")  # not its lease: no effect
        assert leases.holder(session=session, batch_id="b1")[0] == "w1"
        leases.release(session=session, batch_id="b1", owner="w1")
        assert leases.holder(session=session, batch_id="b1") == (None, None)
        scored = [
            ScoredSample(pk, i, Outcome.masked(f"s{i}", "timeout", "t")) for i, pk in enumerate(pks)
        ]
        save_results(session=session, batch_id="b1", scored=scored)
        session.flush()
        assert batches.finish_if_complete(session=session, batch_id="b1")
    assert _take(database_url, "w2") == "done"


def test_stale_batches_are_claimed_for_redispatch_once_per_quiet_period(database_url):
    _batch(database_url, "old")
    _batch(database_url, "leased")
    _batch(database_url, "done", n=1)
    later = utcnow() + timedelta(seconds=60)  # a minute on: every task went out long ago
    assert _take(database_url, "w1", batch_id="leased", now=later) == "taken"
    with session_scope(database_url) as session:
        batches.mark_done(session=session, batch_id="done")
    with session_scope(database_url) as session:
        stale = leases.stale(session=session, quiet_s=10, now=later)
        assert [s.id for s in stale] == ["old"]
        assert leases.stale(session=session, quiet_s=10) == []  # nothing is 10 s old yet
    claims = []
    for _ in range(3):  # three sweepers, one after the other: one re-sends
        with session_scope(database_url) as session:
            claims.append(
                leases.claim_redispatch(session=session, batch_id="old", quiet_s=10, now=later)
            )
    assert claims == [True, False, False]
    with session_scope(database_url) as session:
        assert leases.stale(session=session, quiet_s=10, now=later) == []
        # 11 s on: "old" is due again (nobody took it), and the lease on "leased" has lapsed
        again = later + timedelta(seconds=11)
        stale_again = leases.stale(session=session, quiet_s=10, now=again)
        assert [s.id for s in stale_again] == ["old", "leased"]


def test_worker_heartbeats(database_url):
    now = utcnow()
    with session_scope(database_url) as session:
        assert workers.newest_beat(session=session) is None
        workers.beat(session=session, worker_id="h:1:a", hostname="h", pid=1, busy=0, now=now)
        workers.beat(
            session=session,
            worker_id="h:2:b",
            hostname="h",
            pid=2,
            busy=0,
            now=now - timedelta(seconds=60),
        )
    with session_scope(database_url) as session:
        workers.beat(session=session, worker_id="h:1:a", hostname="h", pid=1, busy=1, now=now)
        live = workers.live(session=session, within_s=10, now=now)
        assert [(w.id, w.busy) for w in live] == [("h:1:a", 1)]
        assert abs((workers.newest_beat(session=session) - now).total_seconds()) < 0.01
        workers.stopped(session=session, worker_id="h:1:a")
    with session_scope(database_url) as session:
        assert workers.live(session=session, within_s=10, now=now) == []
        assert workers.newest_beat(session=session) is not None  # its last beat still counts
        assert workers.forget_older_than(session=session, age_s=30, now=now) == 1
        assert [w.id for w in workers.live(session=session, within_s=600, now=now)] == []
