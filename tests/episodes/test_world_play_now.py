"""``play_now``: a step is played on the caller's thread only when nothing would make it
wait, and otherwise leaves everything as it was for the threaded play.

On a real SQLite file: the step is played and stored; with this process's episode writer
held, another connection's write lock held, the world or the script not cached, or on
PostgreSQL, ``play_now`` answers ``None`` at once and writes nothing, and the threaded
``play`` then plays the same step."""

from __future__ import annotations

import sqlite3
import threading
import time
from types import SimpleNamespace

import pytest

from judge_service.core.errors import Conflict
from judge_service.core.projects import scope_of
from judge_service.core.storage.db import dispose_engines, session_scope, sqlite_path, upgrade
from judge_service.episodes import store
from judge_service.episodes import store_inputs as inputs
from judge_service.episodes import wire as ew
from judge_service.episodes.episode import script_for, start
from judge_service.episodes.store_play import Move, may_need_models, play, read_before
from judge_service.episodes.store_play_now import play_now
from judge_service.episodes.store_writers import one_writer
from tests.episodes.test_world_episode import _policy, library  # noqa: F401  (the module's fixture)

SCOPE = scope_of(None, None)


def _opened(url: str, world, script) -> tuple[SimpleNamespace, str]:
    """An app state with the world and the script cached, and an episode of the script."""
    episode, _ = start(world, script, seed=0)
    with session_scope(url) as session:
        row = store.create_episode(
            session=session,
            world_id="w1",
            task_id="t1",
            project="default",
            key_id="k1",
            run_id=None,
            step=None,
            seed=0,
            script=script.model_dump(mode="json"),
            episode=episode.model_dump(mode="json"),
        )
        episode_id = row.id
        session.commit()
    state = SimpleNamespace(settings=SimpleNamespace(database_url=url))
    cache = inputs.caches(state)
    cache.worlds.get("w1", lambda: world)
    cache.scripts.get(episode_id, lambda: script)
    return state, episode_id


def _version(url: str, episode_id: str) -> int:
    with session_scope(url) as session:
        connection = session.connection()
        return store.read_episode(connection, episode_id).version


@pytest.fixture
def opened(library, sqlite_url):  # noqa: F811
    world, traces, tasks = library
    upgrade(sqlite_url)
    script = script_for(tasks["borrow"], traces, seed=0)
    state, episode_id = _opened(sqlite_url, world, script)
    action = _policy(traces["borrow-1"])[0]
    yield sqlite_url, state, episode_id, ew.EpisodeStep(action=action)
    dispose_engines()


def test_a_step_that_need_not_wait_is_played_and_stored(opened):
    url, state, episode_id, body = opened
    stepped = play_now(state, Move(episode_id, body, SCOPE))
    assert stepped is not None and stepped.observation
    assert _version(url, episode_id) == 1
    # the same step again is the next one: it was stored, not only answered
    again = play_now(state, Move(episode_id, body, SCOPE))
    assert again is not None and _version(url, episode_id) == 2


def test_a_held_episode_writer_leaves_the_step_to_a_thread(opened):
    url, state, episode_id, body = opened
    with one_writer(url):
        assert play_now(state, Move(episode_id, body, SCOPE)) is None
    assert _version(url, episode_id) == 0
    assert play(state, Move(episode_id, body, SCOPE)).observation
    assert _version(url, episode_id) == 1


def test_another_connections_write_lock_fails_it_at_once_with_nothing_written(opened):
    url, state, episode_id, body = opened
    other = sqlite3.connect(sqlite_path(url), isolation_level=None)
    other.execute("BEGIN IMMEDIATE")  # SQLite's write lock, as another process would hold it
    try:
        started = time.monotonic()
        assert play_now(state, Move(episode_id, body, SCOPE)) is None
        assert time.monotonic() - started < 5  # not the 30 s busy timeout
    finally:
        other.execute("ROLLBACK")
        other.close()
    assert _version(url, episode_id) == 0
    # only the loop's own connection does not wait: the threaded play waits for the lock
    assert play_now(state, Move(episode_id, body, SCOPE)) is not None
    other = sqlite3.connect(sqlite_path(url), isolation_level=None, check_same_thread=False)
    other.execute("BEGIN IMMEDIATE")
    released = threading.Timer(0.5, lambda: (other.execute("ROLLBACK"), other.close()))
    released.start()
    try:
        started = time.monotonic()
        assert play(state, Move(episode_id, body, SCOPE)).observation  # waits for the lock
        assert time.monotonic() - started >= 0.4
    finally:
        released.join()
    assert _version(url, episode_id) == 2


@pytest.mark.parametrize("forget", ["worlds", "scripts"])
def test_what_is_not_cached_leaves_the_step_to_a_thread(opened, forget):
    url, state, episode_id, body = opened
    setattr(inputs.caches(state), forget, type(getattr(inputs.caches(state), forget))(4))
    assert play_now(state, Move(episode_id, body, SCOPE)) is None
    assert _version(url, episode_id) == 0


def test_postgresql_steps_go_to_a_thread():
    state = SimpleNamespace(settings=SimpleNamespace(database_url="postgresql+psycopg://x/y"))
    assert play_now(state, Move("e1", ew.EpisodeStep(action={}), SCOPE)) is None


def _counted_reads(monkeypatch) -> list[bool]:
    """Each read of an episode's row for a step, by whether it locked the row."""
    reads: list[bool] = []
    read_step = store.read_step

    def counted(connection, episode_id, *, lock=True):
        reads.append(lock)
        return read_step(connection, episode_id, lock=lock)

    monkeypatch.setattr(store, "read_step", counted)
    return reads


@pytest.mark.parametrize("cached", [True, False])
def test_a_step_reads_its_episode_row_once(opened, monkeypatch, cached):
    """Cached and without models: the locked read in the step's transaction. Read before
    the models (here: the script not cached yet): that read, and none in the transaction."""
    url, state, episode_id, body = opened
    reads = _counted_reads(monkeypatch)
    if not cached:
        inputs.caches(state).scripts = type(inputs.caches(state).scripts)(4)
    before = (
        read_before(state, episode_id, body, SCOPE) if may_need_models(state, episode_id) else None
    )
    assert (before is None) is cached
    assert play(state, Move(episode_id, body, SCOPE, before=before)).observation
    assert reads == [cached] and _version(url, episode_id) == 1


def test_a_step_landing_between_the_read_before_and_the_play_makes_it_a_409(opened):
    """The read before the models serves the step; a step of the same episode stored in
    between is not overwritten: this one is refused, nothing of it written."""
    url, state, episode_id, body = opened
    before = read_before(state, episode_id, body, SCOPE)
    assert play(state, Move(episode_id, body, SCOPE)).observation  # the other step
    with pytest.raises(Conflict, match="at the same time"):
        play(state, Move(episode_id, body, SCOPE, before=before))
    assert _version(url, episode_id) == 1
