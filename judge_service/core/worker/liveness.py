"""A worker process's two background threads: the heartbeat and the sweeper.

**Heartbeat** (every ``JS_LEASE_S`` / 4): upsert the process's ``workers`` row and
renew its leases, so a lease survives three missed beats and lapses ``JS_LEASE_S``
after the process dies.

**Sweeper** (same cadence): re-send the task of every batch that no worker holds and
whose task went out more than ``JS_LEASE_S`` ago; mask a batch that is past its
deadline instead. That is how a batch of a killed worker, and one whose message a
restarted broker lost, is scored within seconds rather than after the visibility
timeout (or never). Mining and forge jobs still queued that long are re-sent too
(:mod:`judge_service.core.storage.lost_jobs`): their message is what the broker lost.

Why every worker process sweeps, and not the API: the workers are what must be alive
for a re-sent task to be run, they exist whenever scoring can happen at all, and a
worker starting after a broker restart finds the lost batches at once; API replicas
may be up while no worker is (then re-sending is pointless). Guards against a storm of
duplicate messages:

- a process sweeps only after it has had a free slot for ``JS_LEASE_S`` / 2. Prefetch
  is one message per process, so a queued message reaches a free process within
  milliseconds: a free process that waited that long proves the queue holds nothing
  for it, and a busy fleet (a long queue) re-sends nothing;
- the re-send is claimed by a conditional UPDATE of ``dispatched_at``: one sweeper
  per batch per ``JS_LEASE_S``, however many processes sweep.

The embedded executor (``worker.inprocess``) is a worker like the others: the same
threads, re-sending onto its own thread pool. Its first sweep runs as it starts, on an
empty pool (nothing can be queued for it), and so picks up at once what a previous
process left. With no broker to redeliver a mining or forge job whose process died, it
also re-sends ``running`` jobs, only those it doesn't run itself, and only while no other
worker is alive (jobs have no lease saying who runs them).
"""

from __future__ import annotations

import logging
import threading
from collections.abc import Callable

from judge_service.core import features, metrics
from judge_service.core.settings import Settings
from judge_service.core.storage import leases, lost_jobs, workers
from judge_service.core.storage.db import session_scope
from judge_service.core.storage.types import utcnow
from judge_service.core.worker.lease import Leases

log = logging.getLogger(__name__)

#: Rows of workers gone this long are deleted (each process start adds one).
FORGET_WORKERS_S = 24 * 3600
#: How long a start waits for the first beat: long enough that a worker is listed before it
#: says it is ready (a request right after is not refused), short enough that a database
#: outage doesn't hold up the pool process's start (Celery allows it 4 s).
FIRST_BEAT_WAIT_S = 2.0


#: Re-sends a job's task: ``send_job(kind, job_id)``, kind ``mining`` or ``forge``.
SendJob = Callable[[str, str], None]  # (job kind, job id)


