"""Repository for the known-hack corpus: the review queue adds reviewed hacks, scoring reads
the confirmed ones for the known-hack detector."""

from __future__ import annotations

from dataclasses import dataclass
from datetime import datetime
from typing import Any

from sqlalchemy import select, true
from sqlalchemy.orm import Session

from judge_service.audit.tables import KnownHackRow


@dataclass(frozen=True)
class KnownHack:
    """A confirmed (or, with ``confirmed=False``, a rejected) hack, detached from any session."""

    id: int
    sample: dict[str, Any]
    finding: dict[str, Any]
    hack_score: float
    confirmed: bool
    run_id: str | None
    created_at: datetime


def add_known_hack(
    *,
    session: Session,
    item_id: int | None,
    confirmed: bool,
    sample: dict[str, Any],
    finding: dict[str, Any],
    hack_score: float,
    run_id: str | None,
    reviewer: str,
    note: str | None = None,
    project: str = "default",
) -> KnownHackRow:
    """Add a reviewed hack of ``project``: to the corpus when ``confirmed``, as a negative
    otherwise."""
    row = KnownHackRow(
        project=project,
        item_id=item_id,
        confirmed=confirmed,
        sample=sample,
        finding=finding,
        hack_score=hack_score,
        run_id=run_id,
        reviewer=reviewer,
        note=note,
    )
    session.add(row)
    session.flush()
    return row


def list_known_hacks(
    *, session: Session, limit: int = 100, confirmed: bool = True, project: str | None = None
) -> list[KnownHack]:
    """The known-hack corpus (of ``project``; None: of all), newest first; ``confirmed=False``
    gives the negatives instead."""
    query = (
        select(KnownHackRow)
        .where(KnownHackRow.confirmed == confirmed)
        .where(true() if project is None else KnownHackRow.project == project)
        .order_by(KnownHackRow.created_at.desc(), KnownHackRow.id.desc())
        .limit(limit)
    )
    return [
        KnownHack(
            id=row.id,
            sample=row.sample,
            finding=row.finding,
            hack_score=row.hack_score,
            confirmed=row.confirmed,
            run_id=row.run_id,
            created_at=row.created_at,
        )
        for row in session.scalars(query)
    ]
