"""The embedded executor: a worker like a Celery one, on threads of the API process.

It owns a :class:`Leases` and the same heartbeat and sweeper (:class:`Liveness`) as a Celery
worker process, so a batch is scored under its lease and recovered the same way whoever
left it (a previous process of this service, or another one on the same database): the
sweeper re-sends onto this pool instead of a broker. There is no start-up special path: the
sweeper's first pass, at start, picks up what no live worker holds.

Stopping (``api.shutdown``): :meth:`drain` takes no more work, :meth:`stop` cancels the
batches still running (what they scored stays) and hands them back with the queued ones
(``storage.leases.hand_back``), for the next start or another worker to resume at once.
"""

from __future__ import annotations

import asyncio
import logging
import threading
import time
from collections.abc import Callable
from concurrent.futures import Future, ThreadPoolExecutor
from functools import partial

from judge_service.core import features
from judge_service.core.errors import ShuttingDown
from judge_service.core.registry import Registry
from judge_service.core.settings import Settings
from judge_service.core.storage.workers import WorkerSeen
from judge_service.core.worker.batch_status import batch_done, live_workers
from judge_service.core.worker.lease import Leases, score_leased
from judge_service.core.worker.liveness import Liveness
from judge_service.core.worker.loops import Interrupts

log = logging.getLogger(__name__)

#: A job's task: ``task(job_id, settings=...)``, returning the job's status.
JobTask = Callable[..., str]
#: How long :meth:`InProcessDispatcher.close` waits for cancelled batches to wind down.
CLOSE_WAIT_S = 5.0


