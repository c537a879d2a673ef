"""Episodes over a world, OpenEnv-style: reset, step and state.

A reset reads the world, the forge task and its runs' traces once, builds the task's script
and stores it with the episode. A step then reads only the episode's row, once (the script
and the world are kept loaded in the process: :mod:`judge_service.world.world_cache`; before
the models it needs are asked, when it needs any: :mod:`judge_service.episodes.store_play`),
plays the action through the engine and stores the episode again, in one transaction, so a
restart of ``serve`` loses nothing. A malformed action is the engine's to answer (a tool
error in the observation). When the episode ends, its verdict is stored with it first, then
it goes through the normal reward path as one sample (:mod:`judge_service.episodes.web_reward`).

A step's budget is about 2 ms of the service's CPU (``bench/episodes.py``): arguments bound
by a plan (``api.lean``), played at once on SQLite when nothing makes it wait (``play_now``;
else on a thread), statements on the DBAPI cursor, the answer written by pydantic-core.
"""

from __future__ import annotations

import logging
from typing import Any

import pydantic_core
from fastapi import APIRouter, FastAPI, Request
from fastapi.responses import Response

from judge_service import wire
from judge_service.core.api.body import ParsedBodyRoute
from judge_service.core.api.deps import SessionDep, TrainerInScope
from judge_service.core.api.error_docs import errors
from judge_service.core.api.lean import LeanRoute
from judge_service.core.api.threads import on_thread
from judge_service.core.errors import JudgeServiceError, ValidationFailed
from judge_service.core.storage.db import get_engine
from judge_service.core.storage.tables import ApiKeyRow
from judge_service.core.storage.types import ascii_json
from judge_service.episodes import store
from judge_service.episodes import store_inputs as inputs
from judge_service.episodes import wire as ew
from judge_service.episodes.client_models import check_model
from judge_service.episodes.client_tools import simulate_calls
from judge_service.episodes.client_user import model_user_reply
from judge_service.episodes.episode import script_for, start
from judge_service.episodes.sources import sources_of
from judge_service.episodes.store_play import (
    Before,
    Move,
    Stepped,
    detail,
    may_need_models,
    play,
    read_before,
)
from judge_service.episodes.store_play_now import play_now
from judge_service.episodes.user import GivenUser
from judge_service.episodes.web_reward import EpisodesState, score_episode
from judge_service.judging.endpoints import check_spec
from judge_service.world.simulate import GivenAnswers

log = logging.getLogger(__name__)
router = APIRouter(prefix="/v1", tags=["episodes"], route_class=ParsedBodyRoute)


class TooManyEpisodes(JudgeServiceError):
    """The key holds ``JS_EPISODES_OPEN_PER_KEY`` open episodes already."""

    status_code = 429
    code = "too_many_episodes"


TOO_MANY: dict[int | str, dict[str, Any]] = {
    429: {
        "model": wire.ErrorBody,
        "description": "The key holds JS_EPISODES_OPEN_PER_KEY open episodes: end one first",
    }
}


def json_answer(payload: Any, status: int = 200) -> Response:
    """JSON straight to bytes by pydantic-core; ASCII-escaped by ``json`` when text holds a
    lone surrogate (a traced turn can: JSONL uploads are read by ``json``), which it refuses."""
    try:
        body = pydantic_core.to_json(payload)
    except pydantic_core.PydanticSerializationError:
        body = ascii_json(payload).encode()
    return Response(body, status_code=status, media_type="application/json")


@router.post(
    "/worlds/{world_id}/episodes",
    response_model=ew.EpisodeStarted,
    status_code=201,
    responses={**errors(404, 409), **TOO_MANY},
)
def reset(
    world_id: str,
    body: ew.EpisodeReset,
    request: Request,
    session: SessionDep,
    caller: TrainerInScope,
):
    """Open an episode of a forge trace task in a done world: the observation is the traced
    system prompt and the user's first turn, with the tools the traces offered. 429 when the
    key holds ``JS_EPISODES_OPEN_PER_KEY`` open episodes."""
    state, key, scope = request.app.state, caller.key, caller.scope
    cache = inputs.caches(state)
    row = inputs.done_world(session, scope, world_id)
    world = inputs.loaded_world(cache, state.settings.database_url, world_id)
    task = inputs.trace_task(session, row, world, body.task_id, body.reference)
    traces = inputs.job_traces(cache, session, row)
    script = script_for(inputs.task_fields(task, body.reference), traces, body.seed)
    chosen = inputs.world_models(cache, state.settings.database_url, world_id)
    for field, given in (("user_model", body.user_model), ("simulator", body.simulator)):
        if given is not None:  # the reset's own, else the world's
            spec = given.model_dump(exclude_none=True)
            chosen = {**chosen, field: check_spec(spec, settings=state.settings, field=field)}
        if chosen.get(field) is not None:
            try:
                check_model(chosen[field], state.settings, field)
            except ValueError as exc:
                raise ValidationFailed(str(exc), detail={"field": field}) from exc
    script.user_model, script.simulator = chosen.get("user_model"), chosen.get("simulator")
    episode, observation = start(world, script, seed=body.seed, max_turns=body.max_turns)
    limit = state.settings.episodes_open_per_key
    with store.one_writer(state.settings.database_url):  # counted and added at once
        if store.count_open(session=session, key_id=key.id) >= limit:
            raise TooManyEpisodes(
                f"this key holds {limit} open episodes (JS_EPISODES_OPEN_PER_KEY): end one "
                'with `POST /v1/episodes/{id}/step {"action": {}, "end": true}` first',
                detail={"limit": limit},
            )
        created = store.create_episode(
            session=session,
            world_id=world_id,
            task_id=task.id,
            project=row.project,
            key_id=key.id,
            run_id=body.run_id,
            step=body.step,
            seed=body.seed,
            script=script.model_dump(mode="json"),
            episode=episode.model_dump(mode="json"),
        )
        session.commit()
    cache.scripts.get(created.id, lambda: script)
    sources = sources_of(observation, [], model_user=script.user_model is not None)
    shown = {"messages": observation, "tools": script.tools, "sources": sources}
    return json_answer({"episode_id": created.id, "observation": shown}, 201)


