"""The lease holder and liveness threads of each worker process, wired to Celery's signals.

prefork: every pool process (a forked child) has its own, started in the child; the
parent scores nothing and holds nothing. threads and solo pools: the one process has
them, started when the worker is ready.
"""

from __future__ import annotations

import os
import threading
from collections.abc import Callable

from celery.signals import (
    task_postrun,
    task_prerun,
    worker_process_init,
    worker_process_shutdown,
    worker_ready,
    worker_shutdown,
)

from judge_service.core.settings import Settings
from judge_service.core.storage.db import forget_engines_after_fork
from judge_service.core.worker.lease import Leases
from judge_service.core.worker.liveness import Liveness, SendJob


class WorkerProcess:
    """This process's :class:`Leases` and :class:`Liveness`, made on first use in the
    process that uses them (a fork gets its own, with its own pid in the owner id)."""

    def __init__(
        self,
        settings: Settings,
        send: Callable[[str], None],
        slots: int,
        send_job: SendJob | None = None,
    ) -> None:
        self.settings = settings
        self.send = send
        self.send_job = send_job
        self.slots = slots
        self._pid: int | None = None
        self._leases: Leases | None = None
        self._liveness: Liveness | None = None
        self._lock = threading.Lock()

    def leases(self) -> Leases:
        """This process's leases, heartbeat and sweeper started with them."""
        with self._lock:
            if self._leases is None or self._pid != os.getpid():
                holder = Leases(self.settings.database_url, self.settings.lease_s, self.slots)
                liveness = Liveness(self.settings, holder, self.send, self.send_job)
                liveness.start()
                self._pid, self._leases, self._liveness = os.getpid(), holder, liveness
            return self._leases

    def stop(self) -> None:
        with self._lock:
            if self._liveness is not None and self._pid == os.getpid():
                self._liveness.stop()
            self._leases = self._liveness = None


def connect_worker_process(
    settings: Settings,
    *,
    send: Callable[[str], None],
    slots: int,
    per_child: bool,
    send_job: SendJob | None = None,
) -> WorkerProcess:
    """A :class:`WorkerProcess` started and stopped by the worker's signals. ``per_child``
    (prefork): in each pool process; else in the worker process itself."""
    process = WorkerProcess(settings, send, slots, send_job)

    def child_started(**_: object) -> None:
        forget_engines_after_fork()  # the child opens its own database connections
        process.leases()

    if per_child:
        worker_process_init.connect(child_started, weak=False)
        worker_process_shutdown.connect(lambda **_: process.stop(), weak=False)
    else:
        worker_ready.connect(lambda **_: process.leases(), weak=False)
        worker_shutdown.connect(lambda **_: process.stop(), weak=False)
    task_prerun.connect(lambda **_: process.leases().task_started(), weak=False)
    task_postrun.connect(lambda **_: process.leases().task_finished(), weak=False)
    return process
