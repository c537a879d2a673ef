"""Taking a scoring request from validation to its answer: store, dispatch, wait, answer.

Shared by every scoring route (``/v1/rewards`` and OpenRLHF's ``/get_reward``).

Two ways through:

- **Stored, then dispatched.** The batch is committed, then handed to the queue
  (Celery, or the embedded executor by id). Used with Celery, for ``wait: false``,
  and for a repeated idempotency key.
- **Scored while stored.** Embedded, with ``wait: true``, the batch is scored
  on the request's own event loop: the judge calls go out from the request's
  samples first, and the batch is committed while they run. No result is
  written, and no answer goes out, before the samples are committed; the answer
  comes from the outcomes as committed, not from a read-back. No thread hop, no
  new event loop: this keeps the service's own cost per GRPO step small next to
  one judge call (``bench/grpo_wait.py``).
"""

from __future__ import annotations

import asyncio
import functools
import logging
from collections.abc import Awaitable
from datetime import datetime, timedelta
from typing import Any

from starlette.concurrency import run_in_threadpool

from judge_service import metrics, wire
from judge_service.api import answers, batching
from judge_service.api.answers import DoneAnswer
from judge_service.api.plan_rubric import rubric_ref
from judge_service.domain import Outcome
from judge_service.errors import Unavailable
from judge_service.storage import batches, loop_reads, settled
from judge_service.storage.db import get_engine, session_scope
from judge_service.storage.types import utcnow
from judge_service.worker.inprocess import InProcessDispatcher
from judge_service.worker.result_writer import BatchNotStored, count_scored
from judge_service.worker.review_enqueue import enqueue_review, may_need_review
from judge_service.worker.tasks import (
    BatchWork,
    Scored,
    expire_batch,
    known_hacks_for,
    score_work,
    write_out_settled,
)

log = logging.getLogger(__name__)

#: How long past a batch's deadline the API waits for the worker's own timeout masks.
DEADLINE_GRACE = timedelta(seconds=0.5)
#: How long the fast path lets the judge calls start before it stores the batch.
JUDGING_HEAD_START_S = 0.05


class AlreadyStored(Exception):
    """A concurrent request with the same idempotency key stored the batch first."""


Answer = wire.RewardResponse | DoneAnswer  # a batch not done yet, or done


def read(url: str, batch_id: str) -> Answer:
    """The batch as answered now; settled outcomes not written out yet are written out
    first (their answer went out: a read must not show the batch as running)."""
    write_out_settled(batch_id, database_url=url)
    with session_scope(url) as session:
        return batching.read_batch(session=session, batch_id=batch_id)


def settle(url: str, batch_id: str) -> bool:
    """True when the batch is done, expiring it first if its deadline (plus grace) passed.

    Settled outcomes not written out yet (their answer went out) are written out here,
    so a read never shows an answered batch as still running.
    """
    if write_out_settled(batch_id, database_url=url):
        return True
    with session_scope(url) as session:
        batch = batches.get_batch(session=session, batch_id=batch_id)
        if batch is None or batch.status == "done":
            return True
        overdue = utcnow() >= batch.deadline_at + DEADLINE_GRACE
    return expire_batch(batch_id, database_url=url) if overdue else False


async def wait_for_batch(url: str, batch_id: str, deadline_at: datetime, dispatcher: Any) -> None:
    """Wait until the batch is done; the deadline (plus grace) bounds the wait.

    The embedded executor signals the moment a batch is done; a Celery batch is
    polled, at most every 50 ms.
    """
    wait_done = getattr(dispatcher, "wait_done", None)
    if wait_done is not None:

        async def is_done() -> bool:
            return await run_in_threadpool(settle, url, batch_id)

        left_s = max(0.0, (deadline_at + DEADLINE_GRACE - utcnow()).total_seconds())
        await wait_done(batch_id, left_s, is_done)
    delay = 0.005
    while not await run_in_threadpool(settle, url, batch_id):
        await asyncio.sleep(delay)
        delay = min(delay * 1.5, 0.05)


def _resolve(future: asyncio.Future[None]) -> None:
    if not future.done():
        future.set_result(None)


def _answer_from(
    body: wire.RewardRequest, plan: dict[str, Any], batch_id: str, outcomes: list[Outcome]
) -> DoneAnswer:
    return answers.done_response(
        batch_id=batch_id,
        rubric=rubric_ref(plan),
        run_id=body.run_id,
        step=body.step,
        outcomes=outcomes,
        group_ids=[s.group_id for s in body.samples],
    )


