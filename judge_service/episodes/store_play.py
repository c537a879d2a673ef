"""A step's transaction and an episode's reading, for the episode routes.

A step reads the episode's row with a lock, plays the action through the engine, and stores
the episode again (with the verdict, when it ends) over the version it read, all in one
transaction; the script and the world come from the process's cache
(:mod:`judge_service.world.world_cache`), so a step reads one row and writes it once.
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass
from typing import Any, TypeVar

from sqlalchemy import Connection

from judge_service.core.errors import Conflict, NotFound
from judge_service.core.projects import Scope
from judge_service.core.storage.db import get_engine
from judge_service.episodes import store
from judge_service.episodes import store_inputs as inputs
from judge_service.episodes import wire as ew
from judge_service.episodes.episode import Episode, Script, act, entities_of, finish
from judge_service.episodes.sources import sources_of
from judge_service.episodes.user import SimulatedUser
from judge_service.traces.conversation import content_text
from judge_service.world.simulate import Recorder, ToolSimulator


@dataclass
class Stepped:
    """What a step's transaction left: the observation (with each message's source) and,
    once done, what to score."""

    observation: list[dict[str, Any]]
    episode: Episode
    row: store.Step
    verdict: dict[str, Any] | None = None
    sources: list[dict[str, Any]] | None = None


#: An episode's row as a step or a read has it.
RowT = TypeVar("RowT", store.Step, store.Read)


def visible(row: RowT | None, scope: Scope, episode_id: str) -> RowT:
    if row is None or not scope.owns(row.project):
        raise NotFound(f"no episode {episode_id!r}", detail={"id": episode_id})
    return row


@dataclass(frozen=True)
class Move:
    """A step to play: the episode, the agent's action, the caller's scope, and the answers
    of the models the step needs (asked before its transaction)."""

    episode_id: str
    body: ew.EpisodeStep
    scope: Scope
    user: SimulatedUser | None = None
    simulator: ToolSimulator | None = None


def play(state: Any, move: Move) -> Stepped:
    """One step in one transaction: the row locked, the action played, the episode stored
    (with the verdict when it ends)."""
    url = state.settings.database_url
    with store.one_writer(url), get_engine(url).begin() as connection:
        return played_in(connection, state, move)


class NotCached(Exception):
    """The step's world or script is not in the process's cache (``cached_only``)."""


def played_in(
    connection: Connection, state: Any, move: Move, *, cached_only: bool = False
) -> Stepped:
    """:func:`play`'s work in ``connection``'s transaction. ``cached_only``: raise
    :class:`NotCached` rather than read the world or the script (before writing anything)."""
    episode_id = move.episode_id
    cache, url = inputs.caches(state), state.settings.database_url
    row = visible(store.read_step(connection, episode_id), move.scope, episode_id)
    if row.status != "open":
        raise Conflict(
            f"episode {episode_id!r} is done: open another with a reset",
            detail={"id": episode_id, "status": row.status},
        )
    if cached_only:
        world, script = cache.worlds.peek(row.world_id), cache.scripts.peek(episode_id)
        if world is None or script is None:
            raise NotCached
    else:
        world = inputs.loaded_world(cache, url, row.world_id)
        script = cache.scripts.get(
            episode_id, lambda: Script.model_validate(store.read_script(connection, episode_id))
        )
    before = Episode.model_validate(row.episode)
    episode, observation = act(
        world,
        script,
        before,
        move.body.action,
        end=move.body.end,
        user=move.user,
        simulator=move.simulator,
    )
    verdict = finish(world, script, episode).model_dump(mode="json") if episode.done else None
    stored = store.save_step(
        connection,
        episode_id=episode_id,
        version=row.version,
        episode=episode,
        done=episode.done,
        result=None if verdict is None else {"verdict": verdict, "sample": None},
    )
    if not stored:
        raise Conflict(
            f"episode {episode_id!r} took another step at the same time: read it "
            "(GET /v1/episodes/{id}) and step again",
            detail={"id": episode_id},
        )
    model_user = script.user_model is not None
    everyone = sources_of(episode.messages, episode.answers, model_user=model_user)
    sources = everyone[len(everyone) - len(observation) :]  # the observation ends the messages
    return Stepped(observation, episode, row, verdict, sources)


def detail(state: Any, episode_id: str, scope: Scope) -> dict[str, Any]:
    url = state.settings.database_url
    with get_engine(url).connect() as connection:
        row = visible(store.read_episode(connection, episode_id), scope, episode_id)
        cache = inputs.caches(state)
        script = cache.scripts.get(
            episode_id, lambda: Script.model_validate(store.read_script(connection, episode_id))
        )
    episode = Episode.model_validate(row.episode)
    world = inputs.loaded_world(cache, url, row.world_id)
    model_user = script.user_model is not None
    return {
        "id": row.id,
        "world_id": row.world_id,
        "task_id": row.task_id,
        "status": row.status,
        "run_id": row.run_id,
        "step": row.step,
        "seed": row.seed,
        "turns": episode.turns,
        "max_turns": episode.max_turns,
        "ended_by": episode.ended_by,
        "messages": episode.messages,
        "sources": sources_of(episode.messages, episode.answers, model_user=model_user),
        "touched": entities_of(world, episode, episode.touched),
        "answers": episode.answers,
        "result": row.result,
        "created_at": row.created_at.isoformat(),
        "updated_at": row.updated_at.isoformat(),
    }


def to_the_user(action: Any, end: bool) -> bool:
    """Whether the engine will hand ``action`` to the user: text, no tool calls, not ending."""
    if end or not isinstance(action, dict) or action.get("tool_calls"):
        return False
    return bool(content_text(action.get("content")).strip())


def may_need_models(state: Any, episode_id: str) -> bool:
    """Whether a step may need a model's answer first: the episode's script is not cached
    (unknown until read), or it names a user model or a simulator. No I/O, so the event loop
    asks it: a step of a cached script without models then hops to a thread only to play."""
    cached = inputs.caches(state).scripts.peek(episode_id)
    return cached is None or cached.user_model is not None or cached.simulator is not None


def _with_model(
    state: Any, episode_id: str, scope: Scope, model_of: Callable[[Script], dict[str, Any] | None]
) -> tuple[store.Read, Script] | None:
    """The open episode's row and script when its script names the model ``model_of`` reads
    (its ``user_model`` or its ``simulator``); else ``None``. A script already cached without
    one costs no read, so a step without models pays nothing for this."""
    cache, url = inputs.caches(state), state.settings.database_url
    cached = cache.scripts.peek(episode_id)
    if cached is not None and model_of(cached) is None:
        return None
    with get_engine(url).connect() as connection:
        row = visible(store.read_episode(connection, episode_id), scope, episode_id)
        script = cache.scripts.get(
            episode_id, lambda: Script.model_validate(store.read_script(connection, episode_id))
        )
    if model_of(script) is None or row.status != "open":
        return None
    return row, script


def user_turn_inputs(
    state: Any, episode_id: str, body: ew.EpisodeStep, scope: Scope
) -> tuple[Script, list[dict[str, Any]], int] | None:
    """For an episode whose user a model plays, when ``body`` goes to the user: the script,
    the messages the user will answer (the action included) and the seed; else ``None``."""
    if not to_the_user(body.action, body.end):
        return None
    found = _with_model(state, episode_id, scope, lambda s: s.user_model)
    if found is None:
        return None
    row, script = found
    episode = Episode.model_validate(row.episode)
    action = {"role": "assistant", "content": content_text(body.action.get("content"))}
    return script, [*episode.messages, action], episode.seed


def calls_to_simulate(
    state: Any, episode_id: str, body: ew.EpisodeStep, scope: Scope
) -> tuple[Any, Script, list[tuple[Any, Any]], int] | None:
    """For an episode with a simulator model, when ``body`` calls tools: a dry run of the
    action (outside any transaction) finds the calls nothing learned answers, each with the
    state it meets: ``(world, script, those calls, seed)``; else ``None``."""
    action = body.action
    if not isinstance(action, dict) or not action.get("tool_calls"):
        return None
    found = _with_model(state, episode_id, scope, lambda s: s.simulator)
    if found is None:
        return None
    row, script = found
    world = inputs.loaded_world(inputs.caches(state), state.settings.database_url, row.world_id)
    episode = Episode.model_validate(row.episode)
    recorder = Recorder()
    act(world, script, episode, action, end=body.end, simulator=recorder)
    return (world, script, recorder.asked, episode.seed) if recorder.asked else None
