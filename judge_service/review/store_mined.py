"""A mined rubric item into the review queue, with the rollouts that show it as evidence.

Mining a run's rollouts and mining a forge job's failed families queue the same kind of
item: what a reviewer sees must not depend on where the failures came from.
"""

from __future__ import annotations

from typing import Any

from sqlalchemy.orm import Session

from judge_service.domain import Rubric
from judge_service.review import store_review as review
from judge_service.review.evidence import rollout_evidence
from judge_service.review.mining import MiningResult, MiningRollout, ProposedItem

#: How much of each rollout's transcript a reviewer is shown beside a mined item.
TRANSCRIPT_CHARS = 1500


def enqueue_mined(
    *,
    session: Session,
    project: str,
    rubric: Rubric,
    item: ProposedItem,
    result: MiningResult,
    rollouts: dict[str, MiningRollout],
    dedupe_key: str,
    payload: dict[str, Any],
    run_id: str | None = None,
) -> int | None:
    """Queue ``item`` as a pending ``rubric_item`` against ``rubric``'s version; its id when
    new. The evidence is the rollouts it cites, else the first three failures mined;
    ``payload`` adds what says where it was mined (job, model, family)."""
    shown = item.cited or result.failures[:3]
    row = review.enqueue_item(
        session=session,
        project=project,
        kind="rubric_item",
        dedupe_key=dedupe_key,
        rubric=rubric.name,
        run_id=run_id,
        priority=0.5,
        payload={
            "rubric": rubric.name,
            "base_version": rubric.version,
            "criterion": item.criterion,
            "rationale": item.rationale,
            "cited": item.cited,
            "dropped_citations": item.dropped_citations,
            **payload,
        },
        evidence={
            "cited": bool(item.cited),
            "rollouts": [
                rollout_evidence(
                    ref,
                    rollouts[ref].batch_id,
                    rollouts[ref].sample,
                    rollouts[ref].outcome,
                    transcript_chars=TRANSCRIPT_CHARS,
                )
                for ref in shown
                if ref in rollouts
            ],
        },
    )
    return None if row is None else row.id
