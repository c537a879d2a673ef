"""The mining task: a run's rollouts through :mod:`judge_service.rubrics.mining` into the queue.

Runs on a Celery worker or the embedded executor (``MINE_TASK``). The model is the request's,
else the first model of ``JS_DEFAULT_JUDGES``, else the local SmolLM2 server. Safe to run
twice: items are keyed by job and position, and a finished job is not mined again.
"""

from __future__ import annotations

import asyncio
import logging
from typing import Any

from judge_service.domain import CallUsage
from judge_service.judging.client import get_client
from judge_service.judging.client_options import model_options
from judge_service.rubrics import store as rubrics
from judge_service.rubrics import store_mining as mining
from judge_service.rubrics import store_review as review
from judge_service.rubrics.evidence import rollout_evidence
from judge_service.rubrics.mining import MiningResult, MiningRollout, mine, refs
from judge_service.scoring.store_rollouts import run_rollouts
from judge_service.settings import Settings
from judge_service.storage.db import session_scope

log = logging.getLogger(__name__)


async def mine_with_model(
    rubric: Any,
    rollouts: list[MiningRollout],
    known: list[str],
    job: dict[str, Any],
    settings: Settings,
    *,
    option: str = "model",
) -> tuple[MiningResult, CallUsage, str]:
    """Mine ``rollouts`` with the job's model (a run's, or a forge job's failed traces);
    ``option``: the option that named it, for errors."""
    options = model_options(job["model"], settings, option=option)
    bounded = options.get("response_format_kind") == "json_object"
    usage = CallUsage()

    async def propose(messages: list[dict[str, str]], schema: dict[str, Any]) -> dict[str, Any]:
        nonlocal usage
        reply, cost = await get_client(settings).complete_json(
            options["model"],
            messages,
            schema,
            cache_key_parts={"mining_job": job["id"]},
            api_base=options.get("api_base"),
            api_key=options.get("api_key"),
            timeout=float(options.get("timeout_s", 300.0)),
            sampling={"temperature": 0.0, "max_tokens": 400 * job["max_items"] + 200},
            response_format_kind=options.get("response_format_kind", "json_schema"),
            free=bool(options.get("free", False)),
            schema_name="rubric_items",
        )
        usage += cost
        return reply

    result = await mine(
        rubric,
        rollouts,
        propose,
        max_items=job["max_items"],
        known_texts=known,
        bounded=bounded,
        max_chars=600 if bounded else 1500,
    )
    return result, usage, options["model"]


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
            shown = item.cited or result.failures[:3]
            row = review.enqueue_item(
                session=session,
                project=project,
                kind="rubric_item",
                dedupe_key=f"rubric_item:{job_id}:{n}",
                rubric=rubric.name,
                run_id=job["run_id"],
                priority=0.5,
                payload={
                    "rubric": rubric.name,
                    "base_version": rubric.version,
                    "criterion": item.criterion,
                    "rationale": item.rationale,
                    "cited": item.cited,
                    "dropped_citations": item.dropped_citations,
                    "job_id": job_id,
                    "model": model,
                },
                evidence={
                    "cited": bool(item.cited),
                    "rollouts": [
                        rollout_evidence(
                            ref,
                            by_ref[ref].batch_id,
                            by_ref[ref].sample,
                            by_ref[ref].outcome,
                            transcript_chars=1500,
                        )
                        for ref in shown
                    ],
                },
            )
            if row is not None:
                item_ids.append(row.id)
        summary = {
            **result.summary(),
            "items": item_ids,
            "model": model,
            "usage": usage.model_dump(),
        }
        mining.finish_job(session=session, job_id=job_id, result=summary)
    return "done"
