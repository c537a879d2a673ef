"""The batch-scoring task: the one place that joins pipeline and storage.

Celery workers and the embedded executor call :func:`score_batch`, which reads
the batch back from the database, scores what is unscored and writes the results.
Safe to run twice: samples already scored are skipped, and a result is inserted
only if its sample has none.
"""

from __future__ import annotations

import asyncio
import logging
import time
from collections.abc import Callable
from dataclasses import dataclass
from datetime import datetime

from judge_service.audit.detectors import build_detectors
from judge_service.audit.host import POLICIES
from judge_service.audit.store_known_hacks import list_known_hacks
from judge_service.core import metrics
from judge_service.core.batch_plan import BatchPlan
from judge_service.core.registry import Registry
from judge_service.core.settings import Settings
from judge_service.core.storage.db import session_scope
from judge_service.core.storage.types import utcnow
from judge_service.core.worker.loops import Interrupts, run_on_thread_loop
from judge_service.domain import Outcome, Sample
from judge_service.judging.calibration import calibrate_panel
from judge_service.judging.client import ModelClient, get_client
from judge_service.judging.endpoints import resolve_specs
from judge_service.judging.local_model import LocalModelUnavailable, local_judge
from judge_service.judging.panels import build_panel
from judge_service.scoring import store_batches as batches
from judge_service.scoring.evaluate import RunStats, Scoring, batch_stats, evaluate_batch
from judge_service.scoring.job_result_writer import ResultWriter
from judge_service.wire import FailureKind

log = logging.getLogger(__name__)

#: Called with the batch id once the batch is committed as done.
OnDone = Callable[[str], None]


@dataclass
class BatchWork:
    """What scoring a batch needs: its unscored samples (with positions and row ids),
    plan and deadline; ``n_samples`` is the whole batch, scored before or not."""

    batch_id: str
    positions: list[int]
    samples: list[Sample]
    sample_rows: dict[int, int]  # {position: sample row id}
    plan: BatchPlan
    deadline_at: datetime
    n_samples: int
    run_id: str | None = None
    step: int | None = None
    project: str = "default"


def known_hack_texts(settings: Settings, project: str | None = None) -> list[str]:
    """Transcripts of confirmed hacks (of ``project``; None: of all), for the known-hack
    detector. Its findings quote the matched hack, so a batch meets only its project's."""
    if settings.known_hacks_limit == 0:
        return []
    with session_scope(settings.database_url) as session:
        hacks = list_known_hacks(session=session, limit=settings.known_hacks_limit, project=project)
    texts = []
    for hack in hacks:
        try:
            texts.append(Sample.model_validate(hack.sample).transcript())
        except ValueError:
            continue
    return texts


def build_scoring(
    plan: BatchPlan,
    *,
    registry: Registry,
    settings: Settings,
    deadline: float,
    known_hacks: list[str],
    run_stats: Callable[[], RunStats] = dict,
) -> Scoring:
    """The live parts that score a batch by its plan (the worker's, and ``judge-service
    score``'s). ``run_stats`` is called only when the plan has detectors (they are its
    only readers, and it reads every sample's transcript)."""
    panel = build_panel(  # base URLs and keys read from this process's settings, now
        resolve_specs([j.as_spec() for j in plan.judges], settings=settings) or [],
        registry=registry,
        aggregator=plan.aggregator or settings.default_aggregator,
        quorum=plan.quorum,
        llm_options=llm_options(settings),
        local=lambda: local_judge(settings),
    )
    if plan.calibration:  # opt-in per request: maps frozen into the plan
        panel = calibrate_panel(panel, {n: m.model_dump() for n, m in plan.calibration.items()})
    hindsight = None if plan.hindsight is None else [m.as_spec() for m in plan.hindsight]
    detectors = build_detectors(
        plan.detectors,
        resolve_specs(hindsight, settings=settings),
        registry=registry,
        settings=settings,
        client=get_client(settings),
    )
    return Scoring(
        panel=panel,
        rubric=plan.rubric,
        detectors=detectors,
        penalty=POLICIES[plan.penalty or settings.penalty_policy],
        known_hacks=known_hacks if detectors else (),
        run_stats=run_stats() if detectors else {},
        deadline=deadline,
        concurrency=settings.sample_concurrency,
        settings=settings,
    )


def llm_options(settings: Settings) -> dict[str, ModelClient]:
    """Options every LLM judge of this process receives: the shared model client."""
    return {"client": get_client(settings)}