async def _score_while_storing(
    body: wire.RewardRequest,
    plan: dict[str, Any],
    *,
    state: Any,
    key: Any,
    repeated: Awaitable[bool] | None = None,
) -> Answer | None:
    """The embedded fast path, on this request's own event loop.

    Returns None when the batch turned out to be stored already (its idempotency key
    was used before, as ``repeated`` says, or a concurrent request with the same key
    stored it first), for the caller to wait on that one.
    """
    settings, dispatcher = state.settings, state.dispatcher
    url = settings.database_url
    prepared = batching.PreparedBatch.of(body, settings=settings, status="running")
    judging: asyncio.Future[None] = asyncio.get_running_loop().create_future()
    n_samples = len(body.samples)
    work = BatchWork(
        batch_id=prepared.batch_id,
        positions=list(range(n_samples)),
        samples=batching.SamplesOnDemand(body.samples),
        plan=plan,
        deadline_at=prepared.deadline_at,
        n_samples=n_samples,
        run_id=body.run_id,
        step=body.step,
        on_judging=lambda: _resolve(judging),
    )

    def store() -> bool:
        # Runs to the end on its thread even if the request is cancelled meanwhile, so
        # the scoring task always learns whether its batch was committed.
        try:
            with session_scope(url) as session:
                _, created = batching.store_batch(
                    body, session=session, plan=plan, settings=settings, key=key, prepared=prepared
                )
                rows = batches.sample_rows(session=session, batch_id=prepared.batch_id)
        except BaseException as exc:
            work.sample_rows.set_exception(exc)
            raise
        if created:
            work.sample_rows.set_result(rows)
        else:
            work.sample_rows.set_exception(AlreadyStored(prepared.batch_id))
        return created

    if repeated is not None and await repeated:
        return None
    known_hacks = (
        await run_in_threadpool(known_hacks_for, work, settings) if plan.get("detectors") else []
    )
    scoring = asyncio.ensure_future(
        score_work(
            work,
            settings=settings,
            registry=state.registry,
            known_hacks=known_hacks,
            settle_first=True,
        )
    )
    review: dict[str, asyncio.Future] = {}  # set by _after_scoring when review items are due
    scoring.add_done_callback(
        lambda task: _after_scoring(task, work.batch_id, url, dispatcher, review)
    )
    # The judge calls go out first: storing the batch also needs the interpreter, and the
    # calls are what the trainer waits for.
    await asyncio.wait(
        [judging, scoring], timeout=JUDGING_HEAD_START_S, return_when=asyncio.FIRST_COMPLETED
    )
    # The loop waits for the judges now: earlier batches' write-outs run in this wait.
    dispatcher.write_outs.start_waiting()
    try:
        created = await run_in_threadpool(store)
    except BaseException:
        scoring.cancel()
        raise
    if not created:
        scoring.cancel()
        return None
    metrics.BATCHES_ACCEPTED.inc()
    left_s = (prepared.deadline_at + DEADLINE_GRACE - utcnow()).total_seconds()
    try:
        async with asyncio.timeout(max(0.0, left_s)):
            # shielded: a client that hangs up does not stop the scoring of a stored batch
            scored = await asyncio.shield(scoring)
    except Exception:  # logged by _after_scoring; the database decides what to answer
        scored = None
    if "queued" in review:  # review items are queued before the answer that flags them
        await asyncio.shield(review["queued"])
    if scored is not None and scored.outcomes is not None:  # committed: no read-back
        return _answer_from(body, plan, prepared.batch_id, scored.outcomes)
    await wait_for_batch(url, prepared.batch_id, prepared.deadline_at, dispatcher)
    return await run_in_threadpool(read, url, prepared.batch_id)


def _after_scoring(
    task: asyncio.Task,
    batch_id: str,
    url: str,
    dispatcher: Any,
    review: dict[str, asyncio.Future],
) -> None:
    """Once a fast-path batch is scored: write it out, queue its review items and wake
    other waiters, on a database writer thread (see :func:`_finish`).

    Runs as the scoring task's callback, so it happens even if the client hung up.
    The answer waits for it only when review items may be due (``review["queued"]``).
    """
    if task.cancelled():
        return
    error = task.exception()
    if error is not None:
        if not isinstance(error, BatchNotStored):
            log.error("batch %s failed while scoring", batch_id, exc_info=error)
        return
    scored: Scored = task.result()
    if scored.done:
        review_due = scored.outcomes is None or may_need_review(scored.outcomes)
        if scored.settled is None and not review_due:
            dispatcher.mark_done(batch_id)  # its rows are written and it is clean: all done
            return
        # Settled batches are written out after the answer, once the loop is idle
        # (``worker.write_outs``); one that may need review now, and its answer waits.
        finishing = dispatcher.write_outs.add(
            functools.partial(_finish, batch_id, url, dispatcher, scored, review_due),
            now=review_due,
        )
        if review_due:
            review["queued"] = finishing


