"""Reading a training run's scored samples back, step by step, for its report."""

from __future__ import annotations

from dataclasses import dataclass, field

from sqlalchemy import select
from sqlalchemy.orm import Session

from judge_service.core.storage.tables import BatchRow, FindingRow, ResultRow, SampleRow


@dataclass
class RunSample:
    """What the run report needs of one scored sample."""

    step: int | None
    group: str | None
    valid: bool
    reward: float | None
    raw_reward: float | None
    hack_score: float
    agreement: float | None
    kinds: set[str] = field(default_factory=set)


def run_samples(*, session: Session, run_id: str, project: str | None = None) -> list[RunSample]:
    """Every scored sample of the run's finished batches (of ``project``; None: any), with
    its non-info finding kinds."""
    of_run = BatchRow.run_id == run_id
    if project is not None:
        of_run = of_run & (BatchRow.project == project)
    rows = session.execute(
        select(
            ResultRow.id,
            BatchRow.step,
            BatchRow.id,
            SampleRow.group_id,
            ResultRow.valid,
            ResultRow.reward,
            ResultRow.raw_reward,
            ResultRow.hack_score,
            ResultRow.agreement,
        )
        .join(BatchRow, BatchRow.id == ResultRow.batch_id)
        .join(SampleRow, SampleRow.id == ResultRow.sample_id)
        .where(of_run, BatchRow.status == "done")
    ).all()
    result_ids = (
        select(ResultRow.id).join(BatchRow, BatchRow.id == ResultRow.batch_id).where(of_run)
    )
    kinds: dict[int, set[str]] = {}
    for result_id, kind in session.execute(
        select(FindingRow.result_id, FindingRow.kind).where(
            FindingRow.result_id.in_(result_ids), FindingRow.severity != "info"
        )
    ):
        kinds.setdefault(result_id, set()).add(kind)
    return [
        RunSample(
            step=step,
            group=f"{batch_id}/{group}" if group is not None else None,
            valid=valid,
            reward=reward,
            raw_reward=raw_reward,
            hack_score=hack_score,
            agreement=agreement,
            kinds=kinds.get(result_id, set()),
        )
        for result_id, step, batch_id, group, valid, reward, raw_reward, hack_score, agreement in (
            rows
        )
    ]
