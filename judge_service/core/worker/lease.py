"""This worker process's leases: who it is, which batches it holds, how busy it is.

A score task first takes the batch's lease (``storage.leases.take``). A message for a
batch that is done, or leased by a live worker, is acknowledged and dropped: the task
returns at once, and Celery's late acknowledgement removes the message.
"""

from __future__ import annotations

import logging
import os
import socket
import threading
import time
import uuid
from collections.abc import Callable, Iterable

from judge_service.core import metrics
from judge_service.core.storage import leases
from judge_service.core.storage.db import session_scope

log = logging.getLogger(__name__)


class Leases:
    """The leases and the load of one worker process (``slots``: tasks it runs at once).

    ``owner`` names the process in ``batches.lease_owner`` and ``workers.id``: host,
    pid and a random part, so a restarted process with a reused pid is a new owner.
    """

    def __init__(self, database_url: str, lease_s: float, slots: int = 1) -> None:
        self.database_url = database_url
        self.lease_s = lease_s
        self.slots = slots
        self.hostname = socket.gethostname()
        self.pid = os.getpid()
        self.owner = f"{self.hostname}:{self.pid}:{uuid.uuid4().hex[:8]}"
        self._held: set[str] = set()
        self._busy = 0
        self._idle_since: float | None = time.monotonic()
        self._lock = threading.Lock()

    # --- load: every task (scoring, mining, forge) counts ---

    def task_started(self) -> None:
        with self._lock:
            self._busy += 1
            if self._busy >= self.slots:
                self._idle_since = None

    def task_finished(self) -> None:
        with self._lock:
            self._busy = max(0, self._busy - 1)
            if self._busy < self.slots and self._idle_since is None:
                self._idle_since = time.monotonic()

    @property
    def busy(self) -> int:
        return self._busy

    def idle_for(self) -> float:
        """Seconds this process has had a free slot without interruption (0: it is full)."""
        since = self._idle_since
        return 0.0 if since is None else time.monotonic() - since

    # --- leases ---

    def held(self) -> list[str]:
        with self._lock:
            return sorted(self._held)

    def take(self, batch_id: str) -> leases.Taken:
        with session_scope(self.database_url) as session:
            taken = leases.take(
                session=session, batch_id=batch_id, owner=self.owner, lease_s=self.lease_s
            )
        if taken == "taken":
            with self._lock:
                self._held.add(batch_id)
        return taken

    def renew(self) -> None:
        """Extend every lease held (the heartbeat thread); warn about any that lapsed."""
        held = self.held()
        with session_scope(self.database_url) as session:
            kept = leases.renew(
                session=session, batch_ids=held, owner=self.owner, lease_s=self.lease_s
            )
        for lost in set(held) - kept:
            with self._lock:
                still_ours = lost in self._held
            if still_ours:  # not released meanwhile: its lease lapsed and someone else took it
                log.warning("lost the lease on batch %s (writes stay one per sample)", lost)

    def release(self, batch_id: str) -> None:
        with self._lock:
            self._held.discard(batch_id)
        with session_scope(self.database_url) as session:
            leases.release(session=session, batch_id=batch_id, owner=self.owner)

    def hand_back(self, batch_ids: Iterable[str] = ()) -> int:
        """The process stops: release its leases, on every batch it holds and on
        ``batch_ids`` (stopped, or queued and never started), for the next sweep of any
        worker to re-send at once (``storage.leases.hand_back``). How many went back."""
        with self._lock:
            ids = sorted(self._held | set(batch_ids))
            self._held.clear()
        if not ids:
            return 0
        with session_scope(self.database_url) as session:
            return leases.hand_back(
                session=session, batch_ids=ids, owner=self.owner, quiet_s=self.lease_s
            )


def score_leased(batch_id: str, holder: Leases, score: Callable[[str], str]) -> str:
    """Score the batch under its lease; ``dropped: <why>`` when the message is not ours
    to run (the batch is done, leased by a live worker, or gone)."""
    taken = holder.take(batch_id)
    if taken != "taken":
        log.info("message for batch %s dropped: %s", batch_id, taken)
        metrics.MESSAGES_DROPPED.labels(taken).inc()
        return f"dropped: {taken}"
    try:
        return score(batch_id)
    finally:
        try:
            holder.release(batch_id)
        except Exception:  # the lease lapses by itself; the batch's state is in the database
            log.warning("could not release the lease on batch %s", batch_id, exc_info=True)
