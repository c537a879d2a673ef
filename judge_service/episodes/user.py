"""The simulated user of an episode: who says the user's turns, replayed or played by a model.

What the traced user said is read by :mod:`judge_service.episodes.user_turns`; the model's
call is :mod:`judge_service.episodes.client_user`'s. The engine asks a :class:`SimulatedUser`.

**Replayed** (:class:`ReplayUser`, no model): the traced opening, then for each text message
of the agent the traced turn that answers what it asks (:func:`~judge_service.episodes.
user_answers.answer`): a decision only to a proposal, a fact to a question, the next request
or the closing turn to a report. It ends only with its closing turn, never while the agent
asks, proposes or works. A user whose opening request was all it said ends, without words,
after the agent's first report. The opening turn itself never ends an episode. A turn that
reported what the user's own tools showed (:mod:`judge_service.episodes.user_tools`) is said
only after using them, never to a question: a user does not report what it has not seen.

**Played by a model** (:class:`GivenUser` hands its reply to the engine): the model plays the
task's goal line and the facts the traced user gave (its turns), and is told to reveal a fact
only when the agent asks for it and to end the conversation the way the traced user did (its
closing turn), once the request is done or cannot be. It sees the conversation from the
user's side: the agent's words as the other party's, tool messages left out (a user does not
see the backend). It answers as JSON, ``{"message", "ends"}``, so that ending is a field and
not a token the model may garble. The opening turn stays the traced one, so every episode of
a task starts from the same request.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from typing import TYPE_CHECKING, Any, Protocol

from judge_service.episodes.user_answers import answer
from judge_service.traces.conversation import content_text

if TYPE_CHECKING:
    from judge_service.episodes.script import Script


class SimulatedUser(Protocol):
    """A user: its next message after ``messages`` (the episode so far) and whether it ends
    the conversation with it. Deterministic for a given ``seed`` where it can be."""

    def reply(
        self, script: Script, messages: Sequence[Mapping[str, Any]], seed: int
    ) -> tuple[str, bool]: ...


# --- replayed --------------------------------------------------------------------------------


def last_agent_text(messages: Sequence[Mapping[str, Any]]) -> str:
    for message in reversed(messages):
        if message.get("role") == "assistant":
            text = content_text(message.get("content")).strip()
            if text:
                return text
    return ""


class ReplayUser:
    """The traced user, answering what the agent asks (module docstring).

    What it said so far is read from the episode's user messages, so it holds no state."""

    def reply(
        self, script: Script, messages: Sequence[Mapping[str, Any]], seed: int
    ) -> tuple[str, bool]:
        given = [content_text(m.get("content")) for m in messages if m.get("role") == "user"]
        turns, exchanges = script.user_turns, script.exchanges
        if not given:
            return (turns[0] if turns else ""), False
        reported = {str(a.get("said")) for a in script.acts if a.get("said")}
        if reported:  # what the user's own tools showed is said only after using them
            last = len(turns) - 1 if script.user_ends else -1
            keep = [i for i, t in enumerate(turns) if i in (0, last) or t not in reported]
            turns = [turns[i] for i in keep]
            exchanges = [exchanges[i] for i in keep if i < len(exchanges)]
        return answer(turns, exchanges, given, last_agent_text(messages), ends=script.user_ends)


REPLAY = ReplayUser()


# --- played by a model -----------------------------------------------------------------------

#: What the model answers.
USER_SCHEMA: dict[str, Any] = {
    "type": "object",
    "properties": {
        "message": {"type": "string", "description": "your next message to the agent"},
        "ends": {"type": "boolean", "description": "true when this message ends the chat"},
    },
    "required": ["message", "ends"],
    "additionalProperties": False,
}
#: The longest reply kept (a user turn, not an essay).
MAX_REPLY_CHARS = 2000


def _brief(script: Script) -> str:
    facts = "\n".join(f"- {turn}" for turn in script.user_turns if turn.strip())
    closing = script.user_turns[-1] if script.user_ends and script.user_turns else ""
    lines = [
        "You are the customer in a chat with a support agent. Stay in character; you are "
        "not an assistant.",
        f"Your goal: {script.goal or (script.user_turns[0] if script.user_turns else '')}",
        "What you said in a real chat with this goal (your facts and wishes; use only these "
        "facts, and give one only when the agent asks for it or needs it):",
        facts,
        "Answer the agent's last message in one or two short sentences, as the customer.",
        "Set ends to true only when your whole goal is done or the agent cannot do it; then "
        f"say goodbye the way you did before{f' ({closing!r})' if closing else ''}.",
    ]
    return "\n".join(line for line in lines if line)


def user_messages(script: Script, messages: Sequence[Mapping[str, Any]]) -> list[dict[str, str]]:
    """The chat the model is given: the brief, then the episode from the user's side."""
    chat = [{"role": "system", "content": _brief(script)}]
    for message in messages:
        role, text = message.get("role"), content_text(message.get("content")).strip()
        if role == "user" and text:
            chat.append({"role": "assistant", "content": text})
        elif role == "assistant" and text:
            chat.append({"role": "user", "content": text})
    return chat


def reply_of(payload: Any) -> tuple[str, bool] | None:
    """``(message, ends)`` from the model's JSON, or ``None`` when it is not that."""
    if not isinstance(payload, Mapping):
        return None
    message, ends = payload.get("message"), payload.get("ends")
    if not isinstance(message, str) or not isinstance(ends, bool) or not message.strip():
        return None
    return message.strip()[:MAX_REPLY_CHARS], ends


class GivenUser:
    """A :class:`SimulatedUser` whose reply was fetched before the step (a model's call is
    not made inside the step's transaction)."""

    def __init__(self, text: str, ends: bool) -> None:
        self.text, self.ends = text, ends

    def reply(
        self, script: Script, messages: Sequence[Mapping[str, Any]], seed: int
    ) -> tuple[str, bool]:
        return self.text, self.ends
