"""``POST /v1/keys``: an admin creates a key; the plain key is in this answer only."""

from __future__ import annotations

from fastapi import APIRouter

from judge_service import wire
from judge_service.api.deps import AdminKey, SessionDep
from judge_service.storage import audit
from judge_service.storage.keys import create_key

router = APIRouter(prefix="/v1", tags=["keys"])


@router.post("/keys", response_model=wire.KeyCreated, status_code=201)
def create_api_key(body: wire.KeyCreateRequest, session: SessionDep, key: AdminKey):
    row, plain = create_key(session=session, role=body.role, name=body.name)
    audit.record(
        session=session,
        actor=key.id,
        action="key.create",
        target=row.id,
        detail={"role": body.role},
    )
    session.commit()
    return wire.KeyCreated(id=row.id, role=body.role, key=plain)  # type: ignore[arg-type]
