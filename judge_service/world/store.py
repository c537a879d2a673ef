"""Repository for worlds: create one, run it through its statuses, read it back.

Also the check of the forge jobs a world is built from, shared by the route and the CLI so
that both refuse the same jobs with the same words.
"""

from __future__ import annotations

import uuid
from typing import Any

from sqlalchemy import select
from sqlalchemy.orm import Session

from judge_service.core.storage.job_rows import finish_job_row, start_job_row
from judge_service.forge.tables import ForgeJobRow
from judge_service.world.tables import WorldRow


def job_problems(
    *, session: Session, job_ids: list[str], project: str, see: str | None
) -> list[str]:
    """Why each of ``job_ids`` cannot go into a world of ``project`` (empty: all can).

    ``see`` is what the caller sees (None: every project): a job it cannot see is unknown,
    as if it did not exist; one it sees in another project is named with that project."""
    problems = []
    for job_id in job_ids:
        job = session.get(ForgeJobRow, job_id, populate_existing=True)
        if job is None or (see is not None and job.project != see):
            problems.append(f"no forge job {job_id!r}")
        elif job.project != project:
            problems.append(
                f"forge job {job_id!r} is in project {job.project!r}, not {project!r}: "
                f"give ?project={job.project}"
            )
        elif job.kind != "traces":
            problems.append(f"forge job {job_id!r} is a {job.kind} job: a world needs traces")
        elif job.status != "done":
            problems.append(
                f"forge job {job_id!r} is {job.status}: build the world once it is done"
            )
    return problems


def create_world(
    *,
    session: Session,
    name: str | None,
    jobs: list[str],
    project: str,
    created_by: str | None,
    models: dict[str, Any] | None = None,
) -> WorldRow:
    world_id = uuid.uuid4().hex
    row = WorldRow(
        id=world_id,
        project=project,
        name=name or f"world-{world_id[:8]}",
        jobs=list(dict.fromkeys(jobs)),
        status="queued",
        created_by=created_by,
        models=models or None,
    )
    session.add(row)
    session.flush()
    return row


def get_world(*, session: Session, world_id: str) -> WorldRow | None:
    return session.get(WorldRow, world_id, populate_existing=True)


def list_worlds(
    *, session: Session, project: str | None, limit: int = 100, offset: int = 0
) -> list[WorldRow]:
    """Worlds, newest first; ``project`` keeps that project's (None: every project's)."""
    query = select(WorldRow)
    if project is not None:
        query = query.where(WorldRow.project == project)
    query = query.order_by(WorldRow.created_at.desc(), WorldRow.id).limit(limit).offset(offset)
    return list(session.scalars(query))


def start_world(*, session: Session, world_id: str) -> bool:
    """Mark a queued (or re-delivered running) build as running; False if it already ended."""
    return start_job_row(session=session, table=WorldRow, job_id=world_id)


def finish_world(
    *,
    session: Session,
    world_id: str,
    world: dict[str, Any] | None = None,
    counts: dict[str, Any] | None = None,
    report: dict[str, Any] | None = None,
    error: str | None = None,
) -> None:
    """Store the built world with its counts and report, or why the build failed."""
    finish_job_row(
        session=session,
        table=WorldRow,
        job_id=world_id,
        error=error,
        world=None if error else world,
        counts=counts or {},
        report=report or {},
    )


def world_json(*, session: Session, world_id: str) -> dict[str, Any] | None:
    """The stored world (the deferred column), or None while it is not built."""
    return session.scalar(select(WorldRow.world).where(WorldRow.id == world_id))


SUMMARY = ("id", "name", "status", "jobs", "created_at", "started_at", "finished_at", "error")


def world_fields(row: WorldRow, *, report: bool = True) -> dict[str, Any]:
    """A world as the API and the CLI show it: its summary, and (``report``) the report's
    path letters, tools and fidelity."""
    fields = {c: getattr(row, c) for c in SUMMARY}
    fields["counts"] = row.counts or {}
    fields["models"] = row.models or {}
    if report:
        stored = row.report or {}
        fields["path_letters"] = stored.get("path_letters", {})
        fields["tools"] = stored.get("tools", {})
        fields["fidelity"] = stored.get("fidelity")
    return fields
