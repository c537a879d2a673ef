"""The mining task: a run's rollouts through :mod:`judge_service.review.mining` into the queue.

Runs on a Celery worker or the embedded executor (``MINE_TASK``). The model is the request's,
else the first model of ``JS_DEFAULT_JUDGES``, else the local SmolLM2 server. Safe to run
twice: items are keyed by job and position, and a finished job is not mined again.
"""

from __future__ import annotations

import asyncio
import logging
from typing import Any

from judge_service.domain import CallUsage
from judge_service.llm import get_client
from judge_service.local_model import LOCAL_JUDGE_NAME, local_judge
from judge_service.review.evidence import rollout_evidence
from judge_service.review.mining import MiningResult, MiningRollout, mine, refs
from judge_service.settings import Settings
from judge_service.storage import mining, review, rubrics
from judge_service.storage.db import session_scope
from judge_service.storage.rollouts import run_rollouts

log = logging.getLogger(__name__)

CALL_OPTIONS = ("api_base", "api_key", "response_format_kind", "free", "timeout_s")


def model_options(spec: dict[str, Any] | None, settings: Settings) -> dict[str, Any]:
    """litellm call options for the mining model named by ``spec`` (or the defaults)."""
    if spec is None:
        models = [
            s
            for s in settings.default_judge_specs() or []
            if "/" in (s if isinstance(s, str) else str(s.get("name", "")))
        ]
        first = models[0] if models else LOCAL_JUDGE_NAME
        spec = first if isinstance(first, dict) else {"name": first}
    if spec["name"] == LOCAL_JUDGE_NAME:
        local = local_judge(settings)
        return {"model": local["model"], **{k: local[k] for k in CALL_OPTIONS if k in local}}
    return {"model": spec["name"], **{k: spec[k] for k in CALL_OPTIONS if k in spec}}


async def mine_with_model(
    rubric: Any,
    rollouts: list[MiningRollout],
    known: list[str],
    job: dict[str, Any],
    settings: Settings,
) -> tuple[MiningResult, CallUsage, str]:
    """Mine ``rollouts`` with the job's model (a run's, or a forge job's failed traces)."""
    options = model_options(job["model"], settings)
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
