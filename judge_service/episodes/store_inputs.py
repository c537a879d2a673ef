"""What an episode is played from, read for reset and verify: the done world (loaded once
per process), the forge task to play, and the traces of the world's forge jobs.

Shared by the episode routes and verify, so both refuse the same worlds and tasks with the
same words: a world the caller cannot see is 404, one not built yet 409; a task that is not
a trace task of the world's jobs, or has no reference end state, is 422 naming ``task_id``.
"""

from __future__ import annotations

from typing import Any, Protocol

from sqlalchemy import select
from sqlalchemy.orm import Session

from judge_service.core.errors import Conflict, NotFound, ValidationFailed
from judge_service.core.projects import Scope
from judge_service.core.settings import Settings
from judge_service.core.storage.db import session_scope
from judge_service.forge import store as forge_store
from judge_service.forge.tables import ForgeJobRow, ForgeTaskRow
from judge_service.traces.conversation import Trace, parse_traces
from judge_service.world.tables import WorldRow
from judge_service.world.world import World
from judge_service.world.world_cache import WorldCache


class EpisodeState(Protocol):
    """What the episodes' storage reads of the app's ``state``: the settings and the cache
    of loaded worlds and scripts (made on first use: :func:`caches`). The routes' whole
    state is ``web_reward.EpisodesState``."""

    settings: Settings
    world_cache: WorldCache


def caches(state: EpisodeState) -> WorldCache:
    """The app's cache of loaded worlds (``app.state``), made on first use."""
    cache = getattr(state, "world_cache", None)
    if cache is None:
        cache = state.world_cache = WorldCache()
    return cache


def loaded_world(cache: WorldCache, url: str, world_id: str) -> World:
    """The done world ``world_id``, parsed once per process (it never changes)."""

    def load() -> World:
        with session_scope(url) as session:
            data = session.scalar(select(WorldRow.world).where(WorldRow.id == world_id))
        if data is None:
            raise NotFound(f"world {world_id!r} holds no built world", detail={"id": world_id})
        return World.model_validate(data)

    return cache.worlds.get(world_id, load)


def world_models(cache: WorldCache, url: str, world_id: str) -> dict[str, Any]:
    """The world's default episode models (``simulator``, ``user_model``), read once per
    process: they are set when the world is made and never change."""

    def load() -> dict[str, Any]:
        with session_scope(url) as session:
            models = session.scalar(select(WorldRow.models).where(WorldRow.id == world_id))
        return dict(models or {})

    return cache.scripts.get(("world models", world_id), load)


def done_world(session: Session, scope: Scope, world_id: str) -> Any:
    """The world's ``id, project, status, jobs``: 404 unless the caller sees it, 409 unless
    it is built. Only these columns: SQLite would read the world JSON's overflow pages to
    reach the columns stored after it."""
    query = select(WorldRow.id, WorldRow.project, WorldRow.status, WorldRow.jobs)
    row = session.execute(query.where(WorldRow.id == world_id)).first()
    if row is None or not scope.owns(row.project):
        raise NotFound(f"no world {world_id!r}", detail={"id": world_id})
    if row.status != "done":
        raise Conflict(
            f"world {world_id!r} is {row.status}: episodes start once it is done",
            detail={"id": world_id, "status": row.status},
        )
    return row


def task_project(session: Session, task: ForgeTaskRow, world_row: Any) -> str | None:
    """The project of the task's forge job: the world's when the job is one of the world's
    (all of them are in its project); else read, through the job's row."""
    if task.job_id in world_row.jobs:
        return world_row.project
    found = forge_store.get_task(session=session, task_id=task.id)
    return None if found is None else found[2]


def trace_task(
    session: Session, world_row: Any, world: World, task_id: str, reference: str = "task"
) -> ForgeTaskRow:
    """The forge task to play: a trace task of the world's jobs (or whose runs the world
    holds: a trace a job skipped as already forged), with a reference end state unless it
    is played without one (``reference="none"``)."""

    def refuse(why: str) -> ValidationFailed:
        return ValidationFailed(f"task_id: {why}", detail={"field": "task_id", "id": task_id})

    task = session.get(ForgeTaskRow, task_id)
    if task is None or task_project(session, task, world_row) != world_row.project:
        raise refuse(f"no forge task {task_id!r} in the world's project")
    if task.kind != "trace":
        raise refuse(f"task {task_id!r} is a {task.kind} task: episodes play trace tasks")
    if task.job_id not in world_row.jobs and not any(t in world.traces for t in start_traces(task)):
        raise refuse(f"task {task_id!r} is not of the world's forge jobs")
    if task.end_state is None and reference == "task":  # an empty one is a reference
        raise refuse(
            f"task {task_id!r} has no reference end state: choose one in review, or play it "
            'without one ("reference": "none"; its reward is null)'
        )
    return task


def start_traces(task: ForgeTaskRow) -> list[str]:
    """The task's runs, first run first: ``World.task_state`` of them is its start."""
    return [str(t) for t in (task.source or {}).get("traces", [])]


def job_traces(cache: WorldCache, session: Session, world_row: Any) -> dict[str, Trace]:
    """The traces of the world's forge jobs by id, parsed once per process (a trace seen in
    an earlier job is kept once)."""
    jobs = list(world_row.jobs)

    def load() -> dict[str, Trace]:
        traces: dict[str, Trace] = {}
        for job_id in jobs:
            inputs = session.scalar(select(ForgeJobRow.inputs).where(ForgeJobRow.id == job_id))
            for trace in parse_traces(inputs) if inputs else []:
                traces.setdefault(trace.id, trace)
        return traces

    return cache.traces.get(world_row.id, load)


def task_fields(task: ForgeTaskRow, reference: str = "task") -> dict[str, Any]:
    """A trace task as :func:`~judge_service.episodes.episode.script_for` reads it; with
    ``reference="none"``, without its reference end state (the verdict's reward is null)."""
    return {
        "id": task.id,
        "goal": task.goal,
        "end_state": task.end_state if reference == "task" else None,
        "end_state_source": task.end_state_source,
        "end_states": task.end_states or [],
        "source": task.source or {},
        "prompt": task.prompt,
        "tools": task.tools,
    }
