"""The batch-scoring task: the one place that joins pipeline and storage.

Celery workers and the embedded executor call :func:`score_batch`, which reads
the batch back from the database. An embedded server answering a waiting request
awaits :func:`score_work` on its own event loop instead, with the samples it
already holds, and starts judging while the batch is still being committed.
Both are safe to run twice: samples already scored are skipped, and a result is
inserted only if its sample has none.
"""

from __future__ import annotations

import asyncio
import logging
import time
from collections.abc import Callable, Sequence
from concurrent.futures import Future
from dataclasses import dataclass, field
from datetime import datetime
from typing import Any

from judge_service import metrics
from judge_service.auditors import build_detectors
from judge_service.domain import Outcome, Rubric, Sample
from judge_service.llm import get_client
from judge_service.local_model import local_judge
from judge_service.panels import build_panel
from judge_service.pipeline.auditing import POLICIES
from judge_service.pipeline.calibration import calibrate_panel
from judge_service.pipeline.evaluate import Numbered, Plan, batch_stats, evaluate_batch
from judge_service.registry import Registry
from judge_service.settings import Settings
from judge_service.storage import batches, settled
from judge_service.storage.db import session_scope
from judge_service.storage.results import ScoredSample, save_results
from judge_service.storage.review import list_known_hacks
from judge_service.storage.types import utcnow
from judge_service.worker.result_writer import ResultWriter, resolved
from judge_service.worker.review_enqueue import enqueue_review

log = logging.getLogger(__name__)

#: Called with the batch id once the batch is committed as done.
OnDone = Callable[[str], None]


@dataclass
class BatchWork:
    """What scoring a batch needs: its samples (with positions), plan and deadline.

    ``sample_rows`` resolves to ``{position: sample row id}`` once the samples are
    committed; ``n_samples`` is the whole batch, scored before or not.
    """

    batch_id: str
    positions: list[int]
    samples: Sequence[Sample]  # made on demand in the fast path (``SamplesOnDemand``)
    plan: dict[str, Any]
    deadline_at: datetime
    n_samples: int
    run_id: str | None = None
    step: int | None = None
    sample_rows: Future[dict[int, int]] = field(default_factory=Future)
    on_judging: Callable[[], None] | None = None  # called once the judge calls are under way


def known_hack_texts(settings: Settings) -> list[str]:
    """Transcripts of confirmed hacks, for the known-hack detector."""
    if settings.known_hacks_limit == 0:
        return []
    with session_scope(settings.database_url) as session:
        hacks = list_known_hacks(session=session, limit=settings.known_hacks_limit)
    texts = []
    for hack in hacks:
        try:
            texts.append(Sample.model_validate(hack.sample).transcript())
        except ValueError:
            continue
    return texts


def build_plan(
    batch_plan: dict,
    *,
    registry: Registry,
    settings: Settings,
    deadline: float,
    known_hacks: list[str],
    run_stats: Callable[[], dict] = dict,
) -> Plan:
    """The batch's scoring plan (the worker's, and ``judge-service score``'s). ``run_stats``
    is called only when the plan has detectors (they are its only readers, and it reads
    every sample's transcript)."""
    panel = build_panel(
        batch_plan["judges"],
        registry=registry,
        aggregator=batch_plan.get("aggregator") or settings.default_aggregator,
        quorum=batch_plan.get("quorum"),
        llm_options=llm_options(settings),
        local=lambda: local_judge(settings),
    )
    if batch_plan.get("calibration"):  # opt-in per request: maps frozen into the plan
        panel = calibrate_panel(panel, batch_plan["calibration"])
    rubric = batch_plan.get("rubric")
    detectors = build_detectors(
        batch_plan.get("detectors") or [],
        batch_plan.get("hindsight"),
        registry=registry,
        settings=settings,
        client=get_client(settings),
    )
    return Plan(
        panel=panel,
        rubric=Rubric.model_validate(rubric) if rubric else None,
        detectors=detectors,
        penalty=POLICIES[batch_plan.get("penalty") or settings.penalty_policy],
        known_hacks=known_hacks if detectors else (),
        run_stats=run_stats() if detectors else {},
        deadline=deadline,
        concurrency=settings.sample_concurrency,
        settings=settings,
    )


def llm_options(settings: Settings) -> dict:
    """Options every LLM judge of this process receives: the shared model client."""
    return {"client": get_client(settings)}


async def _score(work: BatchWork, plan_factory: Callable[[], Plan], writer: ResultWriter) -> bool:
    try:
        plan = plan_factory()
    except Exception as exc:  # a plan that can't be built masks the batch, with the reason
        log.exception("cannot build the plan")
        if work.on_judging is not None:
            work.on_judging()  # no judge calls will be made: nobody should wait for them
        for index, sample in enumerate(work.samples):
            reason = f"cannot build the judge panel: {exc}"
            await writer.add(index, Outcome.masked(sample.id, "internal_error", reason))
    else:
        await evaluate_batch(Numbered(work.samples), plan, writer.add, work.on_judging)
    return await writer.finish()


@dataclass(frozen=True)
class Scored:
    """How a run of a batch ended: done or not, and its stored outcomes when known.

    ``settled`` holds the outcomes when they were committed as a settled row and are
    still to be written out as results (``settled.write_out``); the batch is done
    once they are.
    """

    done: bool
    outcomes: list[Outcome] | None  # in sample order, when this run stored every one
    settled: list[ScoredSample] | None = None


