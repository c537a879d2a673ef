"""Rubrics: create (admin), list and read versions (any key).

Rubric names are per project: every route works in the caller's project (``scope.home``:
an all-projects admin names one with ``?project=``, else ``default``)."""

from __future__ import annotations

from typing import Annotated

from fastapi import APIRouter, Query

from judge_service import wire
from judge_service.core.api.deps import AdminKey, AnyKey, ScopeDep, SessionDep
from judge_service.core.api.error_docs import errors
from judge_service.core.errors import Conflict, NotFound
from judge_service.core.storage import audit
from judge_service.rubrics import store as rubrics
from judge_service.rubrics import wire as wire_rubrics
from judge_service.rubrics.tables import RubricVersionRow

router = APIRouter(prefix="/v1", tags=["rubrics"])


def rubric_out(row: RubricVersionRow, active: int | None) -> wire_rubrics.RubricOut:
    return wire_rubrics.RubricOut(
        name=row.name,
        version=row.version,
        ref=row.ref,
        active=row.version == active,
        status=row.status,
        description=row.description,
        criteria=[wire_rubrics.CriterionOut.model_validate(c) for c in row.criteria],
        prompts=row.prompts or {},
        penalty=row.penalty,
        created_at=row.created_at,
        created_by=row.created_by,
        source=row.source,
    )


def _active(session: SessionDep, name: str, project: str) -> RubricVersionRow:
    row = rubrics.get_version(session=session, name=name, project=project)
    if row is None:
        raise NotFound(f"no rubric {name!r}", detail={"rubric": name})
    return row


@router.post(
    "/rubrics", response_model=wire_rubrics.RubricOut, status_code=201, responses=errors(409)
)
def create_rubric(
    body: wire_rubrics.RubricCreate, session: SessionDep, key: AdminKey, scope: ScopeDep
):
    """Version 1 of a new rubric, approved and active at once; 409 if the name exists in
    the project."""
    if rubrics.exists(session=session, name=body.name, project=scope.home):
        raise Conflict(
            f"rubric {body.name!r} already exists; new versions come from review or import",
            detail={"rubric": body.name},
        )
    spec = body.model_dump(mode="json")
    row = rubrics.write_version(
        session=session,
        name=body.name,
        description=body.description,
        criteria=spec["criteria"],
        prompts=spec["prompts"],
        penalty=spec.get("penalty"),
        created_by=key.id,
        source="api",
        project=scope.home,
    )
    if row.version != 1:  # a concurrent create of the same name won the race
        session.rollback()
        raise Conflict(f"rubric {body.name!r} already exists", detail={"rubric": body.name})
    audit.record(
        session=session,
        actor=key.id,
        action="rubric.create",
        target=row.ref,
        detail={"project": scope.home},
    )
    session.commit()
    return rubric_out(row, row.version)


@router.get("/rubrics", response_model=wire_rubrics.RubricList)
def list_rubrics(session: SessionDep, key: AnyKey, scope: ScopeDep):
    """Every rubric of the project with its active version."""
    return wire_rubrics.RubricList(
        rubrics=[
            wire_rubrics.RubricSummary(ref=f"{s.name}@{s.version}", **s.__dict__)
            for s in rubrics.list_rubrics(session=session, project=scope.home)
        ]
    )


@router.get("/rubrics/{name}", response_model=wire_rubrics.RubricOut, responses=errors(404))
def get_rubric(
    name: str,
    session: SessionDep,
    key: AnyKey,
    scope: ScopeDep,
    version: Annotated[
        wire.DbInt | None, Query(ge=1, description="A version; default: active")
    ] = None,
):
    """The active version (latest approved), or version ``N`` with ``?version=N``."""
    active = _active(session, name, scope.home)
    row = (
        active
        if version is None
        else rubrics.get_version(session=session, name=name, version=version, project=scope.home)
    )
    if row is None:
        raise NotFound(
            f"rubric {name!r} has no version {version} (latest: {active.version})",
            detail={"rubric": name, "version": version, "active": active.version},
        )
    return rubric_out(row, active.version)


@router.get(
    "/rubrics/{name}/versions", response_model=wire_rubrics.RubricVersions, responses=errors(404)
)
def list_versions(name: str, session: SessionDep, key: AnyKey, scope: ScopeDep):
    """Every version of a rubric, oldest first."""
    active = _active(session, name, scope.home)
    rows = rubrics.list_versions(session=session, name=name, project=scope.home)
    return wire_rubrics.RubricVersions(versions=[rubric_out(r, active.version) for r in rows])
