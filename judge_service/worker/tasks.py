"""The batch-scoring task: the one place that joins pipeline and storage.

Celery workers and the embedded executor both call :func:`score_batch`. It is
safe to run twice: samples already scored are skipped, and a result is
inserted only if its sample has none.
"""

from __future__ import annotations

import asyncio
import logging
import time
from collections.abc import Callable
from concurrent.futures import ThreadPoolExecutor
from dataclasses import dataclass

from judge_service import metrics
from judge_service.auditors import build_detectors
from judge_service.domain import Outcome, Rubric, Sample
from judge_service.llm import get_client
from judge_service.local_model import local_judge
from judge_service.panels import build_panel
from judge_service.pipeline.auditing import POLICIES
from judge_service.pipeline.calibration import calibrate_panel
from judge_service.pipeline.evaluate import Plan, batch_stats, evaluate_batch
from judge_service.registry import Registry
from judge_service.settings import Settings
from judge_service.storage import batches
from judge_service.storage.db import session_scope
from judge_service.storage.results import ScoredSample, save_results
from judge_service.storage.review import list_known_hacks
from judge_service.storage.types import utcnow
from judge_service.worker.review_enqueue import enqueue_review

log = logging.getLogger(__name__)

#: Shared by every batch of the process: a new loop's default executor would start
#: fresh threads for each batch.
_DB_WRITERS = ThreadPoolExecutor(max_workers=4, thread_name_prefix="judge-db-write")
FLUSH_EVERY = 256
FLUSH_INTERVAL_S = 0.5


@dataclass
class _Pending:
    sample_pk: int
    position: int
    sample: Sample


class ResultWriter:
    """Buffers outcomes and writes them in small transactions, off the event loop."""

    def __init__(self, database_url: str, batch_id: str, pending: list[_Pending]) -> None:
        self.database_url = database_url
        self.batch_id = batch_id
        self.pending = pending
        self.buffer: list[ScoredSample] = []
        self.last_flush = time.monotonic()

    async def add(self, index: int, outcome: Outcome) -> None:
        metrics.SAMPLES_SCORED.labels(outcome.failure_kind or "valid").inc()
        for verdict in outcome.judges:
            status = "ok" if verdict.ok else "timeout" if verdict.timed_out else "error"
            metrics.JUDGE_VERDICTS.labels(verdict.judge, status).inc()
        item = self.pending[index]
        self.buffer.append(ScoredSample(item.sample_pk, item.position, outcome))
        due = time.monotonic() - self.last_flush >= FLUSH_INTERVAL_S
        if len(self.buffer) >= FLUSH_EVERY or due:
            await self.flush()

    async def flush(self) -> None:
        if not self.buffer:
            return
        chunk, self.buffer = self.buffer, []
        self.last_flush = time.monotonic()
        await asyncio.get_running_loop().run_in_executor(_DB_WRITERS, self._write, chunk)

    def _write(self, chunk: list[ScoredSample]) -> None:
        with session_scope(self.database_url) as session:
            save_results(session=session, batch_id=self.batch_id, scored=chunk)


def _known_hack_texts(settings: Settings) -> list[str]:
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


def _plan(
    batch_plan: dict,
    *,
    registry: Registry,
    settings: Settings,
    deadline: float,
    known_hacks: list[str],
    run_stats: dict | None = None,
) -> Plan:
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
    run_stats = run_stats or {}
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
        run_stats=run_stats,
        deadline=deadline,
        concurrency=settings.sample_concurrency,
        settings=settings,
    )


def llm_options(settings: Settings) -> dict:
    """Options every LLM judge of this process receives: the shared model client."""
    return {"client": get_client(settings)}


async def _score(pending: list[_Pending], plan_factory, writer: ResultWriter) -> None:
    try:
        plan = plan_factory()
    except Exception as exc:  # a plan that can't be built masks the batch, with the reason
        log.exception("cannot build the plan")
        for index, item in enumerate(pending):
            reason = f"cannot build the judge panel: {exc}"
            await writer.add(index, Outcome.masked(item.sample.id, "internal_error", reason))
    else:
        await evaluate_batch([(i, p.sample) for i, p in enumerate(pending)], plan, writer.add)
    await writer.flush()


def score_batch(
    batch_id: str,
    *,
    settings: Settings,
    registry: Registry,
    on_done: Callable[[str], None] | None = None,
) -> str:
    """Score every unscored sample of a batch and mark it done. Returns the batch status."""
    url = settings.database_url
    with session_scope(url) as session:
        batch = batches.get_batch(session=session, batch_id=batch_id)
        if batch is None:
            log.warning("batch %s does not exist", batch_id)
            return "missing"
        if batch.status == "done":
            return "done"
        batches.mark_running(session=session, batch_id=batch_id)
        rows = batches.unscored_samples(session=session, batch_id=batch_id)
        pending = [_Pending(r.id, r.position, Sample.model_validate(r.payload)) for r in rows]
        plan_dict, deadline_at = batch.plan, batch.deadline_at
        run_id, step = batch.run_id, batch.step
    known_hacks = _known_hack_texts(settings) if plan_dict.get("detectors") else []
    left_s = (deadline_at - utcnow()).total_seconds()
    deadline = time.monotonic() + max(0.0, left_s)
    writer = ResultWriter(url, batch_id, pending)
    with metrics.BATCH_SECONDS.time():
        asyncio.run(
            _score(
                pending,
                lambda: _plan(
                    plan_dict,
                    registry=registry,
                    settings=settings,
                    deadline=deadline,
                    known_hacks=known_hacks,
                    run_stats={
                        "run_id": run_id,
                        "step": step,
                        **batch_stats([p.sample for p in pending]),
                    },
                ),
                writer,
            )
        )
    with session_scope(url) as session:
        done = batches.finish_if_complete(session=session, batch_id=batch_id)
    if done:
        if on_done is not None:  # the answer can go out now; review queueing is a side channel
            on_done(batch_id)
        enqueue_review(batch_id, database_url=url)
    return "done" if done else "running"


def expire_batch(batch_id: str, *, database_url: str) -> bool:
    """Past its deadline, mask every unscored sample as ``timeout`` and finish the batch.

    Called by whoever notices the deadline passed (the API while it waits, or a
    poll), so a batch is done on time even if no worker ever picked it up.
    """
    with session_scope(database_url) as session:
        batch = batches.get_batch(session=session, batch_id=batch_id)
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
