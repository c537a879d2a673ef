"""Repository for results, judge verdicts and findings. Writes are idempotent."""

from __future__ import annotations

import functools
from collections.abc import Sequence
from datetime import datetime
from typing import NamedTuple, cast

from sqlalchemy import Table, bindparam, select
from sqlalchemy.dialects import postgresql
from sqlalchemy.orm import Session

from judge_service.core.storage.bulk import (
    Row,
    bind_processor,
    insert_ignoring_returning,
    insert_rows,
)
from judge_service.core.storage.tables import FindingRow, ResultRow, VerdictRow
from judge_service.core.storage.types import ascii_json, safe_text, utcnow
from judge_service.domain import CallUsage, Finding, Outcome, Verdict


class _ScoredFields(NamedTuple):
    sample_pk: int
    position: int
    outcome: Outcome


class ScoredSample(_ScoredFields):
    """An outcome ready to store: which sample row it belongs to, and where in the batch.

    The outcome is kept in its stored form (:func:`as_stored`), so whoever holds a
    ``ScoredSample`` holds exactly what a later read of the batch returns. A named
    tuple, not a frozen dataclass: 256 are made per GRPO step while the trainer waits,
    at a third of the cost.
    """

    __slots__ = ()

    def __new__(cls, sample_pk: int, position: int, outcome: Outcome) -> ScoredSample:
        return super().__new__(cls, sample_pk, position, as_stored(outcome))


#: Text limits of the stored columns (``safe_text`` also drops NUL and lone surrogates).
REASON_CHARS, RATIONALE_CHARS, ERROR_CHARS, EVIDENCE_CHARS = 4000, 20000, 4000, 20000


def _storable(text: str | None, limit: int) -> bool:
    """True when ``safe_text(text, limit)`` would leave ``text`` as it is (the usual case)."""
    if text is None:
        return True
    if len(text) > limit or "\x00" in text:
        return False
    return text.isascii() or safe_text(text) == text


def _clean(outcome: Outcome) -> bool:
    """True when every text of the outcome is stored as it is. Plain loops, and absent
    texts skipped before any call: this runs for every sample of every batch."""
    reason = outcome.failure_reason
    if reason is not None and not _storable(reason, REASON_CHARS):
        return False
    for verdict in outcome.judges:
        rationale, error = verdict.rationale, verdict.error
        if rationale is not None and not _storable(rationale, RATIONALE_CHARS):
            return False
        if error is not None and not _storable(error, ERROR_CHARS):
            return False
    if not outcome.findings:
        return True
    return all(
        _storable(finding.evidence, EVIDENCE_CHARS)
        and (finding.fact is None or _storable(finding.fact, EVIDENCE_CHARS))
        and (finding.narration is None or _storable(finding.narration, EVIDENCE_CHARS))
        for finding in outcome.findings
    )


def as_stored(outcome: Outcome) -> Outcome:
    """The outcome with its texts as the database keeps them (see ``safe_text``).

    The texts are made safe once, here, before they are written. Clean texts, the
    usual case, come back as the same object: this runs for every sample of every batch.
    """
    if _clean(outcome):
        return outcome
    judges = [
        v.model_copy(
            update={
                "rationale": safe_text(v.rationale, RATIONALE_CHARS),
                "error": safe_text(v.error, ERROR_CHARS),
            }
        )
        for v in outcome.judges
    ]
    findings = [
        f.model_copy(
            update={
                "evidence": safe_text(f.evidence, EVIDENCE_CHARS) or "",
                "fact": safe_text(f.fact, EVIDENCE_CHARS),
                "narration": safe_text(f.narration, EVIDENCE_CHARS),
            }
        )
        for f in outcome.findings
    ]
    return outcome.model_copy(
        update={
            "failure_reason": safe_text(outcome.failure_reason, REASON_CHARS),
            "judges": judges,
            "findings": findings,
        }
    )


#: The mapped tables: SQLAlchemy types a mapped class's ``__table__`` as any ``FromClause``,
#: but a class declared with a ``__tablename__`` maps a ``Table``.
_RESULTS_TABLE = cast(Table, ResultRow.__table__)
_VERDICTS_TABLE = cast(Table, VerdictRow.__table__)
_FINDINGS_TABLE = cast(Table, FindingRow.__table__)

RESULT_COLUMNS = (
    "sample_id", "batch_id", "position", "reward", "valid", "failure_kind", "failure_reason",
    "raw_reward", "penalty", "hack_score", "agreement", "components", "judge_calls",
    "cache_hits", "prompt_tokens", "completion_tokens", "cost_usd", "created_at",
)  # fmt: skip
VERDICT_COLUMNS = ("result_id", "position", "judge", "weight", "score", "rationale", "error")
FINDING_COLUMNS = (
    "result_id", "detector", "kind", "severity", "confidence", "evidence", "basis", "fact",
    "narration",
)  # fmt: skip


