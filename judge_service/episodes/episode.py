"""Episodes over a world: reset, step and state, pure, so any transport can drive them.

A :class:`~judge_service.episodes.script.Script` is what one task's episode is played from
(:func:`script_for`, once at reset). An :class:`Episode` is the whole mutable state, plain
JSON, stored after every step: the messages, the world state as what differs from the
world's base (``overrides``, ``removed``: a step copies no world), the entities the agent's
writes changed (``touched``), and each tool answer's ``call_record`` (``answers``).

:func:`start` gives the first observation (the traced system prompt and the user's opening
turn); :func:`act` takes the agent's action, an assistant message:

- its tool calls are answered in order by :meth:`World.answer`, the state carried, each as
  a ``tool`` message. A call refused before the world answers it
  (:mod:`~judge_service.world.actions`) gets the backend's kind of error (path ``rejected``).
  A call no path (a)-(d) answers (``model_needed``) gets the ``simulator``'s answer
  (:mod:`~judge_service.world.simulate`), else an ``Error: ...`` saying so; either way the
  state is left as it was, and a write answered so makes the verdict undetermined;
- text with no tool calls goes to the user (:mod:`~judge_service.episodes.user`), who replies.

It is done when the user ends it, the agent passes ``end=True`` (its action then gets no
reply), or after ``max_turns`` actions; :func:`finish` compares the end state with the task's.
"""

from __future__ import annotations

from typing import Any, Literal

from pydantic import BaseModel, Field

from judge_service.episodes.script import Script, script_for
from judge_service.episodes.user import REPLAY, SimulatedUser
from judge_service.world.actions import parse_action
from judge_service.world.model import Call
from judge_service.world.simulate import ToolSimulator
from judge_service.world.trajectory import call_record
from judge_service.world.values import MISSING
from judge_service.world.verify import State, Verdict, end_state_verdict
from judge_service.world.world import World

__all__ = ["REJECTED", "Episode", "Script", "act", "finish", "script_for", "start", "state_of"]

#: The path recorded for a call refused before the world answered it.
REJECTED = "rejected"
#: The answer to a call that only a model could answer, when none simulates tools: an error
#: in a tool's shape. It must not say "simulator", "traces" or "model": an agent that learns
#: it is in a simulator learns to play the simulator. The episode's answers record the call's
#: path (``model_needed``), so training and the verdict still know.
NEEDED = "Error: {name} could not complete this request"


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


def start(
    world: World,
    script: Script,
    seed: int = 0,
    max_turns: int = 30,
    user: SimulatedUser | None = None,
) -> tuple[Episode, list[dict[str, Any]]]:
    """A new episode from the task's initial state; the observation is ``[system, the
    user's opening turn]``."""
    overrides = world.task_overrides(script.start_traces)
    messages: list[dict[str, Any]] = []
    if script.system is not None:
        messages.append({"role": "system", "content": script.system})
    opening, _ = (user or REPLAY).reply(script, messages, seed)
    messages.append({"role": "user", "content": opening})
    episode = Episode(
        messages=messages, overrides=overrides, user_next=1, max_turns=max_turns, seed=seed
    )
    return episode, [dict(m) for m in messages]


def _tool_message(call_id: str, name: str, content: str) -> dict[str, Any]:
    return {"role": "tool", "tool_call_id": call_id, "name": name, "content": content}


def _changes(before: State, after: State) -> tuple[list[str], list[str]]:
    """The keys whose state ``after`` holds anew (by identity: answers copy only what they
    change), and the keys it no longer holds."""
    changed = [k for k, v in after.items() if before.get(k, MISSING) is not v]
    added = sum(1 for k in changed if k not in before)
    gone = [k for k in before if k not in after] if len(after) - added < len(before) else []
    return changed, gone


