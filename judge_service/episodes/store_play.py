"""A step's transaction and an episode's reading, for the episode routes.

**A step reads its episode's row once.** With no model to ask first (the script is cached
and names no model the action needs), :func:`play` reads the row locked, plays the action
through the engine and stores the episode again (with the verdict, when it ends) over the
version it read, all in one transaction. When a model must answer first (the user's reply,
the simulator's answers) or the script is not cached yet, :func:`read_before` reads the row,
unlocked, before the models are asked (a lock is never held across their call), and that
read serves the step: :func:`play` stores over its version without reading again, so a step
of the same episode landing in between makes this one a 409, never a play of answers asked
for a state that is gone. The script and the world come from the process's cache
(:mod:`judge_service.world.world_cache`).
"""

from __future__ import annotations

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
from judge_service.episodes.store_inputs import EpisodeState
from judge_service.episodes.user import SimulatedUser
from judge_service.traces.conversation import content_text
from judge_service.world.simulate import Recorder, ToolSimulator
from judge_service.world.world import World


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
class Before:
    """What a step read before its models were asked (:func:`read_before`): the row and the
    script, and what the models must answer: the user's (the messages it answers and the
    seed) and the simulator's (the world, the calls nothing learned answers with the state
    each meets, and the seed); ``None`` for a model the step needs nothing of."""

    row: store.Step
    script: Script
    user: tuple[list[dict[str, Any]], int] | None = None
    calls: tuple[World, list[tuple[Any, Any]], int] | None = None


@dataclass(frozen=True)
class Move:
    """A step to play: the episode, the agent's action, the caller's scope, the answers of
    the models the step needs (asked before its transaction), and what was read for them."""

    episode_id: str
    body: ew.EpisodeStep
    scope: Scope
    user: SimulatedUser | None = None
    simulator: ToolSimulator | None = None
    before: Before | None = None


def play(state: EpisodeState, move: Move) -> Stepped:
    """One step in one transaction: the row read locked (unless :func:`read_before` read
    it), the action played, the episode stored (with the verdict when it ends)."""
    url = state.settings.database_url
    with store.one_writer(url), get_engine(url).begin() as connection:
        return played_in(connection, state, move)


class NotCached(Exception):
    """The step's world or script is not in the process's cache (``cached_only``)."""


def played_in(
    connection: Connection, state: EpisodeState, move: Move, *, cached_only: bool = False
) -> Stepped:
    """:func:`play`'s work in ``connection``'s transaction. ``cached_only``: raise
    :class:`NotCached` rather than read the world or the script (before writing anything)."""
    episode_id, read = move.episode_id, move.before
    cache, url = inputs.caches(state), state.settings.database_url
    if read is None:
        row = visible(store.read_step(connection, episode_id), move.scope, episode_id)
    else:
        row = read.row
    if row.status != "open":
        raise Conflict(
            f"episode {episode_id!r} is done: open another with a reset",
            detail={"id": episode_id, "status": row.status},
        )
    if cached_only:
        world = cache.worlds.peek(row.world_id)
        script = read.script if read is not None else cache.scripts.peek(episode_id)
        if world is None or script is None:
            raise NotCached
    else:
        world = inputs.loaded_world(cache, url, row.world_id)
        script = read.script if read is not None else _script(state, connection, episode_id)
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


def _script(state: EpisodeState, connection: Connection, episode_id: str) -> Script:
    """The episode's script: cached, else read on ``connection`` (and cached)."""
    return inputs.caches(state).scripts.get(
        episode_id, lambda: Script.model_validate(store.read_script(connection, episode_id))
    )


def detail(state: EpisodeState, episode_id: str, scope: Scope) -> dict[str, Any]:
    url = state.settings.database_url
    with get_engine(url).connect() as connection:
        row = visible(store.read_episode(connection, episode_id), scope, episode_id)
        script = _script(state, connection, episode_id)
    episode = Episode.model_validate(row.episode)
    world = inputs.loaded_world(inputs.caches(state), url, row.world_id)
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


def may_need_models(state: EpisodeState, episode_id: str) -> bool:
    """Whether a step may need a model's answer first: the episode's script is not cached
    (unknown until read), or it names a user model or a simulator. No I/O, so the event loop
    asks it: a step of a cached script without models then hops to a thread only to play."""
    cached = inputs.caches(state).scripts.peek(episode_id)
    return cached is None or cached.user_model is not None or cached.simulator is not None


def read_before(state: EpisodeState, episode_id: str, body: ew.EpisodeStep, scope: Scope) -> Before:
    """The step's one read when :func:`may_need_models`: the row (not locked) and the
    script, and what the models must answer: for a user model, when ``body`` goes to the
    user, the messages it answers (the action included); for a simulator, when ``body``
    calls tools, the calls nothing learned answers, found by a dry run of the action
    (outside any transaction). A done episode asks nothing (its step is a 409)."""
    with get_engine(state.settings.database_url).connect() as connection:
        row = visible(store.read_step(connection, episode_id, lock=False), scope, episode_id)
        script = _script(state, connection, episode_id)
    if row.status != "open":
        return Before(row, script)
    action, episode = body.action, Episode.model_validate(row.episode)
    user = calls = None
    if script.user_model is not None and isinstance(action, dict) and to_the_user(action, body.end):
        said = {"role": "assistant", "content": content_text(action.get("content"))}
        user = ([*episode.messages, said], episode.seed)
    if script.simulator is not None and isinstance(action, dict) and action.get("tool_calls"):
        world = inputs.loaded_world(inputs.caches(state), state.settings.database_url, row.world_id)
        recorder = Recorder()
        act(world, script, episode, action, end=body.end, simulator=recorder)
        calls = (world, recorder.asked, episode.seed) if recorder.asked else None
    return Before(row, script, user, calls)
