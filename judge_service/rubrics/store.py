"""Repository for rubric versions: written once, never changed; the latest approved is active.

Callers turn a missing rubric into the right HTTP error; this module only reads and writes.
"""

from __future__ import annotations

import re
from dataclasses import dataclass
from datetime import datetime
from typing import Any

from sqlalchemy import func, select
from sqlalchemy.orm import Session

from judge_service.core.storage.types import utcnow
from judge_service.core.storage.upsert import insert_or_ignore
from judge_service.domain import Rubric
from judge_service.rubrics.tables import RubricVersionRow

APPROVED = "approved"
DEFAULT = "default"  # the project of rows made before projects, and of keys made without one
_REF = re.compile(r"^(?P<name>[^@]+?)(?:@(?P<version>\d+))?$")


@dataclass(frozen=True)
class RubricSummary:
    name: str
    version: int
    description: str
    criteria: int
    versions: int
    updated_at: datetime


def parse_ref(ref: str) -> tuple[str, int | None] | None:
    """``"name"`` -> ``(name, None)``; ``"name@3"`` -> ``(name, 3)``; anything else None."""
    match = _REF.match(ref.strip())
    if match is None:
        return None
    version = match.group("version")
    return match.group("name"), int(version) if version is not None else None


def to_domain(row: RubricVersionRow) -> Rubric:
    return Rubric.model_validate(
        {
            "name": row.name,
            "version": row.version,
            "description": row.description,
            "criteria": row.criteria,
            "prompts": row.prompts,
            "penalty": row.penalty,
        }
    )


def get_version(
    *, session: Session, name: str, version: int | None = None, project: str = DEFAULT
) -> RubricVersionRow | None:
    """Version ``version`` of ``name`` in ``project``, or the active one (latest approved)."""
    query = select(RubricVersionRow).where(
        RubricVersionRow.project == project, RubricVersionRow.name == name
    )
    if version is not None:
        return session.scalars(query.where(RubricVersionRow.version == version)).first()
    query = query.where(RubricVersionRow.status == APPROVED)
    return session.scalars(query.order_by(RubricVersionRow.version.desc()).limit(1)).first()


def resolve_ref(*, session: Session, ref: str, project: str = DEFAULT) -> RubricVersionRow | None:
    """The version a request's ``rubric`` names in ``project``: ``name`` (active) or
    ``name@N`` (pinned)."""
    parsed = parse_ref(ref)
    if parsed is None:
        return None
    name, version = parsed
    return get_version(session=session, name=name, version=version, project=project)


def exists(*, session: Session, name: str, project: str = DEFAULT) -> bool:
    query = select(func.count()).select_from(RubricVersionRow)
    return bool(
        session.scalar(
            query.where(RubricVersionRow.project == project, RubricVersionRow.name == name)
        )
    )


def list_versions(*, session: Session, name: str, project: str = DEFAULT) -> list[RubricVersionRow]:
    query = select(RubricVersionRow).where(
        RubricVersionRow.project == project, RubricVersionRow.name == name
    )
    return list(session.scalars(query.order_by(RubricVersionRow.version)))


def list_rubrics(*, session: Session, project: str = DEFAULT) -> list[RubricSummary]:
    """Every rubric of ``project`` with its active version, in name order."""
    counts = dict(
        session.execute(
            select(RubricVersionRow.name, func.count())
            .where(RubricVersionRow.project == project)
            .group_by(RubricVersionRow.name)
        ).all()
    )
    summaries = []
    for name in sorted(counts):
        active = get_version(session=session, name=name, project=project)
        if active is None:
            continue
        summaries.append(
            RubricSummary(
                name=name,
                version=active.version,
                description=active.description,
                criteria=len(active.criteria),
                versions=int(counts[name]),
                updated_at=active.created_at,
            )
        )
    return summaries


def write_version(
    *,
    session: Session,
    name: str,
    description: str,
    criteria: list[dict[str, Any]],
    prompts: dict[str, str] | None = None,
    created_by: str | None,
    source: str | None = None,
    status: str = APPROVED,
    penalty: str | None = None,
    project: str = DEFAULT,
) -> RubricVersionRow:
    """Insert the next version of ``name`` (1 for a new rubric of ``project``) in the caller's
    transaction.

    Two writers racing for the same number collide on the unique (name, version); the
    loser's insert does nothing and it takes the number after, so both versions land.
    """
    for _ in range(20):
        latest = session.scalar(
            select(func.max(RubricVersionRow.version)).where(
                RubricVersionRow.project == project, RubricVersionRow.name == name
            )
        )
        values = {
            "project": project,
            "name": name,
            "version": (latest or 0) + 1,
            "description": description,
            "criteria": criteria,
            "prompts": dict(prompts or {}),
            "penalty": penalty,
            "status": status,
            "created_at": utcnow(),
            "created_by": created_by,
            "source": source,
        }
        row_id = insert_or_ignore(session, RubricVersionRow, values, ["project", "name", "version"])
        if row_id is not None:
            row = session.get(RubricVersionRow, row_id)
            assert row is not None
            return row
    raise RuntimeError(f"could not write a new version of rubric {name!r}: too much contention")


def same_content(
    row: RubricVersionRow,
    criteria: list[dict[str, Any]],
    prompts: dict,
    penalty: str | None = None,
) -> bool:
    """True when criteria (in order), prompt overrides and penalty equal the stored version's."""
    return (
        _normal(row.criteria) == _normal(criteria)
        and (row.prompts or {}) == (prompts or {})
        and row.penalty == penalty
    )


def _normal(criteria: list[dict[str, Any]]) -> list[tuple[Any, ...]]:
    return [
        (c["id"], c["text"].strip(), float(c.get("weight", 1.0)), tuple(c.get("tags") or ()))
        for c in criteria
    ]


def import_rubric(
    *,
    session: Session,
    name: str,
    description: str,
    criteria: list[dict[str, Any]],
    prompts: dict[str, str],
    created_by: str | None,
    source: str | None,
    penalty: str | None = None,
    project: str = DEFAULT,
) -> tuple[RubricVersionRow, str]:
    """Load a rubric file's content: ``created`` (version 1), ``updated`` (the next version,
    when criteria or prompts differ from the active version) or ``unchanged``."""
    active = get_version(session=session, name=name, project=project)
    if active is not None and same_content(active, criteria, prompts, penalty):
        return active, "unchanged"
    row = write_version(
        session=session,
        name=name,
        description=description,
        criteria=criteria,
        prompts=prompts,
        created_by=created_by,
        source=source,
        penalty=penalty,
        project=project,
    )
    return row, "created" if row.version == 1 else "updated"