def _result_row(
    batch_id: str,
    item: ScoredSample,
    components: str | dict[str, float],
    created_at: datetime | str,
) -> Row:
    """A result's values in ``RESULT_COLUMNS`` order (``components`` and ``created_at``
    as given: raw for SQLAlchemy, or already in driver form)."""
    outcome, usage = item.outcome, item.outcome.usage
    return (
        item.sample_pk,
        batch_id,
        item.position,
        outcome.reward,
        outcome.valid,
        outcome.failure_kind,
        outcome.failure_reason,
        outcome.raw_reward,
        outcome.penalty,
        outcome.hack_score,
        outcome.agreement,
        components,
        usage.judge_calls,
        usage.cache_hits,
        usage.prompt_tokens,
        usage.completion_tokens,
        usage.cost_usd,
        created_at,
    )


@functools.lru_cache(maxsize=4096)
def _components_json(items: tuple[tuple[str, float], ...]) -> str:
    """The components column's text (``AsciiJSON``'s encoding), memoised: a batch repeats
    the same few components dicts (one judge, a handful of scores) hundreds of times."""
    return ascii_json(dict(items))


def _insert_results(
    session: Session, batch_id: str, scored: Sequence[ScoredSample], now: datetime
) -> list[tuple[int, int]]:
    """Insert the results that don't exist yet; ``(result id, sample id)`` of each new one."""
    table = _RESULTS_TABLE
    dialect = session.get_bind().dialect
    if dialect.name == "sqlite":  # the embedded default: the lean path, rows in driver form
        created_at = bind_processor(table, "created_at", dialect)(now)
        rows = [
            _result_row(
                batch_id, item, _components_json(tuple(item.outcome.components.items())), created_at
            )
            for item in scored
        ]
        inserted = insert_ignoring_returning(
            session,
            table,
            RESULT_COLUMNS,
            rows,
            conflict="sample_id",
            returning=("id", "sample_id"),
        )
        return [(result_id, sample_pk) for result_id, sample_pk in inserted]
    # PostgreSQL: SQLAlchemy's own path (one statement, RETURNING the rows it inserted)
    values = [
        dict(
            zip(
                RESULT_COLUMNS,
                _result_row(batch_id, item, item.outcome.components, now),
                strict=True,
            )
        )
        for item in scored
    ]
    statement = (
        postgresql.insert(table)
        .on_conflict_do_nothing(index_elements=["sample_id"])
        .returning(table.c.id, table.c.sample_id)
    )
    return [(result_id, sample_pk) for result_id, sample_pk in session.execute(statement, values)]


def save_results(*, session: Session, batch_id: str, scored: Sequence[ScoredSample]) -> int:
    """Insert results that don't exist yet; a sample already scored is left as it is.

    Returns how many were new. Running a task twice therefore never leaves two
    results for one sample. One multi-row INSERT ... ON CONFLICT DO NOTHING
    RETURNING per call: only the rows this call inserted come back, and only they
    get verdicts and findings, even when two runs of a task race.
    """
    if not scored:
        return 0
    # RETURNING carries sample_id, so rows are matched by it and their order is not needed:
    # asking SQLAlchemy for parameter order makes SQLite insert one row per statement.
    new_ids = {
        sample_pk: result_id
        for result_id, sample_pk in _insert_results(session, batch_id, scored, utcnow())
    }
    # (result id, outcome) of the rows this call inserted; flat comprehensions, not a
    # generator per sample: this runs for every sample of every GRPO step
    new = [(new_ids[item.sample_pk], item.outcome) for item in scored if item.sample_pk in new_ids]
    verdicts = [
        (result_id, position, v.judge, v.weight, v.score, v.rationale, v.error)
        for result_id, outcome in new
        for position, v in enumerate(outcome.judges)
    ]
    findings = [
        (
            result_id,
            f.detector,
            f.kind,
            f.severity,
            f.confidence,
            f.evidence,
            f.basis,
            f.fact,
            f.narration,
        )
        for result_id, outcome in new
        for f in outcome.findings
    ]
    insert_rows(session, _VERDICTS_TABLE, VERDICT_COLUMNS, verdicts)
    insert_rows(session, _FINDINGS_TABLE, FINDING_COLUMNS, findings)
    return len(new_ids)


