"""The Celery app on Redis: leases first, late acknowledgement second, one batch per process.

Who scores a batch is in the database: a worker process leases the batch before
scoring it and renews the lease by heartbeat (``worker.lease``, ``worker.liveness``).
A batch of a killed worker is re-sent by the sweepers once its lease lapses, within
seconds. Late acknowledgement stays the second line of defence: the broker hands an
unacknowledged message back after the visibility timeout, and the task then drops it
(the batch is done or leased) or scores what is still unscored.
A Redis restart does not stop a worker: it reconnects with backoff, forever, and
keeps scoring the batches it holds (the transport of ``broker_transport.py`` is
what keeps it alive; its docstring has the cause).
"""

from __future__ import annotations

from collections.abc import Callable
from urllib.parse import urlparse

from celery import Celery

from judge_service.core import features
from judge_service.core.registry import Registry
from judge_service.core.settings import Settings
from judge_service.core.worker.broker_transport import TRANSPORT
from judge_service.core.worker.task_names import SCORE_TASK

QUEUE = "judge_service"


def make_celery(settings: Settings) -> Celery:
    """A Celery app for ``settings.broker_url``; the API uses it only to send tasks."""
    if not settings.broker_url:
        raise ValueError("JS_BROKER_URL is not set: there is no broker to use")
    app = Celery("judge_service", broker=settings.broker_url)
    if urlparse(settings.broker_url).scheme in ("redis", "rediss"):
        # kombu's Redis transport, with the channel close that survives Redis going away
        # while a batch is in flight (the worker's "'NoneType' object has no attribute
        # 'hostname'" crash: the cause is written down in broker_transport.py).
        app.conf.broker_transport = TRANSPORT
    app.conf.update(
        task_acks_late=True,
        task_reject_on_worker_lost=True,
        task_acks_on_failure_or_timeout=True,
        worker_prefetch_multiplier=1,
        task_ignore_result=True,
        task_default_queue=QUEUE,
        task_serializer="json",
        accept_content=["json"],
        broker_connection_retry_on_startup=True,
        # A worker outlives any broker outage: it retries with Celery's backoff (2 s more
        # each time, at most 30 s apart) instead of giving up after 100 tries.
        broker_connection_retry=True,
        broker_connection_max_retries=None,
        broker_transport_options={
            "visibility_timeout": settings.task_visibility_timeout_s,
            # Sweep for messages of dead workers every few seconds (kombu's default
            # is ~100 s); the sweep is one cheap Redis range query.
            "unacked_restore_interval": max(1, min(10, settings.task_visibility_timeout_s // 3)),
            "unacked_restore_throttle": 1,
            "socket_connect_timeout": 5,
        },
        task_publish_retry_policy={"max_retries": 3, "interval_start": 0.2, "interval_step": 0.5},
        worker_hijack_root_logger=False,
    )
    return app


def send_score(app: Celery, batch_id: str) -> None:
    """Send the score task of a stored batch (the API's dispatcher, and the sweepers)."""
    app.send_task(SCORE_TASK, args=[batch_id], retry=True)


def make_worker(settings: Settings, *, pool: str = "prefork", concurrency: int = 1) -> Celery:
    """The Celery app with the scoring task and every feature's job tasks (what
    ``judge-service worker`` runs).

    The tasks' functions are imported here or when a job runs, not at the top: the API
    sends them by name and never loads the pipeline, and a worker that only scores never
    imports the forge's scikit-learn (~2 s of CPU)."""
    from judge_service.core.worker.lease import score_leased
    from judge_service.core.worker.process import connect_worker_process

    app = make_celery(settings)
    # Prefetch: a process fetches only when it has a free slot (Redis; with the multiplier
    # of 1 a worker holds at most one unacknowledged message per process anyway).
    app.conf.worker_disable_prefetch = True
    kinds = features.job_kinds()
    # prefork: one batch per process; threads: ``concurrency`` per process
    process = connect_worker_process(
        settings,
        send=lambda batch_id: send_score(app, batch_id),
        slots=concurrency if pool == "threads" else 1,
        per_child=pool == "prefork",
        send_job=lambda kind, job_id: app.send_task(kinds[kind].task, args=[job_id], retry=True),
    )
    registry = Registry()
    score_batch = features.the_one("score_batch")
    after_scored = features.after_batch(settings)
    features.prepare_worker(settings)  # before the fork and the first deadline

    @app.task(name=SCORE_TASK)
    def score_batch_task(batch_id: str) -> str:
        return score_leased(
            batch_id,
            process.leases(),
            lambda batch: score_batch(
                batch, settings=settings, registry=registry, after_scored=after_scored
            ),
        )

    for kind in kinds.values():
        app.task(name=kind.task)(_job_task(kind, settings))
    return app


def _job_task(kind: features.JobKind, settings: Settings) -> Callable[[str], str]:
    """The task that runs one job of ``kind`` (its function imported on the first job)."""

    def run_job(job_id: str) -> str:
        return features.load(kind.run)(job_id, settings=settings)

    run_job.__name__ = f"{kind.name}_task"
    return run_job
