"""``GET /v1/runs/{run_id}/report``: reward, hack rate by kind and agreement per step."""

from __future__ import annotations

from typing import Any

from fastapi import APIRouter

from judge_service.api.deps import AnyKey, SessionDep
from judge_service.errors import NotFound
from judge_service.review.run_report import run_report
from judge_service.storage.runs import run_samples

router = APIRouter(prefix="/v1", tags=["runs"])


@router.get("/runs/{run_id}/report")
def get_run_report(run_id: str, session: SessionDep, key: AnyKey) -> dict[str, Any]:
    """Per step: reward mean, hack rate (overall and by kind), agreement, groups with no
    advantage; and alarms when the reward rises while hacks rise or agreement falls."""
    samples = run_samples(session=session, run_id=run_id)
    if not samples:
        raise NotFound(f"no scored batches for run {run_id!r}", detail={"run_id": run_id})
    return run_report(run_id, samples)
