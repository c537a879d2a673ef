"""A clean stop of a real ``judge-service serve`` (embedded, SQLite), as a user stops it.

Two batches are being scored by a slow judge (the fake OpenAI-compatible server): one sent
with ``wait: false``, one whose client waits. On SIGINT or SIGTERM the service refuses new
work with 503 ``shutting_down`` (in JSON) while reads still answer, lets the batches run
for ``JS_SHUTDOWN_GRACE_S``, then stops them, hands their leases back and answers the
waiting client in JSON; it exits 0 with no traceback in its log. A second signal skips the
grace. Started again on the same database, the service finishes both batches, each sample
scored and stored once: nothing is scored again that was stored before the stop.
"""

from __future__ import annotations

import signal
import sqlite3
import threading
import time
from datetime import timedelta
from pathlib import Path

import httpx
import pytest

from judge_service.core.batch_plan import BatchPlan, JudgeEntry
from judge_service.core.errors import ShuttingDown
from judge_service.core.registry import Registry
from judge_service.core.settings import get_settings
from judge_service.core.storage import leases
from judge_service.core.storage.db import session_scope
from judge_service.core.storage.tables import BatchRow
from judge_service.core.storage.types import utcnow
from judge_service.core.worker.inprocess import InProcessDispatcher
from judge_service.scoring import store_batches as batches
from tests.fakes import FakeOpenAIServer
from tests.helpers import Server, create_key, run_cli, service_env, wait_until

#: Samples of the batch sent with ``wait: false``, and of the waiting client's.
N_LEFT, N_WAITING = 30, 20
#: Each judge call takes this long; samples are scored one at a time (JS_SAMPLE_CONCURRENCY),
#: so each batch takes several seconds and is still running when the signal comes.
CALL_MS = 300
#: Exiting may take this long past what the service waits for (start of a loaded machine's
#: slowest steps: answering, marking the worker stopped, closing the port).
EXIT_MARGIN_S = 15


def _sql(db: Path, query: str, *args: object) -> list[tuple]:
    with sqlite3.connect(db) as connection:
        return connection.execute(query, args).fetchall()


def _results(db: Path, batch_id: str) -> int:
    return _sql(db, "SELECT count(*) FROM results WHERE batch_id = ?", batch_id)[0][0]


class Waiting(threading.Thread):
    """A client that posts a batch with ``wait: true`` and keeps the answer."""

    def __init__(self, url: str, headers: dict[str, str], body: dict) -> None:
        super().__init__(daemon=True)
        self.url, self.headers, self.body = url, headers, body
        self.answer: httpx.Response | None = None
        self.error: Exception | None = None

    def run(self) -> None:
        try:
            self.answer = httpx.post(
                f"{self.url}/v1/rewards", headers=self.headers, json=self.body, timeout=120
            )
        except httpx.HTTPError as exc:
            self.error = exc


