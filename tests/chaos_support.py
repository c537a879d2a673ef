"""The chaos rig: private Redis and PostgreSQL, real API and worker processes, faults on demand.

Shared by ``tests/service/test_chaos.py`` and ``bench/chaos.py``. Everything runs on spare ports in
temporary folders, never on the shared 5432/6379 servers: the faults (``shutdown nosave``,
``pg_ctl stop``) would hit every other user of those. The only fake is the OpenAI-compatible
judge of ``tests/fakes``; the service under test is the real ``judge-service serve`` and
``judge-service worker`` (Celery on Redis, PostgreSQL).

The figures each scenario ends with (kills, restarts, samples, masked, lost, duplicated,
seconds to settle after the last fault) are read from the database, not from the service's
own answers, and are kept for the test run's summary (see ``tests/conftest.py``) and
appended as JSON lines to ``$JS_CHAOS_FIGURES``, else to :data:`FIGURES_PATH` (the test run's:
a file under pytest's temporary folder), else (``bench/chaos.py``) a file in the temp folder.
"""

from __future__ import annotations

import contextlib
import json
import os
import shutil
import signal
import subprocess
import tempfile
import threading
import time
from collections.abc import Iterator
from dataclasses import asdict, dataclass, field
from pathlib import Path

import httpx
import psycopg
import redis

from tests.fakes import FakeOpenAIServer
from tests.helpers import (
    JUDGE_SERVICE,
    Process,
    Worker,
    create_key,
    free_port,
    run_cli,
    service_env,
)
from tests.private_postgres import private_postgres

JUDGE_LATENCY_S = 0.2
#: Figures of every scenario run in this process, for the terminal summary.
FIGURES: list[Figures] = []
#: Where a test run appends them (``tests/service/test_chaos.py`` sets it under pytest's
#: temp folder).
FIGURES_PATH: Path | None = None


def figures_file() -> Path:
    if os.environ.get("JS_CHAOS_FIGURES"):
        return Path(os.environ["JS_CHAOS_FIGURES"])
    return FIGURES_PATH or Path(tempfile.gettempdir()) / "js-chaos.jsonl"


@dataclass
class Figures:
    """What one scenario did and how the service came out of it."""

    scenario: str
    batches: int = 0
    samples: int = 0
    kills: int = 0
    restarts: int = 0
    scored: int = 0
    masked: int = 0
    lost: int = 0
    duplicated: int = 0
    settle_s: float | None = None
    notes: dict[str, object] = field(default_factory=dict)

    def line(self) -> str:
        settle = "never" if self.settle_s is None else f"{self.settle_s:.1f} s"
        return (
            f"{self.scenario}: kills={self.kills} restarts={self.restarts} "
            f"samples={self.samples} scored={self.scored} masked={self.masked} lost={self.lost} "
            f"duplicated={self.duplicated} settled {settle} after the last fault"
        )


def record(figures: Figures) -> None:
    """Keep the figures for the summary and append them to :func:`figures_file`."""
    FIGURES.append(figures)
    with figures_file().open("a") as out:
        out.write(json.dumps({"at": time.time(), **asdict(figures)}) + "\n")


def summary_lines() -> list[str]:
    return [f.line() for f in FIGURES] + [
        f"  {f.scenario} notes: {json.dumps(f.notes)}" for f in FIGURES if f.notes
    ]


class PrivateRedis:
    """A redis-server of our own on a spare port, without persistence (as the probe ran it)."""

    def __init__(self, folder: Path) -> None:
        self.folder = folder
        self.port = free_port()
        self.url = f"redis://127.0.0.1:{self.port}/0"
        self.proc: subprocess.Popen | None = None
        self.start()

    def start(self) -> None:
        log = (self.folder / "redis.log").open("ab")
        self.proc = subprocess.Popen(
            [
                *("redis-server", "--port", str(self.port), "--bind", "127.0.0.1"),
                *("--save", "", "--appendonly", "no", "--dir", str(self.folder)),
            ],
            stdout=log,
            stderr=subprocess.STDOUT,
            start_new_session=True,
        )
        log.close()
        client = redis.Redis(port=self.port, socket_connect_timeout=1)
        deadline = time.monotonic() + 20
        while True:
            try:
                client.ping()
                return
            except redis.ConnectionError:
                assert self.proc.poll() is None, "redis-server exited"
                assert time.monotonic() < deadline, "redis-server did not start"
                time.sleep(0.05)
            finally:
                client.close()

    def shutdown_nosave(self) -> None:
        """``SHUTDOWN NOSAVE``: every queued and unacknowledged message is gone."""
        with contextlib.suppress(redis.ConnectionError):
            redis.Redis(port=self.port).shutdown(nosave=True)
        assert self.proc is not None
        self.proc.wait(timeout=20)

    def close(self) -> None:
        if self.proc is not None and self.proc.poll() is None:
            os.killpg(self.proc.pid, signal.SIGKILL)
            self.proc.wait(timeout=20)


