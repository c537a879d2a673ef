"""Repository for results, judge verdicts and findings. Writes are idempotent."""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass

from sqlalchemy import select
from sqlalchemy.dialects import postgresql, sqlite
from sqlalchemy.orm import Session, selectinload

from judge_service.domain import CallUsage, Finding, Outcome, Verdict
from judge_service.storage.tables import FindingRow, ResultRow, VerdictRow
from judge_service.storage.types import safe_text


@dataclass(frozen=True)
class ScoredSample:
    """An outcome ready to store: which sample row it belongs to, and where in the batch."""

    sample_pk: int
    position: int
    outcome: Outcome


def _insert_ignoring_duplicates(session: Session):
    dialect = session.get_bind().dialect.name
    module = postgresql if dialect == "postgresql" else sqlite
    return module.insert(ResultRow).on_conflict_do_nothing(index_elements=["sample_id"])


def save_results(*, session: Session, batch_id: str, scored: Sequence[ScoredSample]) -> int:
    """Insert results that don't exist yet; a sample already scored is left as it is.

    Returns how many were new. Running a task twice therefore never leaves two
    results for one sample.
    """
    inserted = 0
    for item in scored:
        outcome = item.outcome
        usage = outcome.usage
        statement = _insert_ignoring_duplicates(session).values(
            sample_id=item.sample_pk,
            batch_id=batch_id,
            position=item.position,
            reward=outcome.reward,
            valid=outcome.valid,
            failure_kind=outcome.failure_kind,
            failure_reason=safe_text(outcome.failure_reason, 4000),
            raw_reward=outcome.raw_reward,
            penalty=outcome.penalty,
            hack_score=outcome.hack_score,
            agreement=outcome.agreement,
            components=outcome.components,
            judge_calls=usage.judge_calls,
            cache_hits=usage.cache_hits,
            prompt_tokens=usage.prompt_tokens,
            completion_tokens=usage.completion_tokens,
            cost_usd=usage.cost_usd,
        )
        result_id = session.execute(statement.returning(ResultRow.id)).scalar()
        if result_id is None:
            continue
        inserted += 1
        session.add_all(
            VerdictRow(
                result_id=result_id,
                position=position,
                judge=verdict.judge,
                weight=verdict.weight,
                score=verdict.score,
                rationale=safe_text(verdict.rationale, 20000),
                error=safe_text(verdict.error, 4000),
            )
            for position, verdict in enumerate(outcome.judges)
        )
        session.add_all(
            FindingRow(
                result_id=result_id,
                detector=finding.detector,
                kind=finding.kind,
                severity=finding.severity,
                confidence=finding.confidence,
                evidence=safe_text(finding.evidence, 20000) or "",
            )
            for finding in outcome.findings
        )
    return inserted


def _outcome(row: ResultRow, sample_id: str) -> Outcome:
    return Outcome(
        id=sample_id,
        reward=row.reward,
        valid=row.valid,
        failure_kind=row.failure_kind,  # type: ignore[arg-type]
        failure_reason=row.failure_reason,
        raw_reward=row.raw_reward,
        penalty=row.penalty,
        hack_score=row.hack_score,
        components=row.components or {},
        agreement=row.agreement,
        judges=[
            Verdict(
                judge=v.judge, weight=v.weight, score=v.score, rationale=v.rationale, error=v.error
            )
            for v in row.verdicts
        ],
        findings=[
            Finding(
                detector=f.detector,
                kind=f.kind,
                severity=f.severity,  # type: ignore[arg-type]
                confidence=f.confidence,
                evidence=f.evidence,
            )
            for f in row.findings
        ],
        usage=CallUsage(
            judge_calls=row.judge_calls,
            cache_hits=row.cache_hits,
            prompt_tokens=row.prompt_tokens,
            completion_tokens=row.completion_tokens,
            cost_usd=row.cost_usd,
        ),
    )


def load_outcomes(
    *, session: Session, batch_id: str, sample_ids: dict[int, str]
) -> list[tuple[int, Outcome]]:
    """The stored outcomes of a batch as ``(position, outcome)``, in sample order.

    ``sample_ids`` maps sample row ids to the client's sample ids.
    """
    rows = session.scalars(
        select(ResultRow)
        .where(ResultRow.batch_id == batch_id)
        .order_by(ResultRow.position)
        .options(selectinload(ResultRow.verdicts), selectinload(ResultRow.findings))
    )
    return [(row.position, _outcome(row, sample_ids[row.sample_id])) for row in rows]
