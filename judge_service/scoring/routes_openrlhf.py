"""OpenRLHF's remote reward protocol: ``POST /get_reward``.

OpenRLHF sends no auth header, so the key may come as ``?api_key=``. Its protocol
has no mask: a masked sample gets 0.0 in ``rewards``, and ``extra_logs.valid``
(1.0 or 0.0 per sample) says which rewards were really computed.
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import Annotated

from fastapi import APIRouter, Query, Request
from pydantic import JsonValue

from judge_service import wire
from judge_service.core.api.body import ParsedBodyRoute
from judge_service.core.api.deps import ScopeDep, TrainerKey
from judge_service.core.api.worker_gate import WorkerAlive
from judge_service.core.errors import ShuttingDown, ValidationFailed
from judge_service.scoring.web_submission import submit_and_wait

router = APIRouter(tags=["openrlhf"], route_class=ParsedBodyRoute)


def completion_of(query: str, prompt: str | None) -> str:
    """The completion is the query minus its prompt prefix."""
    if prompt and query.startswith(prompt):
        return query[len(prompt) :]
    return query


@router.post("/get_reward", response_model=wire.OpenRLHFResponse)
async def get_reward(
    body: wire.OpenRLHFRequest,
    request: Request,
    key: TrainerKey,
    _alive: WorkerAlive,
    scope: ScopeDep,
    judges: Annotated[str | None, Query(description="Comma-separated judge specs")] = None,
    rubric: Annotated[wire.Identifier | None, Query()] = None,
    run_id: Annotated[wire.Identifier | None, Query()] = None,
) -> wire.OpenRLHFResponse:
    """Score ``query`` (prompt + completion) with ``labels`` as references."""
    prompts: Sequence[str | None] = body.prompts or [None] * len(body.query)
    labels: Sequence[JsonValue] = body.labels or [None] * len(body.query)
    if len(prompts) != len(body.query) or len(labels) != len(body.query):
        raise ValidationFailed(
            "query, prompts and labels must have the same length",
            detail={"field": "prompts" if len(prompts) != len(body.query) else "labels"},
        )
    first_index: dict[str, int] = {}
    for index, prompt in enumerate(prompts):
        if prompt is not None:
            first_index.setdefault(prompt, index)
    samples = [
        {
            "id": str(index),
            "group_id": f"p{first_index[prompt]}" if prompt is not None else None,
            "prompt": prompt if prompt is not None else query,
            "completion": completion_of(query, prompt),
            "reference": label if isinstance(label, str | int | float) else None,
        }
        for index, (query, prompt, label) in enumerate(
            zip(body.query, prompts, labels, strict=True)
        )
    ]
    request_body = wire.RewardRequest.model_validate(
        {
            "samples": samples,
            "judges": [j.strip() for j in judges.split(",") if j.strip()] if judges else None,
            "rubric": rubric,
            "run_id": run_id,
            "detail": "compact",  # OpenRLHF's answer carries no per-judge detail
        }
    )
    answer = await submit_and_wait(request_body, state=request.app.state, key=key, scope=scope)
    if answer.status != "done":  # the service stopped first; this protocol has no 202
        raise ShuttingDown(detail={"batch_id": answer.batch_id, "status": answer.status})
    rewards = [r.reward if r.valid and r.reward is not None else 0.0 for r in answer.results]
    return wire.OpenRLHFResponse(
        rewards=rewards,
        scores=rewards,
        extra_logs={
            "valid": [1.0 if r.valid else 0.0 for r in answer.results],
            "hack_score": [r.hack_score for r in answer.results],
            "raw_reward": [
                r.raw_reward if r.raw_reward is not None else 0.0 for r in answer.results
            ],
        },
        warnings=answer.warnings,
    )
