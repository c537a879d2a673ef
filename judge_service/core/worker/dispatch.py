"""How a stored batch reaches a worker, and how the API learns it is done.

Celery when a broker is set, else the in-process executor. Both meet the one
:class:`Dispatcher` Protocol, so the API never asks which one it has.
"""

from __future__ import annotations

import asyncio
import time
from datetime import datetime
from typing import Protocol

from judge_service.core.registry import Registry
from judge_service.core.settings import Settings
from judge_service.core.storage import workers
from judge_service.core.storage.db import session_scope
from judge_service.core.storage.types import utcnow
from judge_service.core.storage.workers import WorkerSeen
from judge_service.core.worker.batch_status import batch_done, live_workers
from judge_service.core.worker.celery_app import make_celery, send_score

#: Polling a Celery batch: first after this long, then 1.5 times longer each time, up to
#: ``POLL_MAX_S`` (a batch on Celery takes far longer than this; an answer waits at most
#: this much past its commit).
POLL_FIRST_S, POLL_MAX_S = 0.005, 0.05


class Dispatcher(Protocol):
    """What the API needs from whoever scores its batches."""

    def start(self) -> None:
        """Begin taking work (the embedded executor starts its heartbeat and sweeper)."""

    def submit(self, batch_id: str) -> None:
        """Hand a committed batch to a worker; raises when the queue is unreachable."""

    def submit_task(self, name: str, *args: str) -> None:
        """Any other task by its Celery name (``task_names``), such as mining."""

    async def wait(self, batch_id: str, timeout: float) -> bool:
        """True once the batch is done in the database; False after ``timeout`` seconds."""

    def ready(self) -> bool:
        """Whether submitted work would reach a worker now (readiness)."""

    async def available(self) -> bool:
        """Whether a worker would do work submitted now: False when no worker heartbeat is
        newer than ``JS_WORKER_GRACE_S`` (the routes that dispatch then answer 503)."""

    def workers(self) -> list[WorkerSeen]:
        """The workers alive now, from their heartbeats (``/readyz``)."""

    def drain(self) -> None:
        """The service begins to stop: take no new work (a submit raises 503
        ``shutting_down``); what runs goes on. Must not block."""

    def busy(self) -> int:
        """How many batches and jobs this process runs or has queued (0 with a broker)."""

    def stop(self, wait_s: float) -> None:
        """Stop the work this process runs and hand its batches back for the next start or
        another worker; wait up to ``wait_s`` for it to wind down. Blocks (a thread's)."""

    def wake_waiters(self) -> None:
        """End every ``wait`` now (the service stops): each returns whether its batch is done."""

    def close(self) -> None:
        """Stop taking work; what is unfinished stays stored for the next start."""


#: How long the API trusts the newest worker heartbeat it read (one read a second at most,
#: not one per request; the grace it is compared with is tens of seconds).
BEAT_CACHE_S = 1.0


def newest_beat(database_url: str) -> datetime | None:
    with session_scope(database_url) as session:
        return workers.newest_beat(session=session)


class CeleryDispatcher:
    """Sends tasks to the broker; the workers do the rest.

    ``wait`` polls the database, with backoff, rather than listening for a signal from
    the worker (Redis pub/sub, say): the batch row is what every API replica reads
    anyway, a signal can be missed (a reconnect, a replica started late) while a row
    cannot, and the poll costs one primary-key read per waiting request every 50 ms at
    most, next to a batch that takes seconds on Celery.
    """

    def __init__(self, settings: Settings) -> None:
        self.settings = settings
        self.app = make_celery(settings)
        self._beat: tuple[float, datetime | None] = (-BEAT_CACHE_S, None)  # (read at, newest)
        self._woken = False

    def start(self) -> None:
        """Nothing to resume here: the workers' sweepers re-send what no worker holds."""

    def submit(self, batch_id: str) -> None:
        send_score(self.app, batch_id)

    def submit_task(self, name: str, *args: str) -> None:
        self.app.send_task(name, args=list(args), retry=True)

    async def wait(self, batch_id: str, timeout: float) -> bool:
        loop = asyncio.get_running_loop()
        end = loop.time() + max(0.0, timeout)
        delay = POLL_FIRST_S
        url = self.settings.database_url
        while not await asyncio.to_thread(batch_done, url, batch_id):
            left = end - loop.time()
            if left <= 0 or self._woken:
                return False
            await asyncio.sleep(min(delay, left))
            delay = min(delay * 1.5, POLL_MAX_S)
        return True

    def ready(self) -> bool:
        try:
            with self.app.connection_for_write() as connection:
                connection.ensure_connection(max_retries=1, timeout=2)
        except Exception:  # readiness reports any broker failure as "not ready"
            return False
        return True

    async def available(self) -> bool:
        read_at, newest = self._beat
        if time.monotonic() - read_at >= BEAT_CACHE_S:
            newest = await asyncio.to_thread(newest_beat, self.settings.database_url)
            self._beat = (time.monotonic(), newest)
        if newest is None:
            return False
        return (utcnow() - newest).total_seconds() <= self.settings.worker_grace_s

    def workers(self) -> list[WorkerSeen]:
        """Workers with a heartbeat within one lease (an older one's leases have lapsed)."""
        return live_workers(self.settings.database_url, self.settings.lease_s)

    def drain(self) -> None:
        """Nothing runs here: the workers go on, and the gate refuses new work."""

    def busy(self) -> int:
        return 0

    def stop(self, wait_s: float) -> None:
        """The workers hold the leases; nothing to hand back."""

    def wake_waiters(self) -> None:
        self._woken = True  # each poll ends within POLL_MAX_S

    def close(self) -> None:
        self.app.close()


def make_dispatcher(settings: Settings, registry: Registry) -> Dispatcher:
    if settings.embedded:
        # imported here: only the embedded executor brings the tasks into the API process
        from judge_service.core.worker.inprocess import InProcessDispatcher

        return InProcessDispatcher(settings, registry)
    return CeleryDispatcher(settings)
