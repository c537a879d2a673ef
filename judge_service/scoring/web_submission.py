"""Taking a scoring request from validation to its answer: store, dispatch, wait, answer.

Shared by every scoring route (``/v1/rewards`` and OpenRLHF's ``/get_reward``). One
path, embedded or not: the batch and its samples are committed in one transaction,
handed to the dispatcher by id, and (with ``wait``) the answer waits for the
dispatcher's completion signal, then reads the batch back. The API never scores and
never writes results; past the deadline it masks what is unscored (``storage.expiry``).
When the service stops (``api.shutdown``), a wait ends early: the answer is the batch as
it stands, 202 with a warning, and the client polls it as after ``wait: false``.
"""

from __future__ import annotations

from datetime import datetime, timedelta
from functools import partial
from typing import Any

from starlette.concurrency import run_in_threadpool

from judge_service import wire
from judge_service.core import metrics
from judge_service.core.api.enqueue import submit_or_undo
from judge_service.core.api.shutdown import Shutdown
from judge_service.core.api.state import ServiceState
from judge_service.core.batch_plan import BatchPlan
from judge_service.core.projects import Scope
from judge_service.core.storage.db import session_scope
from judge_service.core.storage.tables import ApiKeyRow
from judge_service.core.storage.types import utcnow
from judge_service.core.worker.dispatch import Dispatcher
from judge_service.judging.local_gate import require_local_judge
from judge_service.scoring import store_batches as batches
from judge_service.scoring import web_batching as batching
from judge_service.scoring.store_expiry import expire_batch
from judge_service.scoring.web_answers import DoneAnswer
from judge_service.scoring.web_local_deadline import local_judge_warnings

#: How long past a batch's deadline the API waits for the worker's own timeout masks.
DEADLINE_GRACE = timedelta(seconds=0.5)

Answer = wire.RewardResponse | DoneAnswer  # a batch not done yet, or done


def read(url: str, batch_id: str, scope: Scope, compact: bool = False) -> Answer:
    """The batch as it is stored now (404 when ``scope`` does not see it); ``compact``:
    for a compact answer (no verdicts read)."""
    with session_scope(url) as session:
        return batching.read_batch(session=session, batch_id=batch_id, scope=scope, compact=compact)


def settle(url: str, batch_id: str, scope: Scope | None = None) -> bool:
    """True when the batch is done, expiring it first if its deadline (plus grace) passed.
    A batch that ``scope`` does not see is left alone."""
    with session_scope(url) as session:
        batch = batches.get_batch(session=session, batch_id=batch_id)
        if batch is None or batch.status == "done":
            return True
        if scope is not None and not scope.owns(batch.project):
            return True
        overdue = utcnow() >= batch.deadline_at + DEADLINE_GRACE
    return expire_batch(batch_id, database_url=url) if overdue else False


#: What a waiting client is told when the service stops before its batch is done.
STOPPED_WARNING = (
    "the service stopped before this batch was done: it resumes when the service is back; "
    "poll GET /v1/rewards/{batch_id}"
)


async def wait_for_batch(
    url: str, batch_id: str, deadline_at: datetime, dispatcher: Dispatcher, shutdown: Shutdown
) -> bool:
    """Wait until the batch is done (True); the deadline (plus grace) bounds the wait, after
    which its unscored samples are masked as ``timeout``. False when the service stops
    first (``shutdown.waits_over``)."""
    with shutdown.waiter():
        while not shutdown.waits_over:
            left_s = (deadline_at + DEADLINE_GRACE - utcnow()).total_seconds()
            if await dispatcher.wait(batch_id, max(0.0, left_s)):
                return True
            if shutdown.waits_over:
                break
            if await run_in_threadpool(settle, url, batch_id):
                return True
    return False


async def submit_and_wait(
    body: wire.RewardRequest, *, state: ServiceState, key: ApiKeyRow, scope: Scope
) -> Answer:
    """Validate, store (in ``scope.home``), dispatch and (when ``wait``) wait for one
    scoring request."""
    settings, dispatcher = state.settings, state.dispatcher
    url = settings.database_url
    batching.check_batch_size(body, settings=settings)
    batching.check_unique_ids(body)
    plan = await _resolve_plan(body, state=state, project=scope.home)
    require_local_judge(plan, settings)
    warnings = local_judge_warnings(body, plan, settings=settings)
    if warnings:  # stored with the batch: every answer of it (POST, polls, any replica) says so
        plan = plan.model_copy(update={"warnings": [*plan.warnings, *warnings]})

    def store() -> tuple[str, datetime, bool]:
        with session_scope(url) as session:
            batch, created = batching.store_batch(
                body, session=session, plan=plan, settings=settings, key=key, project=scope.home
            )
            return batch.id, batch.deadline_at, created

    batch_id, deadline_at, created = await run_in_threadpool(store)
    if created:
        metrics.BATCHES_ACCEPTED.inc()
        await run_in_threadpool(
            submit_or_undo,
            partial(dispatcher.submit, batch_id),
            partial(batching.discard_batch, url, batch_id),
        )
    stopped = body.wait and not await wait_for_batch(
        url, batch_id, deadline_at, dispatcher, state.shutdown
    )
    answer = await run_in_threadpool(read, url, batch_id, scope, body.detail == "compact")
    if stopped and answer.status != "done":  # the service stops: the client polls for it
        warning = STOPPED_WARNING.format(batch_id=batch_id)
        return answer.model_copy(update={"warnings": [*answer.warnings, warning]})
    return answer


async def _resolve_plan(
    body: wire.RewardRequest, *, state: ServiceState, project: str
) -> BatchPlan:
    """The batch's plan; on a thread only when it reads the database (a hop costs ~1 ms)."""
    if batching.plan_reads_database(body):
        return await run_in_threadpool(
            partial(
                batching.resolve_plan,
                body,
                settings=state.settings,
                registry=state.registry,
                project=project,
            )
        )
    return batching.resolve_plan(
        body, settings=state.settings, registry=state.registry, project=project
    )


def attach(app: Any, settings: object) -> None:
    """The one submission path, for the features that score besides ``/v1/rewards``
    (episodes): ``app.state.submit_rewards``."""
    app.state.submit_rewards = submit_and_wait