def _settle(future: asyncio.Future[bool], value: bool) -> None:
    """Give a waiter its answer, unless it has one (a wait that timed out)."""
    if not future.done():
        future.set_result(value)


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
        self._jobs: set[str] = set()  # mining, forge and world jobs running on the pool
        self._futures: set[Future] = set()  # every task queued or running on the pool
        self._queued: set[str] = set()  # batches queued, not started yet
        self._stopped: set[str] = set()  # batches whose scoring the stop cancelled
        self._submit_lock = threading.Lock()  # a submit and the pool's shutdown: one at a time
        self._draining = False
        self._stopped_all = False
        self.interrupts = Interrupts()
        self.leases = Leases(settings.database_url, settings.lease_s, settings.inprocess_workers)
        self.liveness = Liveness(
            settings, self.leases, self._resend, self._send_job, own_jobs=self._own_jobs
        )
        self._started = False
        self._score_batch = features.the_one("score_batch")
        self._after_scored = features.after_batch(settings)
        # the model client now, not in the first batch's deadline (with JS_OPENAI_TRANSPORT=
        # litellm, building it imports litellm: seconds of CPU)
        features.prepare_worker(settings)

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
            loop.call_soon_threadsafe(_settle, future, True)

    def wake_waiters(self) -> None:
        """End every wait now (the service stops); each reads whether its batch is done."""
        with self._lock:
            waiters = [waiter for entries in self._waiters.values() for waiter in entries]
        for loop, future in waiters:
            loop.call_soon_threadsafe(_settle, future, False)

    async def wait(self, batch_id: str, timeout: float) -> bool:
        """True once the batch is done; False after ``timeout`` seconds, or when
        :meth:`wake_waiters` ends the wait first and the batch is not done.

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
            if await asyncio.wait_for(future, max(0.0, timeout)):
                return True
            return await asyncio.to_thread(batch_done, url, batch_id)  # woken: as it stands
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
        return self._score_batch(
            batch_id,
            settings=self.settings,
            registry=self.registry,
            on_done=self._mark_done,
            after_scored=self._after_scored,
            interrupts=self.interrupts,
        )

    def _run(self, batch_id: str) -> str:
        """Score the batch under its lease, exactly as a Celery worker does."""
        with self._lock:
            self._queued.discard(batch_id)
        try:
            return self._counted(partial(score_leased, batch_id, self.leases, self._score))
        except asyncio.CancelledError:  # stop(): the lease is released, the batch handed back
            with self._lock:
                self._stopped.add(batch_id)
            log.info("batch %s stopped with the service; it resumes on the next start", batch_id)
            return "stopped"
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

    def _on_pool(self, run: Callable[..., str], *args: object) -> bool:
        """Queue a task on the pool; False once the service stops (nothing is queued)."""
        with self._submit_lock:
            if self._draining:
                return False
            future = self.pool.submit(run, *args)
            with self._lock:
                self._futures.add(future)
        future.add_done_callback(self._forget)
        return True

    def _forget(self, future: Future) -> None:
        with self._lock:
            self._futures.discard(future)

    def _queue_batch(self, batch_id: str) -> bool:
        with self._lock:  # before the pool may start it: ``_run`` removes it
            self._queued.add(batch_id)
        return self._on_pool(self._run, batch_id)  # False: stop() hands it back

    def submit(self, batch_id: str) -> None:
        if not self._queue_batch(batch_id):
            raise ShuttingDown()

    def _resend(self, batch_id: str) -> None:
        """The sweeper's re-send of a batch: onto this pool (or, once the service stops,
        into what is handed back)."""
        self._queue_batch(batch_id)

    def _queue_job(self, name: str, job_id: str) -> bool:
        # imported on the first job, not at start: the forge's clustering alone brings
        # scikit-learn (~2 s of CPU), which a service that only scores never needs
        run: JobTask = features.job_runner(name)
        return self._on_pool(self._run_job, run, job_id)

    def submit_task(self, name: str, *args: str) -> None:
        """Another task by its Celery name, run on the same pool."""
        (job_id,) = args
        if not self._queue_job(name, job_id):
            raise ShuttingDown()

    def _send_job(self, kind: str, job_id: str) -> None:
        """The sweeper's re-send of a lost job: onto this pool (once the service stops, the
        next start's sweeper re-sends it)."""
        self._queue_job(features.job_kinds()[kind].task, job_id)

    def busy(self) -> int:
        """Batches and jobs queued or running on the pool."""
        with self._lock:
            return len(self._futures)

    def drain(self) -> None:
        """Take no new work (a submit raises 503 ``shutting_down``) and stop sweeping; the
        heartbeat goes on renewing the leases of what runs."""
        with self._submit_lock:
            self._draining = True
        self.liveness.stop_sweeping()

    def stop(self, wait_s: float) -> None:
        """Cancel the queued tasks and the running batches (a batch stops at its next await,
        with what it scored stored), wait up to ``wait_s`` for them to end, then hand back
        the batches stopped or never started, and any lease still held. A running mining or
        forge job cannot be cancelled: it is not waited for (the next start re-runs it)."""
        with self._submit_lock:
            if self._stopped_all:
                return
            self._draining = self._stopped_all = True
            self.pool.shutdown(wait=False, cancel_futures=True)
        self.liveness.stop_sweeping()
        self.interrupts.cancel_all()
        deadline = time.monotonic() + wait_s
        while self.busy() > len(self._own_jobs()) and time.monotonic() < deadline:
            time.sleep(0.02)
        with self._lock:
            stopped = self._queued | self._stopped
        try:
            handed = self.leases.hand_back(stopped)
        except Exception as exc:  # the database is down: the leases lapse by themselves
            log.warning("could not hand back the unfinished batches (%r); their leases lapse", exc)
            handed = 0
        if handed:
            log.info(
                "%d unfinished batch(es) handed back: the next start, or another worker on "
                "this database, resumes them",
                handed,
            )
        if left := self.busy():
            log.warning(
                "%d task(s) still running (a mining or forge job, or a judge that ignores "
                "cancellation): they run again on the next start",
                left,
            )

    def ready(self) -> bool:
        return True

    async def available(self) -> bool:
        """The executor lives in this process: alive as long as the API answers."""
        return True

    def workers(self) -> list[WorkerSeen]:
        """The live workers from their heartbeats, this process among them, as with Celery."""
        return live_workers(self.settings.database_url, self.settings.lease_s)

    def close(self) -> None:
        """Stop the work as :meth:`stop` does (unless it already ran), then the heartbeat
        and sweeper (the process is marked stopped)."""
        self.drain()
        self.stop(CLOSE_WAIT_S)
        if self._started:
            self.liveness.stop()
            self._started = False
