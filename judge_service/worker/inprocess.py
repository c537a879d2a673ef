"""The embedded executor: the same task code as Celery, on threads of this process."""

from __future__ import annotations

import asyncio
import logging
import threading
from collections.abc import Awaitable, Callable
from concurrent.futures import Future, ThreadPoolExecutor

from judge_service.registry import Registry
from judge_service.settings import Settings
from judge_service.storage import batches, forge, mining
from judge_service.storage.db import session_scope
from judge_service.worker.forge_task import FORGE_TASK, run_forge
from judge_service.worker.mining_task import MINE_TASK, mine_rubric
from judge_service.worker.tasks import score_batch
from judge_service.worker.write_outs import DeferredWriteOuts

log = logging.getLogger(__name__)


class InProcessDispatcher:
    """Runs :func:`score_batch` on a thread pool; resumes unfinished batches on start."""

    def __init__(self, settings: Settings, registry: Registry) -> None:
        self.settings = settings
        self.registry = registry
        self.pool = ThreadPoolExecutor(
            max_workers=settings.inprocess_workers, thread_name_prefix="judge-batch"
        )
        self._waiters: dict[str, list[tuple[asyncio.AbstractEventLoop, asyncio.Future]]] = {}
        self._lock = threading.Lock()
        #: Answered batches still to be written out as results (``storage.settled``).
        self.write_outs = DeferredWriteOuts()

    async def written_out(self, timeout: float | None = None) -> None:
        """Return once every batch answered on this event loop is written out as results,
        or its write-out failed (or after ``timeout`` seconds): a read after an answer
        then sees the answered batch (after a failure, ``submission.read`` writes it out)."""
        await self.write_outs.wait(timeout)

    def mark_done(self, batch_id: str) -> None:
        """Wake every request waiting on this batch, in whatever event loop it waits."""
        with self._lock:
            waiters = self._waiters.pop(batch_id, [])
        for loop, future in waiters:
            loop.call_soon_threadsafe(lambda f=future: f.done() or f.set_result(None))

    async def wait_done(
        self, batch_id: str, timeout: float, is_done: Callable[[], Awaitable[bool]]
    ) -> None:
        """Return when this process finishes the batch, or after ``timeout`` seconds.

        ``is_done`` is checked after the waiter is registered, so a batch that
        finished just before is never waited for until the timeout.
        """
        loop = asyncio.get_running_loop()
        future: asyncio.Future = loop.create_future()
        with self._lock:
            self._waiters.setdefault(batch_id, []).append((loop, future))
        try:
            if await is_done():
                return
            await asyncio.wait_for(future, timeout)
        except TimeoutError:
            pass
        finally:
            with self._lock:
                entries = self._waiters.get(batch_id, [])
                if (loop, future) in entries:
                    entries.remove((loop, future))
                if not entries:
                    self._waiters.pop(batch_id, None)

    def _run(self, batch_id: str) -> str:
        try:
            return score_batch(
                batch_id, settings=self.settings, registry=self.registry, on_done=self.mark_done
            )
        except Exception:
            log.exception("batch %s failed in the embedded executor", batch_id)
            raise

    def submit(self, batch_id: str) -> Future[str]:
        return self.pool.submit(self._run, batch_id)

    def submit_task(self, name: str, *args: str) -> Future[str]:
        """Another task by its Celery name, run on the same pool."""
        tasks = {
            MINE_TASK: lambda job_id: mine_rubric(job_id, settings=self.settings),
            FORGE_TASK: lambda job_id: run_forge(job_id, settings=self.settings),
        }
        if name not in tasks:
            raise KeyError(f"no task named {name!r}")
        return self.pool.submit(tasks[name], *args)

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

    def ping(self) -> bool:
        return True

    def close(self) -> None:
        self.pool.shutdown(wait=False, cancel_futures=True)