@pytest.mark.parametrize(
    ("signals", "grace_s"),
    [
        pytest.param([signal.SIGINT], 2.0, id="ctrl-c-grace"),
        pytest.param([signal.SIGTERM], 2.0, id="sigterm-grace"),
        pytest.param([signal.SIGINT, signal.SIGTERM], 120.0, id="second-signal-at-once"),
    ],
)
def test_a_stopped_serve_answers_everyone_and_its_batches_finish_after_a_restart(
    tmp_path: Path, fake_openai: FakeOpenAIServer, signals: list[int], grace_s: float
):
    db = tmp_path / "stop.db"
    env = service_env(
        JS_DATABASE_URL=f"sqlite:///{db}",
        JS_SAMPLE_CONCURRENCY="1",
        JS_DETECTORS="none",
        JS_SHUTDOWN_GRACE_S=str(grace_s),
    )
    run_cli("db", "upgrade", env=env, cwd=tmp_path)
    headers = {"Authorization": f"Bearer {create_key('trainer', env=env, cwd=tmp_path)}"}
    judges = [{"name": f"openai/slow-{CALL_MS}", "api_base": fake_openai.url}]

    def batch(prefix: str, n: int, **extra: object) -> dict:
        samples = [
            {"id": f"{prefix}{i}", "prompt": f"{prefix} {i}?", "completion": "c"} for i in range(n)
        ]
        return {"samples": samples, "judges": judges, "timeout_s": 600, **extra}

    server = Server(env=env, cwd=tmp_path, log=tmp_path / "serve.log")
    try:
        left = httpx.post(
            f"{server.url}/v1/rewards", headers=headers, json=batch("l", N_LEFT, wait=False)
        )
        assert left.status_code == 202, left.text
        left_id = left.json()["batch_id"]
        waiting = Waiting(server.url, headers, batch("w", N_WAITING))
        waiting.start()
        assert wait_until(lambda: len(_sql(db, "SELECT id FROM results")) >= 2), server.log()
        (waiting_id,) = {b for (b,) in _sql(db, "SELECT id FROM batches")} - {left_id}
        assert wait_until(lambda: _results(db, waiting_id) > 0), server.log()

        server.proc.send_signal(signals[0])
        stopped_at = time.monotonic()
        ready = wait_until(
            lambda: httpx.get(f"{server.url}/readyz").json()["checks"]["queue"] != "ok", 10
        )
        assert ready, server.log()
        # new work: 503 shutting_down, in JSON, with Retry-After; reads still answer
        refused = httpx.post(f"{server.url}/v1/rewards", headers=headers, json=batch("n", 1))
        assert refused.status_code == 503, refused.text
        assert refused.json()["error"]["code"] == "shutting_down"
        assert refused.headers["retry-after"]
        polled = httpx.get(f"{server.url}/v1/rewards/{left_id}", headers=headers)
        assert polled.status_code == 202 and polled.json()["status"] == "running", polled.text
        for sig in signals[1:]:
            server.proc.send_signal(sig)

        server.proc.wait(timeout=(grace_s if len(signals) == 1 else 0) + EXIT_MARGIN_S)
        took_s = time.monotonic() - stopped_at
        waiting.join(timeout=10)
        log = (tmp_path / "serve.log").read_text()
    finally:
        server.kill()
    assert server.proc.returncode == 0, log
    if len(signals) == 1:
        assert took_s >= grace_s - 0.5, f"stopped after {took_s:.1f} s, before the grace"
    assert "Traceback" not in log and "Internal Server Error" not in log, log
    assert "handed back" in log, log
    # the waiting client: JSON, the batch as it stands, to be polled
    assert waiting.error is None and waiting.answer is not None, waiting.error
    assert waiting.answer.status_code == 202, waiting.answer.text
    assert waiting.answer.headers["content-type"] == "application/json"
    answer = waiting.answer.json()
    assert answer["batch_id"] == waiting_id and answer["status"] in ("queued", "running")
    assert any("poll GET /v1/rewards" in w for w in answer["warnings"]), answer
    # the leases are released, the worker marked stopped, the batches not done
    rows = _sql(db, "SELECT status, lease_owner, lease_until FROM batches")
    assert rows == [("running", None, None)] * 2, rows
    assert _sql(db, "SELECT count(*) FROM workers WHERE stopped_at IS NULL") == [(0,)]
    scored_before = _results(db, left_id) + _results(db, waiting_id)
    assert 0 < scored_before < N_LEFT + N_WAITING
    calls_before = fake_openai.total_requests

    again = Server(env=env, cwd=tmp_path, log=tmp_path / "serve-again.log")
    try:
        for batch_id, n in ((left_id, N_LEFT), (waiting_id, N_WAITING)):
            url = f"{again.url}/v1/rewards/{batch_id}"
            done = wait_until(
                lambda url=url: (r := httpx.get(url, headers=headers)).status_code == 200 and r,
                60,
                0.2,
            )
            assert done, again.log()
            results = done.json()["results"]
            assert len(results) == n and all(r["valid"] for r in results), done.text
    finally:
        again.kill()
    # one result and one verdict per sample, and only the samples left were judged again
    # (at most one call per batch was cut short by the stop)
    for batch_id, n in ((left_id, N_LEFT), (waiting_id, N_WAITING)):
        assert _results(db, batch_id) == n
        verdicts = _sql(
            db,
            "SELECT count(*) FROM judge_verdicts v JOIN results r ON v.result_id = r.id "
            "WHERE r.batch_id = ?",
            batch_id,
        )
        assert verdicts == [(n,)]
    calls_after = fake_openai.total_requests - calls_before
    assert calls_after <= N_LEFT + N_WAITING - scored_before + 2, (calls_after, scored_before)