class _Step:
    """One action's effects on a copy of the episode's lists (the episode is not changed)."""

    def __init__(
        self, world: World, episode: Episode, simulator: ToolSimulator | None = None
    ) -> None:
        self.world, self.episode, self.simulator = world, episode, simulator
        self.messages = list(episode.messages)
        self.observation: list[dict[str, Any]] = []
        self.answers = list(episode.answers)
        self.overrides = episode.overrides
        self.removed = episode.removed
        self.touched = episode.touched
        self.state: State | None = None

    def say(self, message: dict[str, Any]) -> int:
        self.messages.append(message)
        self.observation.append(dict(message))
        return len(self.messages) - 1

    def record(self, index: int, entry: dict[str, Any]) -> None:
        self.answers.append({"message": index, **entry})

    def refuse(self, call_id: str, name: str, error: str, arguments: Any = None) -> None:
        index = self.say(_tool_message(call_id, name, error))
        tool = self.world.tools.get(name)
        write = tool is not None and tool.effect == "write"
        entry = {"tool": name or None, "path": REJECTED, "error": True, "write": write}
        self.record(index, {**entry, "arguments": arguments or {}, "changed": [], "about": []})

    def call(self, call_id: str, name: str, arguments: dict[str, Any], invalid: str | None) -> None:
        """Answer the call; ``invalid``: its arguments fail the schema, so only the tool's
        own error for them (the world's, in the backend's words) or that text answers."""
        if self.state is None:
            self.state = state_of(self.world, self.episode)
        before = self.state
        call = Call.model_construct(name=name, arguments=arguments)
        answer = self.world.answer(before, call)
        if invalid is not None and not (answer.error and answer.path != "model_needed"):
            self.refuse(call_id, name, invalid, arguments)
            return
        needed = answer.path == "model_needed"
        simulated = self.simulator.answer(call, before) if needed and self.simulator else None
        text = simulated or (NEEDED.format(name=name) if needed else (answer.text or ""))
        index = self.say(_tool_message(call_id, name, text))
        entry = call_record(self.world, before, call, answer)
        if answer.note:
            entry["note"] = answer.note
        if simulated is not None:
            entry["simulated"] = True  # (e): a model's answer; the state is left as it was
        self.record(index, entry)
        after = answer.state_after
        if after is before:
            return
        changed, gone = _changes(before, after)
        self.overrides = {**self.overrides, **{k: after[k] for k in changed}}
        removed = [k for k in self.removed if k not in after]
        for key in gone:
            self.overrides.pop(key, None)
            if key in self.world.base and key not in removed:
                removed.append(key)
        self.removed = removed
        new = [k for k in entry["changed"] if k not in self.touched]
        if new:
            self.touched = [*self.touched, *new]
        self.state = after


def act(
    world: World,
    script: Script,
    episode: Episode,
    action: Any,
    end: bool = False,
    user: SimulatedUser | None = None,
    simulator: ToolSimulator | None = None,
) -> tuple[Episode, list[dict[str, Any]]]:
    """The agent's action taken (module docstring): the episode after it and the
    observation (the new messages). Never raises on a bad action; a done episode is
    returned as it is, with no observation."""
    if episode.done:
        return episode, []
    turns = episode.turns + 1
    step = _Step(world, episode, simulator)
    ended_by: Literal["user", "agent", "max_turns"] | None = None
    if not (end and (action is None or (isinstance(action, dict) and not action))):
        parsed = parse_action(action, world.tools, script.schemas(), f"call_{turns}")
        if parsed.message is not None:
            step.messages.append(parsed.message)
        if parsed.error is not None:
            step.refuse("", "", parsed.error)
        for request in parsed.requests:
            if request.error is not None:
                step.refuse(request.call_id, request.name, request.error, request.arguments)
            else:
                step.call(request.call_id, request.name, request.arguments, request.invalid)
        if parsed.error is None and not parsed.requests and not end:
            text, ends = (user or REPLAY).reply(script, step.messages, episode.seed)
            if text or not ends:
                step.say({"role": "user", "content": text})
            ended_by = "user" if ends else None
    if ended_by is None and end:
        ended_by = "agent"
    if ended_by is None and turns >= episode.max_turns:
        ended_by = "max_turns"
    given = sum(1 for m in step.messages if m.get("role") == "user")
    after = episode.model_copy(
        update={
            "messages": step.messages,
            "overrides": step.overrides,
            "removed": step.removed,
            "touched": step.touched,
            "answers": step.answers,
            "user_next": given,
            "turns": turns,
            "done": ended_by is not None,
            "ended_by": ended_by,
        }
    )
    return after, step.observation


def finish(world: World, script: Script, episode: Episode) -> Verdict:
    """The end state against the task's reference (:func:`~judge_service.world.verify.
    end_state_verdict`, given the episode's answers as its call records: a write that only
    a model could have answered leaves the verdict undetermined)."""
    return end_state_verdict(
        world,
        world.task_state(script.start_traces),
        state_of(world, episode),
        episode.touched,
        script.reference,
        calls=episode.answers,
    ).model_copy(update={"provisional": script.provisional})
