"""A batch past its deadline: every unscored sample masked as ``timeout``, the batch done.

Called by whoever notices the deadline passed (the API while it waits, or a poll),
so a batch is done on time even if no worker ever picked it up. A worker still
scoring it afterwards finds those samples scored and writes nothing for them
(one result per sample).
"""

from __future__ import annotations

from judge_service.core.storage.db import session_scope
from judge_service.core.storage.types import utcnow
from judge_service.domain import Outcome
from judge_service.scoring import store_batches as batches
from judge_service.scoring.store_results import ScoredSample, save_results

REASON = "the batch deadline passed before the sample was scored"


def expire_batch(batch_id: str, *, database_url: str) -> bool:
    """Mask the unscored samples of an overdue batch and mark it done; True when the
    batch is done (now or before), False when it is missing or not overdue yet."""
    with session_scope(database_url) as session:
        # Locked (PostgreSQL): two pollers of one batch expire it one after the other.
        batch = batches.get_batch(session=session, batch_id=batch_id, for_update=True)
        if batch is None or batch.status == "done":
            return batch is not None
        if utcnow() < batch.deadline_at:
            return False
        rows = batches.unscored_samples(session=session, batch_id=batch_id)
        save_results(
            session=session,
            batch_id=batch_id,
            scored=[
                ScoredSample(r.id, r.position, Outcome.masked(r.payload["id"], "timeout", REASON))
                for r in rows
            ],
        )
        session.flush()
        return batches.finish_if_complete(session=session, batch_id=batch_id)
