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
from judge_service.errors import EndpointRefused
from judge_service.judging.client import get_client
from judge_service.judging.endpoints import resolve_spec
from judge_service.judging.local_model import LocalModelUnavailable, local_judge
from judge_service.judging.names import LOCAL_JUDGE_NAME
from judge_service.rubrics import store as rubrics
from judge_service.rubrics import store_mining as mining
from judge_service.rubrics import store_review as review
from judge_service.rubrics.evidence import rollout_evidence
from judge_service.rubrics.mining import MiningResult, MiningRollout, mine, refs
from judge_service.settings import Settings
from judge_service.storage.db import session_scope
from judge_service.storage.rollouts import run_rollouts
from judge_service.wire import spec_object

log = logging.getLogger(__name__)

CALL_OPTIONS = ("api_base", "api_key", "response_format_kind", "free", "timeout_s")


def model_spec(spec: Any, option: str = "model") -> dict[str, Any]:
    """``spec`` in its one form, ``{"name": ..., <options>}``: a plain model string (what a
    job stored before options were normalised may hold) is ``{"name": it}``. Anything else
    that names no model is a ValueError naming ``option``."""
    spec = spec_object(spec)
    name = spec.get("name") if isinstance(spec, dict) else None
    if not isinstance(name, str) or not name.strip():
        given = "an object without a name" if isinstance(spec, dict) else type(spec).__name__
        raise ValueError(
            f"option {option}: not a model ({given}): give a litellm model string such as "
            'openai/gpt-4.1-mini, or an object {"name": ..., <options>}'
        )
    return spec


def default_model(settings: Settings) -> dict[str, Any] | None:
    """The first model (a litellm string, with a ``/``) of ``JS_DEFAULT_JUDGES``, if any."""
    defaults = [spec_object(s) for s in settings.default_judge_specs() or []]
    models = [s for s in defaults if isinstance(s, dict) and "/" in str(s.get("name", ""))]
    return models[0] if models else None


def model_options(spec: Any, settings: Settings, *, option: str = "model") -> dict[str, Any]:
    """litellm call options for the model of ``option``, given as ``spec`` (a model string
    or an object; None: the defaults). A spec that names no model, or a local model that
    cannot run, is a ValueError naming ``option``."""
    if spec is None:
        spec = default_model(settings) or LOCAL_JUDGE_NAME
    spec = model_spec(spec, option)
    if spec["name"] == LOCAL_JUDGE_NAME:
        try:
            local = local_judge(settings)
        except LocalModelUnavailable as exc:
            raise ValueError(f"option {option}: {LOCAL_JUDGE_NAME} cannot run: {exc}") from exc
        return {"model": local["model"], **{k: local[k] for k in CALL_OPTIONS if k in local}}
    try:  # base URL and key of a named endpoint, read from this process's settings now
        spec = resolve_spec(spec, settings=settings)
    except EndpointRefused as exc:
        raise ValueError(f"option {option}: {exc.message}") from exc
    return {"model": spec["name"], **{k: spec[k] for k in CALL_OPTIONS if k in spec}}


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
