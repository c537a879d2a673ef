"""The simulated user of an episode: who says the traced user's turns now (what the traced
user said is read by :mod:`judge_service.world.turns`).

:class:`ReplayUser` needs no model: it gives the traced turns in order, one for each text
message of the agent, and once none is left answers with the turn whose exchange is closest
to what the agent wrote (:func:`~judge_service.world.turns.closest`). A user whose
opening request was all it said ends, without words, after the agent's first answer. The
opening turn itself never ends an episode. Any other
user (a model playing the goal) implements :class:`SimulatedUser`.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from typing import TYPE_CHECKING, Any, Protocol

from judge_service.traces.conversation import content_text
from judge_service.world.turns import closest

if TYPE_CHECKING:
    from judge_service.world.script import Script


class SimulatedUser(Protocol):
    """A user: its next message after ``messages`` (the episode so far) and whether it ends
    the conversation with it. Deterministic for a given ``seed`` where it can be."""

    def reply(
        self, script: Script, messages: Sequence[Mapping[str, Any]], seed: int
    ) -> tuple[str, bool]: ...


def closest_turn(exchanges: Sequence[Mapping[str, str]], text: str) -> str | None:
    """The ``said`` of the exchange whose ``asked`` is most like ``text``."""
    index = closest([e.get("asked", "") for e in exchanges], text)
    return None if index is None else exchanges[index].get("said")


def last_agent_text(messages: Sequence[Mapping[str, Any]]) -> str:
    for message in reversed(messages):
        if message.get("role") == "assistant":
            text = content_text(message.get("content")).strip()
            if text:
                return text
    return ""


class ReplayUser:
    """The traced user's turns in order; then the closest traced turn (module docstring).

    Its position is the number of user messages in the episode, so it holds no state."""

    def reply(
        self, script: Script, messages: Sequence[Mapping[str, Any]], seed: int
    ) -> tuple[str, bool]:
        given = sum(1 for m in messages if m.get("role") == "user")
        turns = script.user_turns
        if given < len(turns):
            return turns[given], script.user_ends and given == len(turns) - 1 and given > 0
        if script.user_ends and len(turns) == 1:
            return "", True  # the opening was all it said: it has nothing more to ask
        said = closest_turn(script.exchanges, last_agent_text(messages))
        return said if said is not None else (turns[-1] if turns else ""), False


REPLAY = ReplayUser()