def _stored_batch(url: str, batch_id: str, n: int, judge: JudgeEntry) -> None:
    with session_scope(url) as session:
        batches.create_batch(
            session=session,
            batch_id=batch_id,
            samples=[{"id": f"s{i}", "prompt": f"{i}?", "completion": "c"} for i in range(n)],
            plan=BatchPlan(judges=[judge]),
            request_hash="h",
            timeout_s=600,
        )


def _count(url: str, batch_id: str) -> int:
    with session_scope(url) as session:
        return batches.count_results(session=session, batch_id=batch_id)


def test_the_executor_stops_its_batch_hands_it_back_and_the_next_start_resumes_it(
    database_url: str, fake_openai: FakeOpenAIServer
):
    """The embedded executor's stop, on both databases: a submit after ``drain`` is 503
    ``shutting_down``; ``stop`` cancels the running batch, keeps what it scored, releases the
    lease and marks its task as sent a lease ago, leaving another worker's live lease alone;
    the next executor's first sweep resumes the batch at once."""
    settings = get_settings(
        database_url=database_url, broker_url=None, cache_url=None, sample_concurrency=1
    )
    judge = JudgeEntry(name=f"openai/slow-{CALL_MS}", api_base=fake_openai.url)
    n = 12
    _stored_batch(database_url, "mine", n, judge)
    _stored_batch(database_url, "theirs", 1, judge)
    with session_scope(database_url) as session:
        owner, lease_s = "other-host:2:live", 600
        taken = leases.take(session=session, batch_id="theirs", owner=owner, lease_s=lease_s)
        assert taken == "taken"
    dispatcher = InProcessDispatcher(settings, Registry())
    try:
        dispatcher.submit("mine")
        assert wait_until(lambda: _count(database_url, "mine") >= 2, 30)
        dispatcher.drain()
        with pytest.raises(ShuttingDown):
            dispatcher.submit("mine")
        assert dispatcher.busy() == 1  # the running batch goes on until stop()
        dispatcher.stop(5.0)
        assert dispatcher.busy() == 0
        dispatcher.leases.hand_back(["theirs"])  # not ours: left alone
    finally:
        dispatcher.close()
    scored = _count(database_url, "mine")
    assert 2 <= scored < n
    with session_scope(database_url) as session:
        mine, theirs = (session.get(BatchRow, b) for b in ("mine", "theirs"))
        assert mine is not None and theirs is not None
        assert (mine.status, mine.lease_owner, mine.lease_until) == ("running", None, None)
        assert mine.dispatched_at is not None
        assert mine.dispatched_at <= utcnow() - timedelta(seconds=settings.lease_s)
        assert theirs.lease_owner == owner

    calls = fake_openai.total_requests
    again = InProcessDispatcher(settings, Registry())
    try:
        again.start()  # its first sweep re-sends the handed-back batch, not a lease later
        assert wait_until(lambda: _count(database_url, "mine") == n, 30)
    finally:
        again.close()
    assert fake_openai.total_requests - calls <= n - scored + 1  # nothing scored twice
