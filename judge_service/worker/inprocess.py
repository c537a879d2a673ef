"""The embedded executor: the same task code as Celery, on threads of this process."""

from __future__ import annotations

import asyncio
import logging
import os
import socket
import threading
from concurrent.futures import ThreadPoolExecutor

from judge_service.registry import Registry
from judge_service.settings import Settings
from judge_service.storage import batches, forge, mining
from judge_service.storage.db import session_scope
from judge_service.storage.types import utcnow
from judge_service.storage.workers import WorkerSeen
from judge_service.worker.batch_status import batch_done
from judge_service.worker.forge_task import run_forge
from judge_service.worker.mining_task import mine_rubric
from judge_service.worker.task_names import FORGE_TASK, MINE_TASK
from judge_service.worker.tasks import score_batch

log = logging.getLogger(__name__)


class InProcessDispatcher:
    """Runs :func:`score_batch` on a thread pool and signals waiters the moment a batch
    is done; resumes unfinished batches on start."""

    def __init__(self, settings: Settings, registry: Registry) -> None:
        self.settings = settings
        self.registry = registry
        self.pool = ThreadPoolExecutor(
            max_workers=settings.inprocess_workers, thread_name_prefix="judge-batch"
        )
        self._waiters: dict[str, list[tuple[asyncio.AbstractEventLoop, asyncio.Future]]] = {}
        self._lock = threading.Lock()
        self._started_at = utcnow()
        self._running = 0  # batches on the pool now

    def start(self) -> None:
        resumed = self.resume_unfinished()
        if resumed:
            log.info("resumed %d unfinished batches", len(resumed))

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

    def _run(self, batch_id: str) -> str:
        with self._lock:
            self._running += 1
        try:
            return score_batch(
                batch_id, settings=self.settings, registry=self.registry, on_done=self._mark_done
            )
        except Exception:
            log.exception("batch %s failed in the embedded executor", batch_id)
            raise
        finally:
            with self._lock:
                self._running -= 1

    def submit(self, batch_id: str) -> None:
        self.pool.submit(self._run, batch_id)

    def submit_task(self, name: str, *args: str) -> None:
        """Another task by its Celery name, run on the same pool."""
        tasks = {
            MINE_TASK: lambda job_id: mine_rubric(job_id, settings=self.settings),
            FORGE_TASK: lambda job_id: run_forge(job_id, settings=self.settings),
        }
        if name not in tasks:
            raise KeyError(f"no task named {name!r}")
        self.pool.submit(tasks[name], *args)

    def resume_unfinished(self) -> list[str]:
        """Re-submit batches (and mining and forge jobs) a previous process left unfinished."""
        with session_scope(self.settings.database_url) as session:
            ids = batches.unfinished_batch_ids(session=session)
            jobs = mining.unfinished_job_ids(session=session)
            forge_jobs = forge.unfinished_job_ids(session=session)
        for batch_id in ids:
            self.submit(batch_id)
        for job_id in jobs:
            self.submit_task(MINE_TASK, job_id)
        for job_id in forge_jobs:
            self.submit_task(FORGE_TASK, job_id)
        return ids

    def ready(self) -> bool:
        return True

    async def available(self) -> bool:
        """The executor lives in this process: alive as long as the API answers."""
        return True

    def workers(self) -> list[WorkerSeen]:
        """This process, the one worker there is."""
        me = WorkerSeen(
            "embedded", socket.gethostname(), os.getpid(), self._started_at, utcnow(), self._running
        )
        return [me]

    def close(self) -> None:
        self.pool.shutdown(wait=False, cancel_futures=True)