class Liveness:
    """Heartbeat and sweeper threads of one worker process; ``send(batch_id)`` re-sends
    a batch's score task, ``send_job`` a mining or forge job's task (None: jobs are not
    swept). ``own_jobs``, where no broker redelivers jobs (the embedded executor): the ids
    of the jobs this process runs now; a ``running`` job not among them is then lost once
    no other worker is alive."""

    def __init__(
        self,
        settings: Settings,
        holder: Leases,
        send: Callable[[str], None],
        send_job: SendJob | None = None,
        own_jobs: Callable[[], set[str]] | None = None,
    ) -> None:
        self.settings = settings
        self.holder = holder
        self.send = send
        self.send_job = send_job
        self.own_jobs = own_jobs
        self.interval_s = settings.lease_s / 4
        self._stop = threading.Event()
        self._stop_sweeping = threading.Event()
        self._beaten = threading.Event()
        self._threads = [
            threading.Thread(
                target=self._loop, args=(self.beat, self._stop), name="js-heartbeat", daemon=True
            ),
            threading.Thread(
                target=self._loop,
                args=(self.sweep, self._stop_sweeping),
                name="js-sweeper",
                daemon=True,
            ),
        ]

    def start(self) -> None:
        """Start both threads; the first beat is at once, on the heartbeat thread, and
        waited for a moment (see ``FIRST_BEAT_WAIT_S``)."""
        for thread in self._threads:
            thread.start()
        self._beaten.wait(FIRST_BEAT_WAIT_S)

    def stop_sweeping(self) -> None:
        """Stop re-sending (the process stops taking work); the heartbeat goes on renewing
        the leases of what still runs. Does not wait for a sweep under way to end."""
        self._stop_sweeping.set()

    def stop(self) -> None:
        """Stop both threads and mark the process stopped (a clean shutdown)."""
        self._stop_sweeping.set()
        self._stop.set()
        for thread in self._threads:
            if thread.is_alive() and thread is not threading.current_thread():
                thread.join(timeout=5)
        try:
            with session_scope(self.settings.database_url) as session:
                workers.stopped(session=session, worker_id=self.holder.owner)
        except Exception:  # shutting down anyway; the row simply ages out
            log.warning("could not mark worker %s stopped", self.holder.owner, exc_info=True)

    def _loop(self, step: Callable[[], object], stop: threading.Event) -> None:
        failing = False
        while True:
            try:
                step()
            except Exception as exc:  # a database or broker outage: try again next tick
                # the traceback once per outage, not every tick of every process
                log.warning("%s failed (%r); retrying", step.__name__, exc, exc_info=not failing)
                failing = True
            else:
                if failing:
                    log.info("%s works again", step.__name__)
                failing = False
            if stop.wait(self.interval_s):
                return

    def beat(self) -> None:
        """Upsert this process's heartbeat row and renew its leases."""
        holder = self.holder
        with session_scope(self.settings.database_url) as session:
            if not self._beaten.is_set():
                workers.forget_older_than(session=session, age_s=FORGET_WORKERS_S)
            workers.beat(
                session=session,
                worker_id=holder.owner,
                hostname=holder.hostname,
                pid=holder.pid,
                busy=holder.busy,
            )
        self._beaten.set()
        holder.renew()

    def sweep(self, *, idle_proven: bool = False) -> int:
        """Re-send (or expire) the batches nobody attends to, and re-send the lost jobs;
        how many. Only when this process has been idle for half a lease (see the module
        docstring), or ``idle_proven``: the caller knows nothing is queued for it."""
        if not idle_proven and self.holder.idle_for() < self.settings.lease_s / 2:
            return 0
        return self._sweep_batches() + self._sweep_jobs()

    def _lost_statuses(self) -> tuple[lost_jobs.JobStatus, ...]:
        """``running`` jobs are lost too where no broker redelivers them and no other
        worker is alive to be running them."""
        if self.own_jobs is None:
            return lost_jobs.QUEUED
        with session_scope(self.settings.database_url) as session:
            alive = workers.live(session=session, within_s=self.settings.lease_s)
        if any(worker.id != self.holder.owner for worker in alive):
            return lost_jobs.QUEUED
        return ("queued", "running")

    def _sweep_jobs(self) -> int:
        if self.send_job is None:
            return 0
        url, quiet_s = self.settings.database_url, self.settings.lease_s
        statuses = self._lost_statuses()
        with session_scope(url) as session:
            lost = lost_jobs.lost_jobs(session=session, quiet_s=quiet_s, statuses=statuses)
        # read after the query: a job this process started meanwhile is in it
        mine = self.own_jobs() if self.own_jobs is not None else set()
        sent = 0
        for job in lost:
            if self._stop_sweeping.is_set():
                break
            if job.id in mine:
                continue
            with session_scope(url) as session:
                claimed = lost_jobs.claim_redispatch(
                    session=session, job=job, quiet_s=quiet_s, statuses=statuses
                )
            if claimed:
                log.info("re-dispatching %s job %s (nobody runs it)", job.kind, job.id)
                self.send_job(job.kind, job.id)
                metrics.JOBS_REDISPATCHED.labels(job.kind).inc()
                sent += 1
        return sent

    def _sweep_batches(self) -> int:
        url, quiet_s = self.settings.database_url, self.settings.lease_s
        with session_scope(url) as session:
            stale = leases.stale(session=session, quiet_s=quiet_s)
        handled = 0
        for batch in stale:
            if self._stop_sweeping.is_set():
                break
            if utcnow() >= batch.deadline_at:
                expire = features.the_one("expire_batch")
                expire(batch.id, database_url=url)  # masked as timeout, marked done
                handled += 1
                continue
            with session_scope(url) as session:
                claimed = leases.claim_redispatch(
                    session=session, batch_id=batch.id, quiet_s=quiet_s
                )
            if claimed:
                log.info(
                    "re-dispatching batch %s (no live lease, its task went out long ago)", batch.id
                )
                self.send(batch.id)
                metrics.BATCHES_REDISPATCHED.inc()
                handled += 1
        return handled
