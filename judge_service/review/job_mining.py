"""The mining task: a run's rollouts through :mod:`judge_service.review.mining` into the queue.

Runs on a Celery worker or the embedded executor (``MINE_TASK``). The model is the request's,
else the first model of ``JS_DEFAULT_JUDGES``, else the local SmolLM2 server. Safe to run
twice: items are keyed by job and position, and a finished job is not mined again.
"""

from __future__ import annotations

import asyncio
import logging

from judge_service.core.settings import Settings
from judge_service.core.storage.db import session_scope
from judge_service.review import store_mining as mining
from judge_service.review import store_review as review
from judge_service.review.client_mining import mine_with_model
from judge_service.review.mining import MiningRollout, refs
from judge_service.review.store_mined import enqueue_mined
from judge_service.rubrics import store as rubrics
from judge_service.scoring.store_rollouts import run_rollouts

log = logging.getLogger(__name__)


def mine_rubric(job_id: str, *, settings: Settings) -> str:
    """Mine the job's run for items of the job's rubric; returns the job's final status."""
    url = settings.database_url
    with session_scope(url) as session:
        job_row = mining.get_job(session=session, job_id=job_id)
        if job_row is None or not mining.start_job(session=session, job_id=job_id):
            return "missing" if job_row is None else job_row.status
        job = {c: getattr(job_row, c) for c in ("id", "rubric", "run_id", "model", "max_items")}
        project = job_row.project  # the rubric, the run and the items are all of this project
        active = rubrics.get_version(session=session, name=job["rubric"], project=project)
        stored = run_rollouts(session=session, run_id=job["run_id"], project=project)
        known = review.rubric_item_texts(
            session=session,
            rubric=job["rubric"],
            statuses=("pending", "rejected", "approved", "edited"),
            project=project,
        )
    try:
        if active is None:
            raise LookupError(f"rubric {job['rubric']!r} does not exist")
        rubric = rubrics.to_domain(active)
        names = refs([(r.batch_id, r.sample.id) for r in stored])
        rollouts = [
            MiningRollout(ref, r.batch_id, r.sample, r.outcome)
            for ref, r in zip(names, stored, strict=True)
        ]
        result, usage, model = asyncio.run(mine_with_model(rubric, rollouts, known, job, settings))
    except Exception as exc:  # a failed job says why; it does not crash the worker
        log.exception("mining job %s failed", job_id)
        with session_scope(url) as session:
            mining.finish_job(
                session=session, job_id=job_id, result={}, error=f"{type(exc).__name__}: {exc}"
            )
        return "failed"
    by_ref = {r.ref: r for r in rollouts}
    with session_scope(url) as session:
        item_ids = []
        for n, item in enumerate(result.items):
            item_id = enqueue_mined(
                session=session,
                project=project,
                rubric=rubric,
                item=item,
                result=result,
                rollouts=by_ref,
                dedupe_key=f"rubric_item:{job_id}:{n}",
                payload={"job_id": job_id, "model": model},
                run_id=job["run_id"],
            )
            if item_id is not None:
                item_ids.append(item_id)
        summary = {
            **result.summary(),
            "items": item_ids,
            "model": model,
            "usage": usage.model_dump(),
        }
        mining.finish_job(session=session, job_id=job_id, result=summary)
    return "done"
