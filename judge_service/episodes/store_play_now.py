"""An episode step played on the event loop's own thread, when nothing would make it wait.

Why: the hop to a thread and back cost about a sixth of a step's CPU (paired runs of
``bench/episodes.py`` on 2 cores: two context switches and the loop's wake-up), and a step
on a SQLite file is a few hundred microseconds of CPU once nothing holds the file's write
lock. It is played at once only when it cannot wait:

- the database is a SQLite file (PostgreSQL's answers come over the network);
- the episode's script and world are cached (a miss reads them; a model the step needs was
  asked before, on a thread): otherwise nothing is written;
- this process's episode writer is free
  (:func:`~judge_service.episodes.store_writers.writer_if_free`), and the step runs on a
  connection whose busy timeout is 0
  (:func:`~judge_service.core.storage.db.no_wait_connection`): a write lock that another
  thread or process holds fails it at once, before it wrote anything.

Otherwise :func:`play_now` answers ``None`` and the route plays the step on a thread.
"""

from __future__ import annotations

from sqlalchemy.exc import OperationalError

from judge_service.core.storage.db import no_wait_connection
from judge_service.core.storage.outage import find_outage
from judge_service.episodes.store_inputs import EpisodeState
from judge_service.episodes.store_play import Move, NotCached, Stepped, played_in
from judge_service.episodes.store_writers import writer_if_free


def play_now(state: EpisodeState, move: Move) -> Stepped | None:
    """:func:`~judge_service.episodes.store_play.play` here and now, or ``None`` when
    it would have to wait for anything."""
    url = state.settings.database_url
    if not url.startswith("sqlite"):
        return None
    with writer_if_free(url) as free:
        if not free:
            return None
        connection = no_wait_connection(url)
        try:
            with connection.begin():
                return played_in(connection, state, move, cached_only=True)
        except NotCached:
            return None
        except OperationalError as error:
            outage = find_outage(error)
            if outage is not None and outage.reason == "database is locked":
                return None
            raise
