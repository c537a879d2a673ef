"""``GET /v1/runs/{run_id}/report`` (reward, hack rate by kind and agreement per step) and
``GET /v1/runs/{run_id}/tasks`` (difficulty tiers per task)."""

from __future__ import annotations

from collections import Counter
from typing import Any

from fastapi import APIRouter

from judge_service.core.api.deps import AnyKey, ScopeDep, SessionDep
from judge_service.core.api.error_docs import errors
from judge_service.core.errors import NotFound
from judge_service.forge import wire as forge_wire
from judge_service.forge.store_runs import apply_run_tiers
from judge_service.forge.tiers import TIERS
from judge_service.runs.report import run_report
from judge_service.runs.store import run_samples

router = APIRouter(prefix="/v1", tags=["runs"])


@router.get("/runs/{run_id}/report", responses=errors(404))
def get_run_report(
    run_id: str, session: SessionDep, key: AnyKey, scope: ScopeDep
) -> dict[str, Any]:
    """Per step: reward mean, hack rate (overall and by kind), agreement, groups with no
    advantage; and alarms when the reward rises while hacks rise or agreement falls. A run
    is the batches of the caller's project with this ``run_id``."""
    samples = run_samples(session=session, run_id=run_id, project=scope.see)
    if not samples:
        raise NotFound(f"no scored batches for run {run_id!r}", detail={"run_id": run_id})
    return run_report(run_id, samples)


@router.get("/runs/{run_id}/tasks", response_model=forge_wire.RunTasks, responses=errors(404))
def get_run_tasks(
    run_id: str, session: SessionDep, key: AnyKey, scope: ScopeDep
) -> forge_wire.RunTasks:
    """Per task (``metadata.task_id``, else ``group_id``): steps, pass rate, mean reward std
    and tier. The tiers are stored on the forged tasks the run trained on, unless a later
    run's tiers are already there."""
    stats, shares, stored = apply_run_tiers(session=session, run_id=run_id, project=scope.see)
    if not stats:
        raise NotFound(
            f"no scored samples with a task for run {run_id!r}", detail={"run_id": run_id}
        )
    session.commit()
    counts = Counter(s.tier for s in stats if s.tier is not None)
    return forge_wire.RunTasks(
        run_id=run_id,
        tasks=[forge_wire.RunTask(**s.as_dict(), stored=s.task in stored) for s in stats],
        tiers={tier: counts.get(tier, 0) for tier in TIERS},
        steps=shares,
    )
