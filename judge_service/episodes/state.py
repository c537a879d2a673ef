"""An episode's whole mutable state, and the world state it stands for.

Kept apart from the engine (:mod:`judge_service.episodes.episode`) and one step's effects
(:mod:`judge_service.episodes.step`), which both read it.
"""

from __future__ import annotations

from typing import Any, Literal

from pydantic import BaseModel, Field

from judge_service.world.verify import State
from judge_service.world.world import World


class Episode(BaseModel):
    """The whole mutable state of an episode; ``user_next``: user turns given so far."""

    messages: list[dict[str, Any]] = Field(default_factory=list)
    overrides: dict[str, Any] = Field(default_factory=dict)
    removed: list[str] = Field(default_factory=list)
    touched: list[str] = Field(default_factory=list)
    answers: list[dict[str, Any]] = Field(default_factory=list)
    user_next: int = 0
    turns: int = 0
    max_turns: int = 30
    seed: int = 0
    done: bool = False
    ended_by: Literal["user", "agent", "max_turns"] | None = None


def state_of(world: World, episode: Episode) -> State:
    """The episode's current world state: the base, its overrides, less what was removed."""
    state = {**world.base, **episode.overrides}
    for key in episode.removed:
        state.pop(key, None)
    return state


def entities_of(world: World, episode: Episode, keys: list[str]) -> State:
    """``keys`` of :func:`state_of` (``None``: removed or never held), copying no state."""
    gone = set(episode.removed)
    return {k: None if k in gone else episode.overrides.get(k, world.base.get(k)) for k in keys}
