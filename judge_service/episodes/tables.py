"""The table of episodes: one agent's play of a forge task in a world, stored after every step.

A row holds the whole mutable episode; the script it is played from (built once at reset, so
a step never reads the forge job's traces) is a row of ``episode_scripts``, read once per
process and cached. ``version`` counts the steps applied: a step writes only where it is
still the version it read, so two concurrent steps of one episode never both land (SQLite
takes no row locks; PostgreSQL's ``FOR UPDATE`` makes the second wait and then see it).
"""

from __future__ import annotations

from dataclasses import dataclass
from datetime import datetime
from typing import Any

from sqlalchemy import Index, Integer, String
from sqlalchemy.orm import Mapped, mapped_column

from judge_service.core.storage.tables import Base
from judge_service.core.storage.types import AsciiJSON, UTCDateTime, utcnow


class EpisodeRow(Base):
    """An episode of a task in a world, open until the user, the agent or ``max_turns``
    ends it; then ``result`` holds the verdict and the scored sample."""

    __tablename__ = "episodes"
    __table_args__ = (Index("ix_episodes_key_status", "key_id", "status"),)

    id: Mapped[str] = mapped_column(String(32), primary_key=True)
    world_id: Mapped[str] = mapped_column(String(32), index=True)
    task_id: Mapped[str] = mapped_column(String(64))
    #: The world's project: only keys that see it see the episode.
    project: Mapped[str] = mapped_column(String(64), default="default", server_default="default")
    #: The key that opened it: its open episodes count against ``JS_EPISODES_OPEN_PER_KEY``.
    key_id: Mapped[str] = mapped_column(String(32))
    run_id: Mapped[str | None] = mapped_column(String(256))
    step: Mapped[int | None] = mapped_column(Integer)
    seed: Mapped[int] = mapped_column(Integer, default=0)
    status: Mapped[str] = mapped_column(String(16), default="open")
    #: Steps applied so far; a step stores only over the version it read.
    version: Mapped[int] = mapped_column(Integer, default=0)
    created_at: Mapped[datetime] = mapped_column(UTCDateTime(), default=utcnow)
    updated_at: Mapped[datetime] = mapped_column(UTCDateTime(), default=utcnow)
    #: Once done: ``{"verdict", "sample"}`` (``sample`` None while or if scoring failed).
    result: Mapped[dict[str, Any] | None] = mapped_column(AsciiJSON())
    #: The :class:`~judge_service.episodes.episode.Episode` (JSON) after the last step.
    episode: Mapped[dict[str, Any]] = mapped_column(AsciiJSON())


class EpisodeScriptRow(Base):
    """The :class:`~judge_service.episodes.script.Script` (JSON) an episode is played from,
    fixed at reset. Its own table: a database rewrites a whole row on an update, and a step
    updates the episode's row (a script of ~15 tools and a long system prompt is ~20 KB)."""

    __tablename__ = "episode_scripts"

    episode_id: Mapped[str] = mapped_column(String(32), primary_key=True)
    script: Mapped[dict[str, Any]] = mapped_column(AsciiJSON())


@dataclass(slots=True)
class Step:
    """What a step reads of an episode's row: what it checks and the reward path names, and
    the episode's JSON. The fields are the columns :mod:`~judge_service.episodes.store`
    selects, in this order."""

    id: str
    world_id: str
    task_id: str
    project: str
    run_id: str | None
    step: int | None
    status: str
    version: int
    episode: dict[str, Any]


@dataclass(slots=True)
class Read(Step):
    """What a state read needs of the row (not its script: that is cached): a step's
    columns, then these."""

    seed: int
    result: dict[str, Any] | None
    created_at: datetime
    updated_at: datetime