class Api(Process):
    """``judge-service serve`` on a given port: a restarted API comes back where trainers wait."""

    def __init__(self, *, port: int, env: dict[str, str], cwd: Path, log: Path) -> None:
        self.port = port
        self.url = f"http://127.0.0.1:{port}"
        super().__init__(
            [JUDGE_SERVICE, "serve", "--host", "127.0.0.1", "--port", str(port), "--no-migrate"],
            env=env,
            cwd=cwd,
            log=log,
        )
        deadline = time.monotonic() + 90
        while time.monotonic() < deadline:
            assert self.proc.poll() is None, f"serve exited:\n{self.log()}"
            with contextlib.suppress(httpx.HTTPError):
                if httpx.get(f"{self.url}/healthz", timeout=1).status_code == 200:
                    return
            time.sleep(0.1)
        self.kill()
        raise AssertionError(f"serve did not start:\n{self.log()}")


class ChaosWorker(Worker):
    """``judge-service worker`` (tests.helpers' ``Worker``), with time to start on a loaded
    machine: importing litellm alone took 30-45 s at a load of 10 on 2 cores."""

    def __init__(self, *, env: dict[str, str], cwd: Path, log: Path) -> None:
        super().__init__(env=env, cwd=cwd, log=log, start_s=240)


class Rig:
    """Private Redis and PostgreSQL and the fake judge (200 ms a call), for several scenarios."""

    def __init__(self, folder: Path, stack: contextlib.ExitStack) -> None:
        self.folder = folder
        self.redis = PrivateRedis(folder)
        stack.callback(self.redis.close)
        self.postgres = stack.enter_context(private_postgres())
        self.postgres.start()
        self.judge = FakeOpenAIServer(latency_s=JUDGE_LATENCY_S).start()
        stack.callback(self.judge.stop)


@contextlib.contextmanager
def rig() -> Iterator[Rig]:
    """A :class:`Rig` in a temp folder; everything it started is stopped and removed after,
    also when starting a later part of it failed."""
    with contextlib.ExitStack() as stack:
        folder = Path(tempfile.mkdtemp(prefix="js-chaos-"))
        stack.callback(shutil.rmtree, folder, ignore_errors=True)
        yield Rig(folder, stack)


@dataclass
class Progress:
    """Per batch: (status, samples, samples with a result) from the database."""

    batches: dict[str, tuple[str, int, int]]

    @property
    def scored(self) -> int:
        return sum(scored for _, _, scored in self.batches.values())

    def all_done(self, expected: int) -> bool:
        return len(self.batches) >= expected and all(
            status == "done" for status, _, _ in self.batches.values()
        )


