"""Real worker and server processes kept between the tests of a module.

Starting ``judge-service worker`` costs seconds (it imports litellm) and ``serve`` a few more;
a module whose tests each started their own spends most of its time there. ``Fleet`` keeps
idle Celery worker processes of one database for the next test, which asks for how many it
needs (``Fleet.scale``); ``start_together`` starts several processes at once.
"""

from __future__ import annotations

import contextlib
from collections.abc import Callable
from concurrent.futures import ThreadPoolExecutor
from pathlib import Path
from typing import TypeVar

from judge_service.core.storage.db import session_scope
from judge_service.core.storage.workers import live
from tests.helpers import Process, Worker, wait_until

P = TypeVar("P", bound=Process)


def start_together(*starts: Callable[[], P]) -> list[P]:
    """Run the ``starts`` (each starts a process and waits until it is ready) at once, and
    return their processes in order; if one fails, the others are killed."""
    with ThreadPoolExecutor(max(1, len(starts))) as pool:
        futures = [pool.submit(start) for start in starts]
        errors = [f.exception() for f in futures]
    failed = next((e for e in errors if e is not None), None)
    if failed is not None:
        for future, error in zip(futures, errors, strict=True):
            if error is None:
                future.result().kill()
        raise failed
    return [f.result() for f in futures]


def pool_pids(worker: Worker) -> set[int]:
    """The worker's process and its pool processes."""
    pid = worker.proc.pid
    with contextlib.suppress(OSError):
        children = Path(f"/proc/{pid}/task/{pid}/children").read_text().split()
        return {pid, *map(int, children)}
    return {pid}


def worker_idle(worker: Worker, database_url: str, within_s: float) -> bool:
    """Every pool process of the worker has beaten within ``within_s`` saying it is idle."""
    pool = pool_pids(worker) - {worker.proc.pid}
    with session_scope(database_url) as session:
        seen = {w.pid: w.busy for w in live(session=session, within_s=within_s)}
    return bool(pool) and all(seen.get(pid) == 0 for pid in pool)


class Fleet:
    """Celery worker processes (concurrency 1) on one database and broker, kept between
    tests: ``scale(n)`` gives a test exactly ``n`` live, idle ones, reusing those that a
    previous test left, and starting the missing ones at once. A test may kill them."""

    def __init__(self, *, env: dict[str, str], cwd: Path, lease_s: float) -> None:
        self.env, self.cwd, self.lease_s = env, cwd, lease_s
        self.database_url = env["JS_DATABASE_URL"]
        self.workers: list[Worker] = []
        self.count = 0

    def starter(self) -> Callable[[], Worker]:
        """What starts one more worker (a new log file each)."""
        self.count += 1
        log = self.cwd / f"worker{self.count}.log"
        return lambda: Worker(env=self.env, cwd=self.cwd, log=log, concurrency=1)

    def keep(self, worker: Worker) -> bool:
        """Alive and idle (its heartbeat says so within a few beats); killed otherwise."""
        alive = worker.proc.poll() is None
        if alive and wait_until(
            lambda: worker_idle(worker, self.database_url, self.lease_s), timeout=3 * self.lease_s
        ):
            return True
        worker.kill()
        return False

    def trim(self, n: int) -> None:
        """At most ``n`` workers, all alive and idle (the others are killed)."""
        alive = []
        for worker in self.workers:
            if worker.proc.poll() is None:
                alive.append(worker)
            else:
                worker.kill()  # closes its log
        for worker in alive[n:]:
            worker.kill()
        self.workers = [w for w in alive[:n] if self.keep(w)]

    def scale(self, n: int, *also: Callable[[], P]) -> tuple[list[Worker], list[P]]:
        """Exactly ``n`` live, idle workers, and the processes ``also`` starts (started at
        the same time as the missing workers)."""
        self.trim(n)
        starts = [self.starter() for _ in range(n - len(self.workers))]
        started = start_together(*starts, *also)
        self.workers += started[: len(starts)]
        return list(self.workers), started[len(starts) :]  # type: ignore[return-value]

    def close(self) -> None:
        for worker in self.workers:
            worker.kill()
        self.workers = []
