"""The embedded executor: a worker like a Celery one, on threads of the API process.

It owns a :class:`Leases` and the same heartbeat and sweeper (:class:`Liveness`) as a Celery
worker process, so a batch is scored under its lease and recovered the same way whoever
left it (a previous process of this service, or another one on the same database): the
sweeper re-sends onto this pool instead of a broker. There is no start-up special path: the
sweeper's first pass, at start, picks up what no live worker holds.
"""

from __future__ import annotations

import asyncio
import logging
import threading
from collections.abc import Callable
from concurrent.futures import ThreadPoolExecutor
from functools import partial

from judge_service.registry import Registry
from judge_service.settings import Settings
from judge_service.storage import workers
from judge_service.storage.db import session_scope
from judge_service.storage.lost_jobs import JobKind
from judge_service.storage.workers import WorkerSeen
from judge_service.worker.batch_status import batch_done
from judge_service.worker.forge_task import run_forge
from judge_service.worker.lease import Leases, score_leased
from judge_service.worker.liveness import Liveness
from judge_service.worker.mining_task import mine_rubric
from judge_service.worker.task_names import FORGE_TASK, JOB_TASKS, MINE_TASK
from judge_service.worker.tasks import score_batch

log = logging.getLogger(__name__)

#: A job's task: ``task(job_id, settings=...)``, returning the job's status.
JobTask = Callable[..., str]


class InProcessDispatcher:
    """Runs :func:`score_batch` under its lease on a thread pool and signals waiters the
    moment a batch is done; its heartbeat and sweeper start with it."""

    def __init__(self, settings: Settings, registry: Registry) -> None:
        self.settings = settings
        self.registry = registry
        self.pool = ThreadPoolExecutor(
            max_workers=settings.inprocess_workers, thread_name_prefix="judge-batch"
        )
        self._waiters: dict[str, list[tuple[asyncio.AbstractEventLoop, asyncio.Future]]] = {}
        self._lock = threading.Lock()
        self._jobs: set[str] = set()  # mining and forge jobs running on the pool
        self.leases = Leases(settings.database_url, settings.lease_s, settings.inprocess_workers)
        self.liveness = Liveness(
            settings, self.leases, self.submit, self._send_job, own_jobs=self._own_jobs
        )
        self._started = False

    def start(self) -> None:
        """Beat and sweep once now, then start the heartbeat and sweeper threads.

        The first sweep skips the sweeper's idle wait: the pool is empty, so nothing can be
        queued for it. It raises while the database is down, before any thread starts, so
        the start-up (``api.startup``) retries it whole.
        """
        if self._started:
            return
        self.liveness.beat()
        sent = self.liveness.sweep(idle_proven=True)
        if sent:
            log.info("picked up %d batches or jobs nobody attended to", sent)
        self.liveness.start()
        self._started = True

    def _mark_done(self, batch_id: str) -> None:
        """Wake every request waiting on this batch, in whatever event loop it waits."""
        with self._lock:
            waiters = self._waiters.pop(batch_id, [])
        for loop, future in waiters:
            loop.call_soon_threadsafe(lambda f=future: f.done() or f.set_result(None))

    async def wait(self, batch_id: str, timeout: float) -> bool:
        """True once the batch is done; False after ``timeout`` seconds.

        The database is checked after the waiter is registered, so a batch that
        finished just before is never waited for until the timeout.
        """
        loop = asyncio.get_running_loop()
        future: asyncio.Future = loop.create_future()
        with self._lock:
            self._waiters.setdefault(batch_id, []).append((loop, future))
        url = self.settings.database_url
        try:
            if await asyncio.to_thread(batch_done, url, batch_id):
                return True
            await asyncio.wait_for(future, max(0.0, timeout))
            return True
        except TimeoutError:
            return await asyncio.to_thread(batch_done, url, batch_id)
        finally:
            with self._lock:
                entries = self._waiters.get(batch_id, [])
                if (loop, future) in entries:
                    entries.remove((loop, future))
                if not entries:
                    self._waiters.pop(batch_id, None)

    def _counted(self, run: Callable[[], str]) -> str:
        """Run a task with its slot counted: the sweeper waits for a free slot."""
        self.leases.task_started()
        try:
            return run()
        finally:
            self.leases.task_finished()

    def _score(self, batch_id: str) -> str:
        return score_batch(
            batch_id, settings=self.settings, registry=self.registry, on_done=self._mark_done
        )

    def _run(self, batch_id: str) -> str:
        """Score the batch under its lease, exactly as a Celery worker does."""
        try:
            return self._counted(partial(score_leased, batch_id, self.leases, self._score))
        except Exception:
            log.exception("batch %s failed in the embedded executor", batch_id)
            raise

    def _run_job(self, task: JobTask, job_id: str) -> str:
        with self._lock:  # before the task marks the job running: the sweeper skips it
            self._jobs.add(job_id)
        try:
            return self._counted(partial(task, job_id, settings=self.settings))
        finally:
            with self._lock:
                self._jobs.discard(job_id)

    def _own_jobs(self) -> set[str]:
        with self._lock:
            return set(self._jobs)

    def submit(self, batch_id: str) -> None:
        self.pool.submit(self._run, batch_id)

    def submit_task(self, name: str, *args: str) -> None:
        """Another task by its Celery name, run on the same pool."""
        tasks: dict[str, JobTask] = {MINE_TASK: mine_rubric, FORGE_TASK: run_forge}
        if name not in tasks:
            raise KeyError(f"no task named {name!r}")
        (job_id,) = args
        self.pool.submit(self._run_job, tasks[name], job_id)

    def _send_job(self, kind: JobKind, job_id: str) -> None:
        """The sweeper's re-send of a lost job: onto this pool."""
        self.submit_task(JOB_TASKS[kind], job_id)

    def ready(self) -> bool:
        return True

    async def available(self) -> bool:
        """The executor lives in this process: alive as long as the API answers."""
        return True

    def workers(self) -> list[WorkerSeen]:
        """The live workers from their heartbeats, this process among them, as with Celery."""
        with session_scope(self.settings.database_url) as session:
            return workers.live(session=session, within_s=self.settings.lease_s)

    def close(self) -> None:
        """Stop the heartbeat and sweeper (the process is marked stopped), then the pool.
        A batch still running keeps its lease until it lapses; then another worker, or
        this service started again, picks it up."""
        if self._started:
            self.liveness.stop()
            self._started = False
        self.pool.shutdown(wait=False, cancel_futures=True)
