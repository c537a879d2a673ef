"""``POST /v1/worlds/{id}/verify``: a trajectory recorded elsewhere, checked without a model.

Its tool calls are replayed through the world in order from the task's initial state, and the
end state is compared with the task's reference: the same verdict, with its diff, that an
episode of the task ends with (trainer, reviewer or admin).
"""

from __future__ import annotations

from fastapi import APIRouter, Request

from judge_service.core.api.body import ParsedBodyRoute
from judge_service.core.api.deps import AnyKey, ScopeDep, SessionDep
from judge_service.core.api.error_docs import errors
from judge_service.episodes import store_inputs as inputs
from judge_service.episodes import wire as ew
from judge_service.episodes.script import even_candidates
from judge_service.world.verify import verify

router = APIRouter(prefix="/v1", tags=["episodes"], route_class=ParsedBodyRoute)


@router.post(
    "/worlds/{world_id}/verify", response_model=ew.VerifyAnswer, responses=errors(404, 409)
)
def verify_trajectory(
    world_id: str,
    body: ew.VerifyRequest,
    request: Request,
    session: SessionDep,
    key: AnyKey,
    scope: ScopeDep,
):
    """Replay a recorded trajectory's tool calls (OpenAI messages) through the world from the
    task's initial state, and give the end-state verdict with its diff, and per call the tool,
    the answer path and whether it was an error."""
    state = request.app.state
    row = inputs.done_world(session, scope, world_id)
    world = inputs.loaded_world(inputs.caches(state), state.settings.database_url, world_id)
    task = inputs.trace_task(session, row, world, body.task_id)
    start = world.task_state(inputs.start_traces(task))
    also = even_candidates(inputs.task_fields(task))
    verdict, calls = verify(world, start, body.messages, task.end_state, also)
    verdict.provisional = task.end_state_source == "proposed"
    return ew.VerifyAnswer(verdict=verdict.model_dump(mode="json"), calls=calls)