def _finish(batch_id: str, url: str, dispatcher: Any, scored: Scored, review_due: bool) -> None:
    """Write out the settled outcomes (if any), queue the batch's review items, then wake
    whoever waits on it. A write-out that fails is logged: the settled row stays, and the
    next poll of the batch, its deadline or a restart writes it out (an answer waiting
    on review items fails with it)."""
    try:
        if scored.settled is not None:
            try:
                with session_scope(url) as session:
                    settled.write_out(session=session, batch_id=batch_id, scored=scored.settled)
            except Exception:
                log.exception("batch %s: writing out its settled outcomes failed", batch_id)
                raise
            count_scored(item.outcome for item in scored.settled)
        if review_due:  # queued before anyone is told the batch is done
            enqueue_review(batch_id, database_url=url)
    finally:
        # Even after a failure: a waiter then checks the database itself, and its check
        # (``settle``) writes a settled row out.
        dispatcher.mark_done(batch_id)


async def _store_then_dispatch(
    body: wire.RewardRequest, plan: dict[str, Any], *, state: Any, key: Any
) -> Answer:
    settings, dispatcher = state.settings, state.dispatcher
    url = settings.database_url

    def store() -> tuple[str, datetime, bool]:
        with session_scope(url) as session:
            batch, created = batching.store_batch(
                body, session=session, plan=plan, settings=settings, key=key
            )
            return batch.id, batch.deadline_at, created

    batch_id, deadline_at, created = await run_in_threadpool(store)
    written_out = getattr(dispatcher, "written_out", None)
    if not created and written_out is not None:
        # The batch was stored before, maybe answered and not written out yet: let this
        # process's write-out finish rather than race it to the same rows.
        await written_out()
    if created:
        metrics.BATCHES_ACCEPTED.inc()
        try:
            await run_in_threadpool(dispatcher.submit, batch_id)
        except Exception as exc:
            with session_scope(url) as session:
                batching.discard_batch(session=session, batch_id=batch_id)
            raise Unavailable(f"the task queue is unavailable: {type(exc).__name__}") from exc
    if body.wait:
        await wait_for_batch(url, batch_id, deadline_at, dispatcher)
    return await run_in_threadpool(read, url, batch_id)


def _key_used(url: str, key: str) -> bool:
    with get_engine(url).connect() as connection:
        return batches.idempotency_key_taken(connection=connection, key=key)


def _key_check(url: str, key: str) -> asyncio.Future[bool]:
    """Whether ``key`` was used before: answered at once on SQLite, else on a thread."""
    taken = loop_reads.idempotency_key_taken(url, key)
    if taken is None:
        return asyncio.ensure_future(run_in_threadpool(_key_used, url, key))
    answered: asyncio.Future[bool] = asyncio.get_running_loop().create_future()
    answered.set_result(taken)
    return answered


async def _resolve_plan(body: wire.RewardRequest, *, state: Any) -> dict[str, Any]:
    """The batch's plan; on a thread only when it reads the database (a hop costs ~1 ms)."""
    if batching.plan_reads_database(body):
        return await run_in_threadpool(
            batching.resolve_plan, body, settings=state.settings, registry=state.registry
        )
    return batching.resolve_plan(body, settings=state.settings, registry=state.registry)


def _drop(future: asyncio.Future[Any]) -> None:
    """Let go of the idempotency check once the request is through with it: cancelled if
    the request failed before awaiting it, its error (if any) marked as retrieved."""
    if not future.done():
        future.cancel()  # its thread still runs to the end; the answer is ignored
    elif not future.cancelled():
        future.exception()  # retrieved: no "exception was never retrieved" warning


async def submit_and_wait(body: wire.RewardRequest, *, state: Any, key: Any) -> Answer:
    """Validate, store, dispatch and (when ``wait``) wait for one scoring request."""
    settings = state.settings
    batching.check_batch_size(body, settings=settings)
    batching.check_unique_ids(body)
    if not (isinstance(state.dispatcher, InProcessDispatcher) and body.wait):
        plan = await _resolve_plan(body, state=state)
        return await _store_then_dispatch(body, plan, state=state, key=key)
    # The fast path. A repeated idempotency key must not send the judge calls out again,
    # so they wait for that check: made here on SQLite (``loop_reads``), else on a thread
    # while the plan is resolved and the batch prepared here, which the calls need anyway.
    repeated: asyncio.Future[bool] | None = None
    if body.idempotency_key is not None:
        repeated = _key_check(settings.database_url, body.idempotency_key)
    try:
        plan = await _resolve_plan(body, state=state)
        answer = await _score_while_storing(body, plan, state=state, key=key, repeated=repeated)
    finally:
        if repeated is not None:
            _drop(repeated)
    if answer is not None:
        return answer
    return await _store_then_dispatch(body, plan, state=state, key=key)
