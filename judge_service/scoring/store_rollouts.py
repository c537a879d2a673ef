"""Reading scored rollouts back: a batch's or a run's samples with their outcomes.

Review and mining look at rollouts after the fact; this is their one read path.
"""

from __future__ import annotations

from dataclasses import dataclass

from sqlalchemy import ColumnElement, select
from sqlalchemy.orm import Session

from judge_service.core.storage.tables import BatchRow, SampleRow
from judge_service.domain import Outcome, Sample
from judge_service.scoring.store_results import load_outcomes


@dataclass(frozen=True)
class StoredRollout:
    batch_id: str
    sample_pk: int
    run_id: str | None
    rubric_ref: str | None
    sample: Sample
    outcome: Outcome


def batch_rollouts(*, session: Session, batch_id: str) -> list[StoredRollout]:
    """Every scored sample of a batch, in sample order."""
    batch = session.get(BatchRow, batch_id)
    if batch is None:
        return []
    samples = {s.id: s for s in batch.samples}
    by_position = {s.position: s for s in samples.values()}
    outcomes = load_outcomes(
        session=session,
        batch_id=batch_id,
        sample_ids={pk: s.external_id for pk, s in samples.items()},
    )
    rollouts = []
    for position, outcome in outcomes:
        row = by_position[position]
        rollouts.append(
            StoredRollout(
                batch_id=batch_id,
                sample_pk=row.id,
                run_id=batch.run_id,
                rubric_ref=batch.rubric_ref,
                sample=Sample.model_validate(row.payload),
                outcome=outcome,
            )
        )
    return rollouts


def run_rollouts(
    *, session: Session, run_id: str, max_batches: int = 50, project: str | None = None
) -> list[StoredRollout]:
    """The scored rollouts of a run's latest ``max_batches`` finished batches (of
    ``project``; None: of any), oldest first."""
    ids = list(
        session.scalars(
            select(BatchRow.id)
            .where(_of_run(run_id, project), BatchRow.status == "done")
            .order_by(BatchRow.created_at.desc())
            .limit(max_batches)
        )
    )
    rollouts: list[StoredRollout] = []
    for batch_id in reversed(ids):
        rollouts.extend(batch_rollouts(session=session, batch_id=batch_id))
    return rollouts


def _of_run(run_id: str, project: str | None) -> ColumnElement[bool]:
    found = BatchRow.run_id == run_id
    return found if project is None else found & (BatchRow.project == project)


def run_exists(*, session: Session, run_id: str, project: str | None = None) -> bool:
    query = select(BatchRow.id).where(_of_run(run_id, project))
    return session.scalars(query).first() is not None


def find_sample(*, session: Session, batch_id: str, sample_id: str) -> SampleRow | None:
    """A stored sample by its batch and the client's sample id."""
    query = select(SampleRow).where(
        SampleRow.batch_id == batch_id, SampleRow.external_id == sample_id
    )
    return session.scalars(query).first()


def recent_rollouts(
    *, session: Session, run_id: str | None = None, limit: int = 10, project: str | None = None
) -> list[StoredRollout]:
    """The newest scored rollouts (of a run, or of any; of ``project``), newest batch first."""
    query = select(BatchRow.id).where(BatchRow.status == "done")
    if project is not None:
        query = query.where(BatchRow.project == project)
    if run_id is not None:
        query = query.where(BatchRow.run_id == run_id)
    found: list[StoredRollout] = []
    for batch_id in session.scalars(query.order_by(BatchRow.created_at.desc()).limit(limit)):
        found.extend(
            r for r in batch_rollouts(session=session, batch_id=batch_id) if r.outcome.valid
        )
        if len(found) >= limit:
            break
    return found[:limit]