class Service:
    """The service under test: its own database on the private cluster, the API and workers.

    The scenarios share one (starting workers takes 10-20 s on a loaded 2-core machine);
    each of them brings it back to full strength first (:meth:`ensure_up`)."""

    def __init__(self, rig: Rig, name: str = "chaos", *, workers: int = 2) -> None:
        self.rig = rig
        self.folder = rig.folder / name
        self.folder.mkdir()
        self.plain_url = rig.postgres.create_database(name)
        self.database_url = self.plain_url.replace("postgresql://", "postgresql+psycopg://")
        redis.Redis.from_url(rig.redis.url).flushdb()
        self.env = service_env(
            JS_DATABASE_URL=self.database_url,
            JS_BROKER_URL=rig.redis.url,
            # a 64-sample batch takes ~3 s at 200 ms a judge call: faults land mid-batch
            JS_SAMPLE_CONCURRENCY="4",
            # with a broker a request names a configured endpoint; its key stays here
            JS_ENDPOINTS=json.dumps({"chaos": {"base_url": rig.judge.url, "api_key": "sk-chaos"}}),
        )
        run_cli("db", "upgrade", env=self.env, cwd=self.folder)
        self.key = create_key("trainer", env=self.env, cwd=self.folder)
        self.port = free_port()
        self.api: Api | None = None
        self.size = workers
        self.workers: list[Worker] = []
        self.starting: list[threading.Thread] = []
        self.start_failures: list[str] = []
        self.started = 0
        #: SQL condition on ``batches b`` that picks the running scenario's batches
        self.scope = "true"
        self.judges = [{"name": "openai/chaos-judge", "endpoint": "chaos"}]
        self.ensure_up()

    def ensure_up(self) -> None:
        """The API and ``size`` workers up (started again if a scenario left them down)."""
        if self.api is None or self.api.proc.poll() is not None:
            self.start_api()
        self.workers = [w for w in self.workers if w.proc.poll() is None]
        for _ in range(self.size - len(self.workers) - len(self.starting)):
            self.start_worker()
        self.wait_workers()

    def start_api(self) -> None:
        self.api = Api(port=self.port, env=self.env, cwd=self.folder, log=self.folder / "serve.log")

    def kill_api(self) -> None:
        assert self.api is not None
        self.api.kill()

    def start_worker(self) -> None:
        """Start a worker in the background; it joins :attr:`workers` once ready."""
        self.started += 1
        log = self.folder / f"worker-{self.started}.log"

        def start() -> None:
            try:
                self.workers.append(ChaosWorker(env=self.env, cwd=self.folder, log=log))
            except AssertionError as exc:  # the scenario notes it; ensure_up tries again
                self.start_failures.append(str(exc)[:300])

        thread = threading.Thread(target=start, daemon=True)
        self.starting.append(thread)
        thread.start()

    def wait_workers(self) -> None:
        for thread in self.starting:
            thread.join(timeout=120)
        self.starting = [t for t in self.starting if t.is_alive()]

    def kill_worker(self, worker: Worker) -> None:
        """SIGKILL to the worker's whole process group: the parent and its pool processes."""
        worker.kill(signal.SIGKILL)
        self.workers.remove(worker)

    @staticmethod
    def holds_a_batch(worker: Worker) -> bool:
        """Whether the worker's log shows a batch task received and not finished."""
        text = worker.log_path.read_text(errors="replace")
        received = text.count("] received")
        ended = sum(text.count(word) for word in ("] succeeded in", "] raised", "] failed"))
        return received > ended

    def headers(self) -> dict[str, str]:
        return {"Authorization": f"Bearer {self.key}"}

    def samples(self, batch: int, n: int) -> list[dict]:
        # distinct texts: no judge answer can come from a cache
        return [
            {
                "id": f"b{batch}-s{i}",
                "prompt": f"Question {batch}.{i}?",
                "completion": f"Answer {i}",
            }
            for i in range(n)
        ]

    def submit(self, batches: int, samples: int, *, tag: str) -> list[str]:
        """``batches`` batches of ``samples`` samples, not waited on; their idempotency keys."""
        keys = []
        assert self.api is not None
        with httpx.Client(base_url=self.api.url, headers=self.headers(), timeout=60) as http:
            for b in range(batches):
                key = f"{tag}-{b}"
                body = {
                    "samples": self.samples(b, samples),
                    "judges": self.judges,
                    "wait": False,
                    "timeout_s": 600,
                    "idempotency_key": key,
                }
                answer = http.post("/v1/rewards", json=body)
                assert answer.status_code in (200, 202), answer.text
                keys.append(key)
        return keys

    def progress(self) -> Progress | None:
        """The scenario's batches' progress, read from the database (None while it is
        unreachable)."""
        try:
            with psycopg.connect(self.plain_url, connect_timeout=2) as connection:
                rows = connection.execute(
                    "SELECT b.id, b.status, b.n_samples, count(r.id) FROM batches b "
                    f"LEFT JOIN results r ON r.batch_id = b.id WHERE {self.scope} GROUP BY b.id"
                ).fetchall()
        except psycopg.OperationalError:
            return None
        return Progress({row[0]: (row[1], row[2], row[3]) for row in rows})

    def wait_mid_batch(self, *, since_scored: int = 0, timeout: float = 240) -> int:
        """Wait until a batch is being scored right now (its count grew over 0.3 s and it is
        not finished) and ``since_scored`` results exist; the number of such batches."""
        deadline = time.monotonic() + timeout
        before = self.progress()
        while time.monotonic() < deadline:
            time.sleep(0.3)
            now = self.progress()
            if before is not None and now is not None and now.scored > since_scored:
                active = [
                    batch
                    for batch, (status, n, scored) in now.batches.items()
                    if status != "done"
                    and 0 < scored < n
                    and scored > before.batches.get(batch, ("", 0, 0))[2]
                ]
                if active:
                    return len(active)
            before = now
        raise AssertionError(f"no batch was being scored within {timeout} s")

    def wait_done(self, expected: int, *, timeout: float) -> float | None:
        """The monotonic time at which all ``expected`` batches were done (None: not in time)."""
        deadline = time.monotonic() + timeout
        while time.monotonic() < deadline:
            progress = self.progress()
            if progress is not None and progress.all_done(expected):
                return time.monotonic()
            time.sleep(0.2)
        return None

    def count(
        self, figures: Figures, expected: dict[str, int], *, key: str = "b.idempotency_key"
    ) -> Figures:
        """Fill ``figures`` from the database: ``expected`` is {batch key: samples}, where a
        batch's key is the SQL expression ``key`` (default: its idempotency key).

        lost: samples of an expected batch without a result (a batch never stored loses all
        of its samples); duplicated: results beyond one per sample, plus samples and batches
        beyond the ones sent; masked: results that are not valid (timeout, judge errors)."""
        with psycopg.connect(self.plain_url) as connection:
            rows = connection.execute(
                f"SELECT {key}, count(s.id), count(r.id), count(DISTINCT r.sample_id), "
                "count(r.id) FILTER (WHERE NOT r.valid) FROM batches b "
                "JOIN samples s ON s.batch_id = b.id LEFT JOIN results r ON r.sample_id = s.id "
                f"WHERE {self.scope} GROUP BY b.id"
            ).fetchall()
        by_key: dict[str | None, list[tuple[int, int, int, int]]] = {}
        for key, samples, results, scored, masked in rows:
            by_key.setdefault(key, []).append((samples, results, scored, masked))
        figures.batches = len(rows)
        figures.samples = sum(expected.values())
        for key, wanted in expected.items():
            stored = by_key.get(key, [])
            scored = sum(s for _, _, s, _ in stored)
            figures.scored += min(scored, wanted)
            figures.lost += max(0, wanted - scored)
        for stored in by_key.values():
            for _, results, scored, masked in stored:
                figures.duplicated += results - scored
                figures.masked += masked
        for key, stored in by_key.items():
            wanted = expected.get(key, 0)
            figures.duplicated += max(0, sum(samples for samples, _, _, _ in stored) - wanted)
        return figures

    def close(self) -> None:
        for worker in list(self.workers):
            worker.kill(signal.SIGKILL)
        if self.api is not None:
            self.api.kill()


