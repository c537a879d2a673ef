"""After a batch is scored: queue its suspected hacks and split panels for human review.

Idempotent (one item per kind and sample, by ``dedupe_key``), and never fails the batch: a
problem here is logged, the rewards stand.
"""

from __future__ import annotations

import logging
from collections.abc import Callable

from judge_service.core.settings import Settings
from judge_service.core.storage.db import session_scope
from judge_service.review import store_review as review
from judge_service.review.evidence import rollout_evidence
from judge_service.review.queue_policy import QueuePolicy, select
from judge_service.scoring import store_batches as batches
from judge_service.scoring.store_rollouts import batch_rollouts

log = logging.getLogger(__name__)


def enqueue_review(batch_id: str, *, database_url: str, policy: QueuePolicy | None = None) -> int:
    """Queue the batch's review items; returns how many were new."""
    policy = policy or QueuePolicy()
    try:
        with session_scope(database_url) as session:
            if not batches.may_need_review(
                session=session,
                batch_id=batch_id,
                hack_score=policy.uncertain,
                agreement=policy.disagreement,
            ):
                return 0  # a clean batch: skip reading every rollout back
            rollouts = batch_rollouts(session=session, batch_id=batch_id)
            batch = batches.get_batch(session=session, batch_id=batch_id)
            project = batch.project if batch is not None else "default"
            candidates = select([(i, r.outcome) for i, r in enumerate(rollouts)], policy)
            added = 0
            for candidate in candidates:
                rollout = rollouts[candidate.position]
                evidence = rollout_evidence(
                    rollout.sample.id, batch_id, rollout.sample, rollout.outcome
                )
                row = review.enqueue_item(
                    session=session,
                    project=project,  # evidence quotes prompts: only the batch's project sees it
                    kind=candidate.kind,
                    dedupe_key=f"{candidate.kind}:{rollout.sample_pk}",
                    payload={**candidate.payload, "rubric": rollout.rubric_ref},
                    evidence={"rollouts": [evidence]},
                    rubric=(rollout.rubric_ref or "").split("@")[0] or None,
                    run_id=rollout.run_id,
                    batch_id=batch_id,
                    sample_pk=rollout.sample_pk,
                    sample_id=rollout.sample.id,
                    priority=candidate.priority,
                )
                added += row is not None
            return added
    except Exception:  # review is a side channel: it must never fail scoring
        log.exception("could not queue review items for batch %s", batch_id)
        return 0


def review_after_batch(settings: Settings) -> Callable[[str], None]:
    """What a worker runs once it has scored a batch (``score_batch``'s ``after_scored``)."""

    def after_scored(batch_id: str) -> None:
        enqueue_review(batch_id, database_url=settings.database_url)

    return after_scored
