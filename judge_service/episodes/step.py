"""One action's effects: the agent's calls answered, the user's own calls made.

A :class:`Step` works on copies of the episode's lists (the episode itself is not changed):
:meth:`Step.call` answers one of the agent's calls as a ``tool`` message;
:meth:`Step.user_call` makes one of the user's own (:func:`user_acts` picks them from the
agent's words, :mod:`judge_service.episodes.user_tools`), recorded with ``"by": "user"``.
Both carry the state change into the episode's overrides.
"""

from __future__ import annotations

from typing import Any

from judge_service.episodes.script import Script
from judge_service.episodes.state import Episode, state_of
from judge_service.episodes.user_tools import arguments_for, named_tools, traced_act
from judge_service.world.model import Call
from judge_service.world.simulate import ToolSimulator
from judge_service.world.trajectory import call_record
from judge_service.world.user_side import SIDE_KEY, done_writes, write_mark
from judge_service.world.values import MISSING, same
from judge_service.world.verify import State
from judge_service.world.world import World

#: The path recorded for a call refused before the world answered it.
REJECTED = "rejected"
#: The answer to a call that only a model could answer, when none simulates tools: an error
#: in a tool's shape. It must not say "simulator", "traces" or "model": an agent that learns
#: it is in a simulator learns to play the simulator. The episode's answers record the call's
#: path (``model_needed``), so training and the verdict still know.
NEEDED = "Error: {name} could not complete this request"


def _tool_message(call_id: str, name: str, content: str) -> dict[str, Any]:
    return {"role": "tool", "tool_call_id": call_id, "name": name, "content": content}


def _changes(before: State, after: State) -> tuple[list[str], list[str]]:
    """The keys whose state ``after`` holds anew (by identity: answers copy only what they
    change), and the keys it no longer holds."""
    changed = [k for k, v in after.items() if before.get(k, MISSING) is not v]
    added = sum(1 for k in changed if k not in before)
    gone = [k for k in before if k not in after] if len(after) - added < len(before) else []
    return changed, gone


class Step:
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

    def current(self) -> State:
        """The world state now: the episode's, read once a step, then carried."""
        if self.state is None:
            self.state = state_of(self.world, self.episode)
        return self.state

    def call(self, call_id: str, name: str, arguments: dict[str, Any], invalid: str | None) -> None:
        """Answer the call; ``invalid``: its arguments fail the schema, so only the tool's
        own error for them (the world's, in the backend's words) or that text answers."""
        before = self.current()
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
        self.apply(before, answer.state_after, entry)

    def user_call(
        self, name: str, arguments: dict[str, Any], runs: list[str]
    ) -> tuple[str, dict[str, Any]]:
        """The user's own tool call (:mod:`~judge_service.episodes.user_tools`), answered by
        the world after the writes made so far: its answer's text and its record (``"by":
        "user"``), which the caller files under the user's reply."""
        before = self.current()
        call = Call.model_construct(name=name, arguments=arguments)
        answer = self.world.answer(before, call, done=done_writes(self.answers), runs=runs)
        needed = answer.path == "model_needed"
        text = NEEDED.format(name=name) if needed else (answer.text or "")
        entry = {**call_record(self.world, before, call, answer), "by": "user", "answer": text}
        side = answer.state_after.get(SIDE_KEY)
        if side is not None and not same(side, before.get(SIDE_KEY)):  # a read shows it too
            entry["changed"] = [*dict.fromkeys([*entry["changed"], SIDE_KEY])]
        self.answers.append(entry)  # filed now, so the next call sees its write
        self.apply(before, answer.state_after, entry)
        return text, entry

    def apply(self, before: State, after: State, entry: dict[str, Any]) -> None:
        """Carry a call's state change into the episode's overrides and touched keys."""
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


def user_acts(step: Step, script: Script, asked: str) -> list[dict[str, Any]]:
    """The user's own tool calls that the agent's message asks for
    (:mod:`~judge_service.episodes.user_tools`), made in order: their records, filed under
    the user's reply once it is said."""
    mine = [a for a in step.answers if a.get("by") == "user"]
    runs = [*script.start_traces, *([script.user_trace] if script.user_trace else [])]
    found = traced_act(script.acts, asked, {a["act"] for a in mine if "act" in a})
    if found is not None:
        number, calls = found
        writes = done_writes(mine)
        did = []
        for call in calls:
            name, arguments = str(call.get("tool")), dict(call.get("arguments") or {})
            if name in step.world.tools and write_mark(name, arguments) not in writes:
                entry = step.user_call(name, arguments, runs)[1]
                entry["act"] = number
                did.append(entry)
        if did:
            return did
    made = [str(a.get("tool")) for a in mine if a.get("write")]
    return [
        step.user_call(name, arguments_for(step.world, name, asked, script.acts), runs)[1]
        for name in named_tools(step.world, asked, made)
    ]