async def score_work(
    work: BatchWork,
    *,
    settings: Settings,
    registry: Registry,
    known_hacks: list[str],
    settle_first: bool = False,
) -> Scored:
    """Score the work's samples on the running event loop, store the outcomes, and mark
    the batch done when complete.

    With ``settle_first``, a batch scored whole in this run is committed as a settled
    row instead: ``Scored.done`` is then True while the batch is not ``done`` in the
    database until the caller writes it out (see :class:`Scored`).

    Raises :class:`BatchNotStored` when ``work.sample_rows`` fails: the batch was never
    committed (or a concurrent request stored it first), so nothing was written.
    """
    left_s = (work.deadline_at - utcnow()).total_seconds()
    deadline = time.monotonic() + max(0.0, left_s)
    writer = ResultWriter(
        settings.database_url,
        work.batch_id,
        work.positions,
        work.sample_rows,
        work.n_samples,
        settle_first=settle_first,
    )

    def run_stats() -> dict[str, Any]:
        return {"run_id": work.run_id, "step": work.step, **batch_stats(work.samples)}

    def plan_factory() -> Plan:
        return build_plan(
            work.plan,
            registry=registry,
            settings=settings,
            deadline=deadline,
            known_hacks=known_hacks,
            run_stats=run_stats,
        )

    with metrics.BATCH_SECONDS.time():
        done = await _score(work, plan_factory, writer)
    return Scored(done, writer.answered() if done else None, writer.settled)


def known_hacks_for(work: BatchWork, settings: Settings) -> list[str]:
    """The known-hack corpus, read only when the batch runs detectors."""
    return known_hack_texts(settings) if work.plan.get("detectors") else []


def _run(work: BatchWork, *, settings: Settings, registry: Registry, on_done: OnDone | None) -> str:
    """Score a batch on a fresh event loop of this thread (Celery, embedded executor)."""
    scored = asyncio.run(
        score_work(
            work,
            settings=settings,
            registry=registry,
            known_hacks=known_hacks_for(work, settings),
        )
    )
    if scored.done:
        if on_done is not None:  # the answer can go out now; review queueing is a side channel
            on_done(work.batch_id)
        enqueue_review(work.batch_id, database_url=settings.database_url)
    return "done" if scored.done else "running"


def score_batch(
    batch_id: str,
    *,
    settings: Settings,
    registry: Registry,
    on_done: OnDone | None = None,
) -> str:
    """Score every unscored sample of a stored batch and mark it done. Returns its status.

    ``on_done(batch_id)`` runs once the batch is committed as done. A batch with
    settled outcomes (its answer went out, then the process stopped) is not scored
    again: its settled outcomes are written out.
    """
    if write_out_settled(batch_id, database_url=settings.database_url):
        if on_done is not None:
            on_done(batch_id)
        return "done"
    with session_scope(settings.database_url) as session:
        batch = batches.get_batch(session=session, batch_id=batch_id)
        if batch is None:
            log.warning("batch %s does not exist", batch_id)
            return "missing"
        if batch.status == "done":
            return "done"
        batches.mark_running(session=session, batch_id=batch_id)
        rows = batches.unscored_samples(session=session, batch_id=batch_id)
        work = BatchWork(
            batch_id=batch_id,
            positions=[r.position for r in rows],
            samples=[Sample.model_validate(r.payload) for r in rows],
            plan=batch.plan,
            deadline_at=batch.deadline_at,
            n_samples=batch.n_samples,
            run_id=batch.run_id,
            step=batch.step,
            sample_rows=resolved({r.position: r.id for r in rows}),
        )
    return _run(work, settings=settings, registry=registry, on_done=on_done)


def write_out_settled(batch_id: str, *, database_url: str) -> bool:
    """Write out the batch's settled outcomes, if it has any (answered, not yet stored as
    results), and queue its review items; True when it had."""
    with session_scope(database_url) as session:
        written_out = settled.write_out_pending(session=session, batch_id=batch_id)
    if written_out:
        enqueue_review(batch_id, database_url=database_url)
    return written_out


def expire_batch(batch_id: str, *, database_url: str) -> bool:
    """Past its deadline, mask every unscored sample as ``timeout`` and finish the batch.

    Called by whoever notices the deadline passed (the API while it waits, or a
    poll), so a batch is done on time even if no worker ever picked it up.
    """
    if write_out_settled(batch_id, database_url=database_url):
        return True  # answered already: what was answered is stored, not timeouts
    with session_scope(database_url) as session:
        # Locked (PostgreSQL): a fast path settling this batch now waits for this
        # transaction, then sees its results and stores rows instead of settling.
        batch = batches.get_batch(session=session, batch_id=batch_id, for_update=True)
        if batch is None or batch.status == "done":
            return batch is not None
        if utcnow() < batch.deadline_at:
            return False
        rows = batches.unscored_samples(session=session, batch_id=batch_id)
        reason = "the batch deadline passed before the sample was scored"
        save_results(
            session=session,
            batch_id=batch_id,
            scored=[
                ScoredSample(r.id, r.position, Outcome.masked(r.payload["id"], "timeout", reason))
                for r in rows
            ],
        )
        session.flush()
        return batches.finish_if_complete(session=session, batch_id=batch_id)