# --- scenarios: each returns (and records) its figures; the tests assert on them -------------

BATCHES, SAMPLES, KILLS = 20, 64, 10
#: Every batch must be done within this many seconds of the last fault (issue 17).
SETTLE_LIMIT_S = 60.0


def _settle(service: Service, figures: Figures, expected: int, last_fault: float) -> None:
    """Wait for every batch (a little past the limit, to report how far off it is)."""
    done_at = service.wait_done(expected, timeout=SETTLE_LIMIT_S + 15)
    figures.settle_s = None if done_at is None else round(done_at - last_fault, 1)


def _worker_exits(service: Service) -> list[str]:
    """Workers of ours that exited without being killed or logged an unrecoverable error, with
    the line that says why. The log is read too: a worker that crashed with a batch in flight
    waits for the batch before it exits."""
    exits = []
    for worker in service.workers:
        text = worker.log_path.read_text(errors="replace")
        fatal = [line for line in text.splitlines() if "Unrecoverable" in line]
        if fatal or worker.proc.poll() is not None:
            why = fatal[-1] if fatal else f"exit status {worker.proc.returncode}"
            exits.append(f"{worker.log_path.name}: {why}")
    return exits


def _restart_redis(rig: Rig) -> None:
    rig.redis.shutdown_nosave()
    time.sleep(1.0)
    rig.redis.start()


