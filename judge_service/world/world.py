"""A world: the entities the traces showed and a model of every tool, stored as JSON.

An episode engine holds a state (entity key -> state, plain JSON) and calls
:meth:`World.answer` for each tool call; the answer carries the state after it. A state
starts from :meth:`World.initial_state` (a trace's start) or :meth:`World.task_state` (the
starts of a task's runs). The whole base is in every state: the agent may look up any
entity the traces showed, as it could in the real backend.
"""

from __future__ import annotations

from collections.abc import Collection, Iterable, Mapping, Sequence
from typing import Any

from pydantic import BaseModel, Field, PrivateAttr

from judge_service.world.describe import describe_op
from judge_service.world.engine import answer_call
from judge_service.world.lookup import Index
from judge_service.world.model import PATHS, Answer, Call, ToolModel, TraceStart
from judge_service.world.user_side import SIDE_KEY, side_answer


class World(BaseModel):
    version: int = 1
    tools: dict[str, ToolModel] = Field(default_factory=dict)
    base: dict[str, Any] = Field(default_factory=dict)
    #: The fields that name entities in answers, most used first.
    key_fields: list[str] = Field(default_factory=list)
    traces: dict[str, TraceStart] = Field(default_factory=dict)
    #: Where the user has tools of their own: each trace's user side as its tools first
    #: showed it (:mod:`judge_service.world.user_side`).
    sides: dict[str, dict[str, str]] = Field(default_factory=dict)
    #: Where ids are in the entity states answers have read (by identity: a state is never
    #: changed in place, a change makes a new object). Kept between answers, so a lookup by
    #: id does not walk every entity of a type; emptied when it outgrows the base, since
    #: episodes keep making new states.
    _index: Index = PrivateAttr(default_factory=Index)

    def __eq__(self, other: object) -> bool:
        """Equal when what was learned is (the index is a cache, not part of a world)."""
        return isinstance(other, World) and self.__dict__ == other.__dict__

    def initial_state(self, trace_id: str) -> dict[str, Any]:
        """The state a trace started from (its first views over the base)."""
        return self.task_state([trace_id])

    def task_state(self, trace_ids: Iterable[str]) -> dict[str, Any]:
        """The state a task's runs started from: the first run that saw an entity wins."""
        return {**self.base, **self.task_overrides(trace_ids)}

    def task_overrides(self, trace_ids: Iterable[str]) -> dict[str, Any]:
        """What :meth:`task_state` holds that differs from the base."""
        overrides: dict[str, Any] = {}
        side: dict[str, str] = {}
        for trace_id in trace_ids:
            start = self.traces.get(trace_id)
            if start is not None:
                for key, value in start.overrides.items():
                    overrides.setdefault(key, value)
            for name, value in self.sides.get(trace_id, {}).items():
                side.setdefault(name, value)
        if side:
            overrides[SIDE_KEY] = side
        return overrides

    def trace_entities(self, trace_id: str) -> dict[str, Any]:
        """Only the entities a trace showed, as it first saw them."""
        state = self.initial_state(trace_id)
        start = self.traces.get(trace_id)
        return {k: state[k] for k in (start.keys if start else []) if k in state}

    def agent_tools(self) -> dict[str, ToolModel]:
        """The tools an agent may call: all but the user's own."""
        return {n: t for n, t in self.tools.items() if t.caller == "agent"}

    def answer(
        self,
        state: Mapping[str, Any],
        call: Call,
        paths: Collection[str] = PATHS,
        done: Sequence[str] | None = None,
        runs: Collection[str] = (),
    ) -> Answer:
        """The tool's answer to ``call`` in ``state``, and the state after it. ``done``: the
        successful writes made so far (:func:`~judge_service.world.user_side.done_writes`),
        which answer a user tool's call first (:mod:`judge_service.world.user_side`), the
        task's own ``runs`` preferred."""
        if len(self._index.roots) > 4 * len(self.base) + 1024:
            self._index = Index()
        tool = self.tools.get(call.name)
        if tool is not None and tool.caller == "user" and done is not None:
            found = side_answer(tool.side, state, call, done, runs, tool.effect == "read")
            if found is not None:
                return found
        return answer_call(tool, state, call, paths, self.key_fields, self._index)

    def report(self) -> dict[str, Any]:
        """Per tool: what answers it, the transitions learned, the errors it knows; a user's
        tool says so (``caller``) with the traced answers its side keeps."""
        out = {}
        for name, tool in self.tools.items():
            entry: dict[str, Any] = {"effect": tool.effect, "calls": tool.calls}
            if tool.caller == "user":  # answered from the user's side (user_side.py)
                entry.update(caller="user", side_answers=len(tool.side))
            if tool.read is not None:
                entry["read"] = tool.read.model_dump(exclude_defaults=True)
            if tool.function is not None:
                entry["function"] = tool.function.kind
            if tool.effect == "write" and not (tool.transition and tool.transition.usable):
                entry["not_learned"] = not_learned(tool)
            if tool.transition is not None:
                entry["usable"] = tool.transition.usable
                entry["answer"] = tool.transition.answer
                entry["unbound_changes"] = tool.transition.unbound
                if tool.transition.creates:
                    entry["new_ids"] = tool.transition.new_ids
                entry["transitions"] = [
                    {
                        "entity": e.binding.model_dump(exclude_none=True),
                        "ops": [describe_op(op) for op in e.ops],
                        "unexplained": e.unexplained,
                        "clock": e.clock,
                        "examples": e.examples,
                        "rejected": e.rejected,
                    }
                    for e in tool.transition.effects
                ]
            entry["errors"] = [
                {"when": r.when, "arg": r.arg, "examples": r.examples} for r in tool.errors
            ]
            entry["replays"] = len(tool.replays)
            out[name] = entry
        return out


def not_learned(tool: ToolModel) -> list[str]:
    """Why a write's effects are not used, in words a reader can check against its traced
    calls: no effect found, fields of its entity no rule explains (with how many candidate
    rules its examples contradicted), or an answer no template explains."""
    transition = tool.transition
    if transition is None or not transition.effects:
        return [f"no change to an entity was found in its {tool.calls} traced calls"]
    reasons = []
    first = transition.effects[0]
    if first.unexplained:
        fields = ", ".join(first.unexplained)
        reasons.append(
            f"no rule explains {fields} of the entity it names: {first.rejected} candidate "
            f"rules were each contradicted by one of its {first.examples} examples"
        )
    if transition.answer == "none":
        reasons.append("its answer matched neither the changed entity nor one template")
    return reasons