async def _score(
    work: BatchWork, scoring_factory: Callable[[], Scoring], writer: ResultWriter
) -> bool:
    try:
        scoring = scoring_factory()
    except Exception as exc:  # a plan that cannot be built masks the batch, with the reason
        # the local judge not built yet (a worker's first start): its judge fails, with why
        kind: FailureKind = (
            "judge_failed" if isinstance(exc, LocalModelUnavailable) else "internal_error"
        )
        log.exception("cannot build the plan")
        for index, sample in enumerate(work.samples):
            reason = f"cannot build the judge panel: {exc}"
            await writer.add(index, Outcome.masked(sample.id, kind, reason))
    else:
        try:
            await evaluate_batch(list(enumerate(work.samples)), scoring, writer.add)
        except asyncio.CancelledError:  # the process stops: what was scored stays, the rest
            await writer.flush()  # is scored when the batch resumes
            raise
    return await writer.finish()


async def score_work(
    work: BatchWork,
    *,
    settings: Settings,
    registry: Registry,
    known_hacks: list[str],
) -> bool:
    """Score the work's samples on the running event loop, store the outcomes, and mark
    the batch done when complete; True when it is done."""
    left_s = (work.deadline_at - utcnow()).total_seconds()
    deadline = time.monotonic() + max(0.0, left_s)
    writer = ResultWriter(
        settings.database_url,
        work.batch_id,
        work.positions,
        work.sample_rows,
        work.n_samples,
    )

    def run_stats() -> RunStats:
        return {"run_id": work.run_id, "step": work.step, **batch_stats(work.samples)}

    def scoring_factory() -> Scoring:
        return build_scoring(
            work.plan,
            registry=registry,
            settings=settings,
            deadline=deadline,
            known_hacks=known_hacks,
            run_stats=run_stats,
        )

    with metrics.BATCH_SECONDS.time():
        return await _score(work, scoring_factory, writer)


def known_hacks_for(work: BatchWork, settings: Settings) -> list[str]:
    """The known-hack corpus, read only when the batch runs detectors."""
    return known_hack_texts(settings, work.project) if work.plan.detectors else []


def _run(
    work: BatchWork,
    *,
    settings: Settings,
    registry: Registry,
    on_done: OnDone | None,
    after_scored: OnDone | None = None,
    interrupts: Interrupts | None = None,
) -> str:
    """Score a batch on this thread's event loop (Celery, embedded executor); cancelled by
    ``interrupts`` (asyncio.CancelledError) when given."""
    scoring = score_work(
        work, settings=settings, registry=registry, known_hacks=known_hacks_for(work, settings)
    )
    done = run_on_thread_loop(scoring if interrupts is None else interrupts.guard(scoring))
    if done:
        # before waiters are woken: an answer that flags a rollout finds it queued for review
        if after_scored is not None:
            after_scored(work.batch_id)
        if on_done is not None:
            on_done(work.batch_id)
    return "done" if done else "running"


def score_batch(
    batch_id: str,
    *,
    settings: Settings,
    registry: Registry,
    on_done: OnDone | None = None,
    after_scored: OnDone | None = None,
    interrupts: Interrupts | None = None,
) -> str:
    """Score every unscored sample of a stored batch and mark it done. Returns its status.

    ``after_scored(batch_id)`` runs once this call has scored the batch, before
    ``on_done(batch_id)``, which also runs for a batch found done. The workers pass the review
    queue's :func:`~judge_service.review.job_review_enqueue.review_after_batch` (the queue
    wires it in: a feature's job does not call another's). ``interrupts`` can
    cancel the scoring (the embedded executor stops): asyncio.CancelledError is raised
    here, once the outcomes that were ready are stored.
    """
    with session_scope(settings.database_url) as session:
        batch = batches.get_batch(session=session, batch_id=batch_id)
        if batch is None:
            log.warning("batch %s does not exist", batch_id)
            return "missing"
        if batch.status == "done":
            if on_done is not None:
                on_done(batch_id)
            return "done"
        batches.mark_running(session=session, batch_id=batch_id)
        rows = batches.unscored_samples(session=session, batch_id=batch_id)
        work = BatchWork(
            batch_id=batch_id,
            positions=[r.position for r in rows],
            samples=[Sample.model_validate(r.payload) for r in rows],
            sample_rows={r.position: r.id for r in rows},
            plan=batch.plan,
            deadline_at=batch.deadline_at,
            n_samples=batch.n_samples,
            run_id=batch.run_id,
            step=batch.step,
            project=batch.project,
        )
    return _run(
        work,
        settings=settings,
        registry=registry,
        on_done=on_done,
        after_scored=after_scored,
        interrupts=interrupts,
    )