def worker_kills_and_redis_restart(
    service: Service, *, kills: int = KILLS, batches: int = BATCHES, samples: int = SAMPLES
) -> Figures:
    """Issue 17's 'done when': ``batches`` x ``samples`` with the fake judge at 200 ms; two
    workers; ``kills`` SIGKILLs, each to a worker that holds a batch while a batch is being
    scored (a new worker starts after each, in the background), and halfway through them
    Redis restarted with ``SHUTDOWN NOSAVE`` while a batch is being scored (halfway: there is
    still work in flight for it, whatever the machine's speed)."""
    figures = Figures("worker kills + redis restart")
    service.ensure_up()
    service.scope = "b.idempotency_key LIKE 'kills-%'"
    keys = service.submit(batches, samples, tag="kills")
    scoring: list[int] = []
    try:
        for k in range(kills):
            if k == kills // 2:
                service.wait_mid_batch()
                _restart_redis(service.rig)
                figures.restarts += 1
            deadline = time.monotonic() + 240  # both may be starting again
            while not (busy := [w for w in list(service.workers) if service.holds_a_batch(w)]):
                assert time.monotonic() < deadline, "no worker held a batch for 240 s"
                time.sleep(0.1)
            scoring.append(service.wait_mid_batch())
            service.kill_worker(busy[0])
            figures.kills += 1
            service.start_worker()
    except AssertionError as exc:
        figures.notes["stopped early"] = str(exc)
    last_fault = time.monotonic()
    _settle(service, figures, batches, last_fault)
    service.wait_workers()
    service.count(figures, dict.fromkeys(keys, samples))
    figures.notes["batches being scored at each kill"] = scoring
    figures.notes["workers that failed to start"] = service.start_failures
    figures.notes["workers that crashed or exited"] = _worker_exits(service)
    record(figures)
    return figures


def redis_restart_with_a_batch_in_flight(
    service: Service, *, samples: int = 4 * SAMPLES
) -> Figures:
    """Build point 2: Redis restarted (``SHUTDOWN NOSAVE``) while one worker scores the only
    batch and has a free slot (so it waits in BRPOP). The workers must stay up, the batch
    held must be finished, and new work taken once Redis is back. The batch (~13 s) is still
    in flight when Redis is back."""
    figures = Figures("redis restart, batch in flight")
    service.ensure_up()
    service.scope = "b.idempotency_key LIKE 'held-%'"
    keys = service.submit(1, samples, tag="held")
    service.wait_mid_batch()
    _restart_redis(service.rig)
    figures.restarts += 1
    last_fault = time.monotonic()
    back = service.progress()
    figures.notes["held batch scored when redis was back"] = back.scored if back else None
    held_done = service.wait_done(1, timeout=SETTLE_LIMIT_S)
    figures.notes["held batch done after (s)"] = (
        None if held_done is None else round(held_done - last_fault, 1)
    )
    figures.notes["workers that crashed or exited"] = _worker_exits(service)
    # new work after the restart: the API reconnects to the new Redis, and so do the workers
    deadline = time.monotonic() + 30
    while True:
        try:
            keys += service.submit(1, samples, tag="held-after")
            break
        except AssertionError:  # 503 while the API's broker connection comes back
            assert time.monotonic() < deadline, "the API never took a batch after Redis restarted"
            time.sleep(0.5)
    _settle(service, figures, 2, last_fault)
    service.count(figures, dict.fromkeys(keys, samples))
    record(figures)
    return figures


def _probe(service: Service, batch_id: str, seconds: float) -> dict[str, list[int]]:
    """The status codes the API answers for ``seconds`` (while the database is down);
    -1 stands for no answer at all."""
    assert service.api is not None
    codes: dict[str, set[int]] = {"readyz": set(), "post": set(), "get": set()}
    body = {"samples": service.samples(999, 1), "judges": service.judges, "wait": False}
    deadline = time.monotonic() + seconds
    with httpx.Client(base_url=service.api.url, headers=service.headers(), timeout=20) as http:
        while time.monotonic() < deadline:
            for name, call in (
                ("readyz", lambda: http.get("/readyz")),
                ("post", lambda: http.post("/v1/rewards", json=body)),
                ("get", lambda: http.get(f"/v1/rewards/{batch_id}")),
            ):
                try:
                    codes[name].add(call().status_code)
                except httpx.HTTPError:
                    codes[name].add(-1)
            time.sleep(0.3)
    return {name: sorted(found) for name, found in codes.items()}


