"""Repository for human good/bad labels, and the judge scores they are compared with."""

from __future__ import annotations

from collections import Counter
from dataclasses import dataclass

from sqlalchemy import select
from sqlalchemy.orm import Session

from judge_service.core.storage.tables import BatchRow, ResultRow, SampleRow, VerdictRow
from judge_service.rubrics.tables import HumanLabelRow

CONSENSUS = "consensus"


@dataclass(frozen=True)
class LabeledScore:
    """One judge's score on one human-labelled rollout. ``judge`` is ``consensus`` for the
    final reward."""

    judge: str
    score: float
    good: bool


def set_label(
    *, session: Session, sample: SampleRow, label: str, reviewer: str, note: str | None = None
) -> HumanLabelRow:
    """The reviewer's label of the sample; labelling again replaces their earlier label."""
    row = session.scalars(
        select(HumanLabelRow).where(
            HumanLabelRow.sample_pk == sample.id, HumanLabelRow.reviewer == reviewer
        )
    ).first()
    if row is None:
        row = HumanLabelRow(
            sample_pk=sample.id,
            batch_id=sample.batch_id,
            sample_id=sample.external_id,
            reviewer=reviewer,
            label=label,
            note=note,
        )
        session.add(row)
    else:
        row.label, row.note = label, note
    session.flush()
    return row


def labels_of(*, session: Session, sample_pks: list[int]) -> dict[int, dict[str, int]]:
    """``{sample_pk: {"good": n, "bad": m}}`` for the given samples."""
    if not sample_pks:
        return {}
    rows = session.execute(
        select(HumanLabelRow.sample_pk, HumanLabelRow.label).where(
            HumanLabelRow.sample_pk.in_(sample_pks)
        )
    )
    counts: dict[int, Counter[str]] = {}
    for pk, label in rows:
        counts.setdefault(pk, Counter())[label] += 1
    return {pk: dict(c) for pk, c in counts.items()}


def _majority(session: Session, run_id: str | None, project: str | None) -> dict[int, bool]:
    """Each labelled sample's majority label (True = good); ties are left out. A label is of
    its sample's batch's project."""
    query = select(HumanLabelRow.sample_pk, HumanLabelRow.label)
    if run_id is not None or project is not None:
        query = query.join(SampleRow, SampleRow.id == HumanLabelRow.sample_pk).join(
            BatchRow, BatchRow.id == SampleRow.batch_id
        )
    if run_id is not None:
        query = query.where(BatchRow.run_id == run_id)
    if project is not None:
        query = query.where(BatchRow.project == project)
    votes: dict[int, int] = {}
    for pk, label in session.execute(query):
        votes[pk] = votes.get(pk, 0) + (1 if label == "good" else -1)
    return {pk: vote > 0 for pk, vote in votes.items() if vote != 0}


def labeled_scores(
    *,
    session: Session,
    run_id: str | None = None,
    judges: list[str] | None = None,
    project: str | None = None,
) -> list[LabeledScore]:
    """Every (judge score, human label) pair (of ``project``'s rollouts; None: of all), plus
    the final reward as judge ``consensus``."""
    majority = _majority(session, run_id, project)
    if not majority:
        return []
    pairs: list[LabeledScore] = []
    pks = list(majority)
    for start in range(0, len(pks), 500):
        chunk = pks[start : start + 500]
        results = session.execute(
            select(ResultRow.id, ResultRow.sample_id, ResultRow.reward, ResultRow.valid).where(
                ResultRow.sample_id.in_(chunk)
            )
        ).all()
        result_sample = {rid: pk for rid, pk, _, _ in results}
        if judges is None:
            pairs.extend(
                LabeledScore(CONSENSUS, float(reward), majority[pk])
                for _, pk, reward, valid in results
                if valid and reward is not None
            )
        query = select(VerdictRow.result_id, VerdictRow.judge, VerdictRow.score).where(
            VerdictRow.result_id.in_(list(result_sample)), VerdictRow.score.is_not(None)
        )
        if judges is not None:
            query = query.where(VerdictRow.judge.in_(judges))
        pairs.extend(
            LabeledScore(judge, float(score), majority[result_sample[rid]])
            for rid, judge, score in session.execute(query)
            if score is not None  # the query's own condition (the check narrows the type)
        )
    return pairs
