"""After a forge job: one review item per task family, and rubric mining on failed families.

Failed-looking traces are where rubric items come from first: each family with failed traces
is mined (the existing :func:`judge_service.review.mining.mine`) with its failed traces as the
failures and its good ones as contrast, and the proposals join the review queue.
"""

from __future__ import annotations

import asyncio
import logging
from typing import Any

from sqlalchemy.orm import Session

from judge_service.core.settings import Settings
from judge_service.domain import Outcome, Sample
from judge_service.forge.tables import ForgeJobRow, TaskFamilyRow
from judge_service.forge.trace_tasks import TraceFamily
from judge_service.review import store_review as review
from judge_service.review.client_mining import mine_with_model
from judge_service.review.mining import MiningRollout
from judge_service.review.store_mined import enqueue_mined
from judge_service.rubrics import store as rubrics

log = logging.getLogger(__name__)

DEFAULT_RUBRIC = "production-traces"
SAMPLE_TASKS = 5


def enqueue_family(
    *, session: Session, family: TaskFamilyRow, kind: str, counts: dict[str, Any], tasks: list[dict]
) -> int | None:
    """The family's ``task_family`` review item (once per family, in its job's project); its
    id when new."""
    row = review.enqueue_item(
        session=session,
        project=job_project(session=session, job_id=family.job_id),
        kind="task_family",
        dedupe_key=f"task_family:{family.id}",
        priority=0.4 if family.failed_traces else 0.3,
        payload={
            "family_id": family.id,
            "job_id": family.job_id,
            "name": family.name,
            "terms": family.terms,
            "source": kind,
            "counts": counts,
        },
        evidence={"tasks": tasks[:SAMPLE_TASKS]},
    )
    return None if row is None else row.id


def family_rollouts(family: TraceFamily, job_id: str) -> list[MiningRollout]:
    """Each candidate of the family as a rollout of the job (``forge:<job>`` stands for its
    batch in the evidence): failed ones at reward 0, the rest at 1."""
    rollouts = []
    for task in family.tasks:
        for candidate in [task.first, *task.merged]:
            ref = f"{candidate.trace_id}:{candidate.turn}"
            sample = Sample(
                id=ref,
                prompt=candidate.prompt,
                completion=candidate.rest or "(the agent gave no answer)",
            )
            reward = 0.0 if candidate.failures else 1.0
            outcome = Outcome(id=ref, reward=reward, raw_reward=reward, valid=True)
            rollouts.append(MiningRollout(ref, f"forge:{job_id}", sample, outcome))
    return rollouts


def job_project(*, session: Session, job_id: str) -> str:
    """The project of a forge job: its families, tasks and review items are that project's."""
    job = session.get(ForgeJobRow, job_id)
    return job.project if job is not None else rubrics.DEFAULT


def ensure_rubric(*, session: Session, name: str, job_id: str, project: str) -> None:
    """Mined items need a rubric to join: create an empty version 1 when there is none."""
    if rubrics.get_version(session=session, name=name, project=project) is None:
        rubrics.write_version(
            session=session,
            project=project,
            name=name,
            description="Items mined from failed production traces by forge jobs.",
            criteria=[],
            created_by="forge",
            source=f"forge:{job_id}",
        )


def mine_families(
    *,
    session_scope: Any,
    job_id: str,
    options: dict[str, Any],
    families: list[tuple[str, TraceFamily]],
    settings: Settings,
) -> list[dict[str, Any]]:
    """Mine each failed family; a summary per family (items queued, or the error)."""
    name = options.get("rubric") or DEFAULT_RUBRIC
    failed = [(fid, f) for fid, f in families if f.failed_traces]
    if not failed:
        return []
    with session_scope() as session:
        project = job_project(session=session, job_id=job_id)
        ensure_rubric(session=session, name=name, job_id=job_id, project=project)
        rubric = rubrics.to_domain(rubrics.get_version(session=session, name=name, project=project))
        known = review.rubric_item_texts(
            session=session,
            rubric=name,
            statuses=("pending", "rejected", "approved", "edited"),
            project=project,
        )
    summaries = []
    job = {"id": job_id, "model": options.get("miner"), "max_items": options.get("max_items", 3)}
    for index, (family_id, family) in enumerate(failed):
        rollouts = family_rollouts(family, job_id)
        try:
            result, _, model = asyncio.run(
                mine_with_model(
                    rubric,
                    rollouts,
                    known,
                    {**job, "id": f"{job_id}:{index}"},
                    settings,
                    option="miner",
                )
            )
        except Exception as exc:  # one family's failure is recorded, the job goes on
            log.exception("mining family %s of forge job %s failed", family_id, job_id)
            summaries.append(
                {"family_id": family_id, "items": [], "error": f"{type(exc).__name__}: {exc}"}
            )
            continue
        by_ref = {r.ref: r for r in rollouts}
        item_ids = []
        with session_scope() as session:
            for n, item in enumerate(result.items):
                item_id = enqueue_mined(
                    session=session,
                    project=project,
                    rubric=rubric,
                    item=item,
                    result=result,
                    rollouts=by_ref,
                    dedupe_key=f"rubric_item:forge:{job_id}:{family_id}:{n}",
                    payload={
                        "job_id": job_id,
                        "family_id": family_id,
                        "family": family.name,
                        "model": model,
                    },
                )
                if item_id is not None:
                    item_ids.append(item_id)
            known.extend(i.criterion["text"] for i in result.items)
        summaries.append({"family_id": family_id, "items": item_ids, "proposed": result.proposed})
    return summaries