def load_outcomes(
    *, session: Session, batch_id: str, sample_ids: dict[int, str], verdicts: bool = True
) -> list[tuple[int, Outcome]]:
    """The stored outcomes of a batch as ``(position, outcome)``, in sample order.

    ``sample_ids`` maps sample row ids to the client's sample ids. ``verdicts=False`` leaves
    each outcome's ``judges`` empty, for a compact answer that shows none: a GRPO step's 768
    verdicts are most of its read-back (the trainer bridge asks for compact). Three column queries,
    whatever the batch size, built once (building and keying a statement costs more than
    SQLite running it) and run on the session's connection; each row goes into its model's
    own validator as a dict. ORM objects cost ~0.1 ms a sample while the trainer waits for
    the answer, and ``model_construct`` (Python, field by field) ~3 us an object against
    ~1 us for the validator: a GRPO step's answer holds 256 outcomes and 768 verdicts.
    """
    connection = session.connection()
    where = {"batch": batch_id}
    verdict = _VERDICT.validate_python
    judges: dict[int, list[Verdict]] = {}
    rows = connection.execute(_VERDICTS, where) if verdicts else ()
    for result_id, judge, weight, score, rationale, error in rows:
        made = verdict(
            {"judge": judge, "weight": weight, "score": score, "rationale": rationale,
             "error": error}
        )  # fmt: skip
        bucket = judges.get(result_id)
        if bucket is None:
            judges[result_id] = [made]
        else:
            bucket.append(made)
    findings: dict[int, list[Finding]] = {}
    finding = _FINDING.validate_python
    for (
        result_id,
        detector,
        kind,
        severity,
        confidence,
        evidence,
        basis,
        fact,
        said,
    ) in connection.execute(_FINDINGS, where):
        findings.setdefault(result_id, []).append(
            finding(
                {
                    "detector": detector,
                    "kind": kind,
                    "severity": severity,
                    "confidence": confidence,
                    "evidence": evidence,
                    "basis": basis,
                    "fact": fact,
                    "narration": said,
                }
            )
        )
    outcome_of, usage_of = _OUTCOME.validate_python, _USAGE.validate_python
    outcomes = []
    for (
        result_id, sample_pk, position, reward, valid, failure_kind, failure_reason, raw_reward,
        penalty, hack_score, components, agreement, judge_calls, cache_hits, prompt_tokens,
        completion_tokens, cost_usd,
    ) in connection.execute(_RESULTS, where):  # fmt: skip
        outcome = outcome_of(
            {
                "id": sample_ids[sample_pk],
                "reward": reward,
                "valid": valid,
                "failure_kind": failure_kind,
                "failure_reason": failure_reason,
                "raw_reward": raw_reward,
                "penalty": penalty,
                "hack_score": hack_score,
                "components": components or {},
                "agreement": agreement,
                "judges": judges.get(result_id, []),
                "findings": findings.get(result_id, []),
                "usage": usage_of(
                    {
                        "judge_calls": judge_calls,
                        "cache_hits": cache_hits,
                        "prompt_tokens": prompt_tokens,
                        "completion_tokens": completion_tokens,
                        "cost_usd": cost_usd,
                    }
                ),
            }
        )
        outcomes.append((position, outcome))
    return outcomes


_R, _V, _F = _RESULTS_TABLE.c, _VERDICTS_TABLE.c, _FINDINGS_TABLE.c
_RESULT_IDS = select(_R.id).where(_R.batch_id == bindparam("batch")).scalar_subquery()
_VERDICTS = (
    select(_V.result_id, _V.judge, _V.weight, _V.score, _V.rationale, _V.error)
    .where(_V.result_id.in_(_RESULT_IDS))
    .order_by(_V.result_id, _V.position)
)
_FINDINGS = (
    select(
        _F.result_id,
        _F.detector,
        _F.kind,
        _F.severity,
        _F.confidence,
        _F.evidence,
        _F.basis,
        _F.fact,
        _F.narration,
    )
    .where(_F.result_id.in_(_RESULT_IDS))
    .order_by(_F.id)
)
#: What an answer needs of a result row, in the order ``load_outcomes`` unpacks it (not
#: ``batch_id`` nor ``created_at``, whose datetime parsing costs a call per row).
_RESULT_READ = (
    "id", "sample_id", "position", "reward", "valid", "failure_kind", "failure_reason",
    "raw_reward", "penalty", "hack_score", "components", "agreement", "judge_calls",
    "cache_hits", "prompt_tokens", "completion_tokens", "cost_usd",
)  # fmt: skip
_RESULTS = (
    select(*(_R[name] for name in _RESULT_READ))
    .where(_R.batch_id == bindparam("batch"))
    .order_by(_R.position)
)

_VERDICT = Verdict.__pydantic_validator__
_OUTCOME = Outcome.__pydantic_validator__
_FINDING = Finding.__pydantic_validator__
_USAGE = CallUsage.__pydantic_validator__
