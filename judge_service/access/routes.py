"""``/v1/keys``: an admin creates a key (the plain key is in that answer only), lists its
project's keys, and revokes one."""

from __future__ import annotations

from fastapi import APIRouter, Request

from judge_service import wire
from judge_service.core.api.deps import AdminKey, ScopeDep, SessionDep
from judge_service.core.api.error_docs import errors
from judge_service.core.errors import Forbidden, NotFound, ValidationFailed
from judge_service.core.projects import ALL, DEFAULT
from judge_service.core.storage import audit
from judge_service.core.storage.keys import create_key, list_keys, revoke_key
from judge_service.core.storage.tables import ApiKeyRow
from judge_service.rubrics.store_seeds import seed_project

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
            f"project: an admin key of project {key.project!r} makes keys of that project "
            "only; keys of other projects need an all-projects admin key (project '*')",
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
    return wire.KeyCreated(id=row.id, role=body.role, project=project, key=plain)


def key_info(row: ApiKeyRow) -> wire.KeyInfo:
    return wire.KeyInfo.model_validate(row, from_attributes=True)


@router.get("/keys", response_model=wire.KeyList)
def list_api_keys(session: SessionDep, key: AdminKey, scope: ScopeDep):
    """The keys of the admin's project (an all-projects admin: every key, or ``?project=``'s),
    oldest first, revoked ones included; never the keys themselves."""
    return wire.KeyList(keys=[key_info(r) for r in list_keys(session=session, project=scope.see)])


@router.delete("/keys/{key_id}", response_model=wire.KeyInfo, responses=errors(404))
def revoke_api_key(
    key_id: str, request: Request, session: SessionDep, key: AdminKey, scope: ScopeDep
):
    """Revoke a key of the admin's project: it is refused from now on (by every other API
    process within ``JS_KEY_CACHE_S``), and so are the web sessions signed in with it.
    Revoking a revoked key changes nothing. A key of another project is a 404."""
    row = session.get(ApiKeyRow, key_id)
    if row is None or not scope.owns(row.project):
        raise NotFound(f"no key {key_id!r}", detail={"id": key_id})
    _, revoked = revoke_key(session=session, key_id=key_id)
    if revoked:
        audit.record(
            session=session,
            actor=key.id,
            action="key.revoke",
            target=row.id,
            detail={"role": row.role, "project": row.project},
        )
    session.commit()
    request.app.state.checked_keys.forget(row.id)
    return key_info(row)