def postgres_restart(service: Service, *, batches: int = 8, samples: int = SAMPLES) -> Figures:
    """PostgreSQL stopped (``pg_ctl stop -m fast``: every connection cut) for ~5 s under a
    service scoring ``batches`` batches, then started again."""
    figures = Figures("postgres stop + start")
    service.ensure_up()
    service.scope = "b.idempotency_key LIKE 'pg-%'"
    keys = service.submit(batches, samples, tag="pg")
    service.wait_mid_batch()
    progress = service.progress()
    assert progress is not None
    batch_id = next(iter(progress.batches))
    service.rig.postgres.stop()
    try:
        figures.notes["codes while down"] = _probe(service, batch_id, seconds=5)
    finally:
        service.rig.postgres.start()
    figures.restarts += 1
    last_fault = time.monotonic()
    _settle(service, figures, batches, last_fault)
    service.count(figures, dict.fromkeys(keys, samples))
    assert service.api is not None
    figures.notes["api alive"] = service.api.proc.poll() is None
    figures.notes["workers that crashed or exited"] = _worker_exits(service)
    record(figures)
    return figures


def api_restart(
    service: Service, *, trainers: int = 4, steps: int = 2, samples: int = SAMPLES, kills: int = 2
) -> Figures:
    """``trainers`` trainers (the real trainer bridge's ``RewardClient``) each score ``steps``
    batches and wait on them; the API process is SIGKILLed and started again on its port
    ``kills`` times while they wait."""
    from trainer_bridge.client import RewardClient

    figures = Figures("api kill + restart")
    service.ensure_up()
    service.scope = "b.run_id LIKE 'api-trainer-%'"
    answers: dict[tuple[int, int], list] = {}
    errors: list[str] = []
    finished: list[float] = []
    assert service.api is not None
    url = service.api.url

    def trainer(t: int) -> None:
        client = RewardClient(url, service.key, timeout=300, retries=12, backoff_s=0.25)
        try:
            for step in range(steps):
                batch = service.samples(100 * t + step, samples)
                answers[(t, step)] = client.score(
                    batch, judges=service.judges, run_id=f"api-trainer-{t}", step=step
                )
        except Exception as exc:  # reported in the figures, and failed on by the test
            errors.append(f"trainer {t}: {exc!r}")
        finished.append(time.monotonic())

    threads = [threading.Thread(target=trainer, args=(t,), daemon=True) for t in range(trainers)]
    for thread in threads:
        thread.start()
    last_fault = time.monotonic()
    try:
        for k in range(kills):
            deadline = time.monotonic() + 60
            while len((service.progress() or Progress({})).batches) < trainers * (k + 1):
                assert time.monotonic() < deadline, "the trainers' batches never arrived"
                time.sleep(0.1)
            service.wait_mid_batch()
            service.kill_api()
            figures.kills += 1
            service.start_api()
            figures.restarts += 1
            last_fault = time.monotonic()
    except AssertionError as exc:
        figures.notes["stopped early"] = str(exc)
    for thread in threads:
        thread.join(timeout=SETTLE_LIMIT_S + 60)
    if len(finished) == trainers and not errors:
        figures.settle_s = round(max(finished) - last_fault, 1)
    expected = {f"api-trainer-{t}:{s}": samples for t in range(trainers) for s in range(steps)}
    service.count(figures, expected, key="b.run_id || ':' || b.step")
    missing = [(t, s) for t in range(trainers) for s in range(steps) if (t, s) not in answers]
    wrong = [
        (t, s)
        for (t, s), got in answers.items()
        if [r.id for r in got] != [x["id"] for x in service.samples(100 * t + s, samples)]
        or not all(r.valid for r in got)
    ]
    figures.notes["trainer errors"] = errors
    figures.notes["answers missing or wrong"] = [f"{t}:{s}" for t, s in missing + wrong]
    record(figures)
    return figures
