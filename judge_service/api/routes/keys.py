"""``POST /v1/keys``: an admin creates a key; the plain key is in this answer only."""

from __future__ import annotations

from fastapi import APIRouter

from judge_service import wire
from judge_service.api.deps import AdminKey, SessionDep
from judge_service.errors import Forbidden, ValidationFailed
from judge_service.projects import ALL, DEFAULT
from judge_service.rubric_import import seed_project
from judge_service.storage import audit
from judge_service.storage.keys import create_key

router = APIRouter(prefix="/v1", tags=["keys"])


@router.post("/keys", response_model=wire.KeyCreated, status_code=201)
def create_api_key(body: wire.KeyCreateRequest, session: SessionDep, key: AdminKey):
    """A key of ``project``: an admin of one project makes keys of that project only; an
    all-projects admin makes keys of any project, or all-projects admin keys (``*``)."""
    project = body.project or (DEFAULT if key.project == ALL else key.project)
    if project == ALL and body.role != "admin":
        raise ValidationFailed(
            "project: '*' (every project) is for admin keys only", detail={"field": "project"}
        )
    if key.project != ALL and project != key.project:
        raise Forbidden(
            f"an admin key of project {key.project!r} makes keys of that project only",
            detail={"field": "project", "project": key.project},
        )
    row, plain = create_key(session=session, role=body.role, name=body.name, project=project)
    audit.record(
        session=session,
        actor=key.id,
        action="key.create",
        target=row.id,
        detail={"role": body.role, "project": project},
    )
    if project != ALL:
        seed_project(session=session, project=project, actor=key.id)
    session.commit()
    return wire.KeyCreated(id=row.id, role=body.role, project=project, key=plain)  # type: ignore[arg-type]