def reward_of(result: dict[str, Any]) -> float | None:
    """The scored sample's reward (the audit's penalty included); ``None`` when it is masked
    or was not scored (``result["error"]`` says why): a step's reward is its sample's."""
    sample = result.get("sample")
    if isinstance(sample, dict) and sample.get("valid") and sample.get("reward") is not None:
        return float(sample["reward"])
    return None


async def step(episode_id: str, body: ew.EpisodeStep, request: Request, caller: TrainerInScope):
    """Play the agent's assistant message: tool calls are answered by the world, text by
    the simulated user. Once done (the user or the agent ended it, or ``max_turns``), the
    answer carries the end-state verdict and the scored sample, and ``reward``."""
    state: EpisodesState = request.app.state
    scope, before = caller.scope, None
    user, simulator = None, None  # played at once when it need not wait (``play_now``)
    if may_need_models(state, episode_id):  # the step's one read, then the models
        before = await on_thread(read_before, state, episode_id, body, scope)
        user, simulator = await model_answers(state, episode_id, before)
    move = Move(episode_id, body, scope, user, simulator, before)
    if (played := play_now(state, move)) is None:  # else on a thread
        played = await on_thread(play, state, move)
    observation = {"messages": played.observation, "sources": played.sources or []}
    if played.verdict is None:  # checked against ew.StepAnswer by the lean route
        return {"observation": observation, "done": False, "reward": None}
    result = await scored(request, caller.key, played)
    return {"observation": observation, "done": True, "reward": reward_of(result), "result": result}


async def model_answers(
    state: EpisodesState, episode_id: str, before: Before
) -> tuple[GivenUser | None, GivenAnswers | None]:
    """The user model's reply and the simulator's answers the step needs, each asked outside
    the step's transaction (``None`` for what it needs none of)."""
    user: GivenUser | None = None
    simulator: GivenAnswers | None = None
    settings, script = state.settings, before.script
    if before.user is not None:  # a model plays the user
        messages, seed = before.user
        user = GivenUser(*await model_user_reply(settings, script, messages, seed, episode_id))
    if before.calls is not None:  # (e): the model's answers to the calls nothing learned answers
        world, calls, seed = before.calls
        simulator = GivenAnswers(await simulate_calls(settings, world, script, calls, seed))
    return user, simulator


async def scored(request: Request, key: ApiKeyRow, played: Stepped) -> dict[str, Any]:
    """The ended episode through the reward path, its result stored. A sample that could
    not be submitted (no worker, the queue down) leaves the verdict standing, with why."""
    row = played.row
    result: dict[str, Any] = {"verdict": played.verdict, "sample": None}
    try:
        result["sample"] = await score_episode(
            request,
            key=key,
            episode_id=row.id,
            messages=played.episode.messages,
            verdict=played.verdict or {},
            run_id=row.run_id,
            step=row.step,
            task_id=row.task_id,
            project=row.project,
        )
    except JudgeServiceError as exc:
        log.warning("episode %s: its sample was not scored: %s", row.id, exc.message)
        result["error"] = {"code": exc.code, "message": exc.message}

    def save() -> None:
        url = request.app.state.settings.database_url
        with store.one_writer(url), get_engine(url).begin() as connection:
            store.store_result(connection, episode_id=row.id, result=result)

    await on_thread(save)
    return result


async def get_episode(episode_id: str, request: Request, caller: TrainerInScope):
    """An episode: its messages, the entities its writes changed (as they are now), the
    answer path of every tool answer, its status and, once done, its result."""
    return await on_thread(detail, request.app.state, episode_id, caller.scope)


def attach(app: FastAPI, settings: object) -> None:
    """An episode's step and read on the app's own router, before any router is included:
    FastAPI matches an included router's route through a wrapper that matches it twice and
    tries every router before it (~1/10 of a step's CPU). Arguments bound by ``api.lean``,
    which checks each answer against the route's model."""
    for path, endpoint, method, model, codes in (
        ("/v1/episodes/{episode_id}/step", step, "POST", ew.StepAnswer, (404, 409)),
        ("/v1/episodes/{episode_id}", get_episode, "GET", ew.EpisodeDetail, (404,)),
    ):
        app.router.add_api_route(
            path,
            endpoint,
            methods=[method],
            response_model=model,
            responses=errors(*codes),
            tags=["episodes"],
            route_class_override=LeanRoute,
        )
