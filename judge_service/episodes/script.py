"""A task's script: what one episode of it is played from, built once at reset.

From the forge task and its runs' traces (:func:`script_for`): the traced system prompt and
tools, the replayed user's turns within the goal (the seed picks the run, among those that
reached the reference), and the runs whose starts are the episode's initial state.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from typing import Any

from pydantic import BaseModel, Field, PrivateAttr

from judge_service.episodes.user_turns import closest, run_acts, run_turns
from judge_service.traces.conversation import Trace, content_text
from judge_service.traces.entities import canonical
from judge_service.traces.goals import goals, user_words
from judge_service.world.actions import tool_schemas


class Script(BaseModel):
    """What one task's episode is played from (:mod:`judge_service.episodes.script`)."""

    task_id: str
    goal: str | None = None
    system: str | None = None
    tools: list[dict[str, Any]] = Field(default_factory=list)
    user_turns: list[str] = Field(default_factory=list)
    exchanges: list[dict[str, Any]] = Field(default_factory=list)
    #: What the replayed user did on their own side: ``{"tool", "arguments", "answer",
    #: "asked", "said"}`` (:func:`~judge_service.episodes.user_turns.run_acts`).
    acts: list[dict[str, Any]] = Field(default_factory=list)
    start_traces: list[str] = Field(default_factory=list)
    reference: dict[str, Any] | None = None
    #: The reference is the forge's proposal (rewards made with it are provisional).
    provisional: bool = False
    #: Beside a proposed reference, the end states that count as reached too
    #: (:func:`even_candidates`), ``{"end_state", "traces"}``.
    also: list[dict[str, Any]] = Field(default_factory=list)
    #: The run whose user is replayed, and whether its last turn ends the conversation.
    user_trace: str | None = None
    user_ends: bool = True
    #: The model that plays the user (a model spec), or ``None``: the replayed user.
    user_model: dict[str, Any] | None = None
    #: The model that answers tool calls nothing learned answers (path e), or ``None``.
    simulator: dict[str, Any] | None = None
    _schemas: dict[str, dict[str, Any]] | None = PrivateAttr(default=None)

    def schemas(self) -> dict[str, dict[str, Any]]:
        """Tool name -> its parameters' schema, read once (a script serves every step)."""
        if self._schemas is None:
            self._schemas = tool_schemas(self.tools)
        return self._schemas

    def __eq__(self, other: object) -> bool:
        """Equal when the fields are (the schemas read are a cache)."""
        return isinstance(other, Script) and self.__dict__ == other.__dict__


def _runs(task: Mapping[str, Any], traces: Mapping[str, Trace]) -> tuple[list[str], list[str]]:
    """The task's runs (first run first), and those whose user may be replayed: the runs
    among ``traces`` that reached the reference, else all runs among ``traces``."""
    source = task.get("source") or {}
    listed = [str(t) for t in source.get("traces") or []]
    if not listed and source.get("trace_id"):
        listed = [str(source["trace_id"])]
    available = [t for t in listed if t in traces]
    reference = task.get("end_state")
    agreeing: set[str] = set()
    if reference is not None:
        want = canonical(reference)
        for candidate in task.get("end_states") or []:
            if isinstance(candidate, Mapping) and canonical(candidate.get("end_state")) == want:
                agreeing.update(str(t) for t in candidate.get("traces") or [])
    return listed, [t for t in available if t in agreeing] or available


def even_candidates(task: Mapping[str, Any]) -> list[dict[str, Any]]:
    """Beside a proposed reference, the candidates whose evidence weighs as much as the
    reference's: the forge marked none of their runs failed (even evidence,
    :mod:`judge_service.forge.disagreement`), so a trajectory that reaches one is not failed
    either (:mod:`judge_service.world.verify`). Only end states that traced runs reached and
    that change something: "nothing changed" is the cheapest policy there is."""
    reference = task.get("end_state")
    if task.get("end_state_source") != "proposed" or reference is None:
        return []
    want = canonical(reference)
    listed = [c for c in task.get("end_states") or [] if isinstance(c, Mapping)]
    top = next((c.get("score") for c in listed if canonical(c.get("end_state")) == want), None)
    if type(top) not in (int, float):
        return []
    return [
        {"end_state": c["end_state"], "traces": [str(t) for t in c.get("traces") or []]}
        for c in listed
        if c.get("traces")
        and isinstance(c.get("end_state"), Mapping)
        and c["end_state"]
        and canonical(c["end_state"]) != want
        and type(c.get("score")) in (int, float)
        and c["score"] >= top
    ]


def _spans(task: Mapping[str, Any], trace: Trace, first: bool) -> list[list[int]]:
    """The goal's messages in the run, ``[start, end]`` spans: from the task's evidence,
    else the forge's goal that starts at the task's turn (its first run), else the run's
    goal most like the task's."""
    source = task.get("source") or {}
    for entry in source.get("evidence") or []:
        if isinstance(entry, Mapping) and str(entry.get("trace_id")) == trace.id:
            spans = [
                [int(s[0]), int(s[1])]
                for s in entry.get("turns") or []
                if isinstance(s, list | tuple) and len(s) == 2 and all(type(i) is int for i in s)
            ]
            if spans:
                return spans
    found = goals(trace)
    turn = source.get("turn")
    if first and isinstance(turn, int):
        for goal in found:
            if goal.start == turn:
                return [[goal.start, goal.end - 1]]
    text = str(task.get("goal") or source.get("request") or "")
    best = closest([g.user_text for g in found], text) if len(found) > 1 else 0
    goal = found[best or 0]
    return [[goal.start, goal.end - 1]]


def _system(messages: Sequence[Mapping[str, Any]]) -> str | None:
    for message in messages:
        if message.get("role") in ("system", "developer"):
            return content_text(message.get("content"))
    return None


def script_for(task: Mapping[str, Any], traces: Mapping[str, Trace], seed: int) -> Script:
    """The script of a forge task (``{"id", "goal", "end_state", "end_states"?, "source":
    {"traces", "turn", "evidence"?}, "prompt", "tools"}``) from its runs' ``traces``. The
    seed picks the run whose user is replayed (``seed % runs``, among the runs that reached
    the reference when the task says which did). Without any of its runs (or any user turn
    in the run's goal), the task's prompt gives the opening turn, the only one."""
    listed, pool = _runs(task, traces)
    prompt = [m for m in task.get("prompt") or [] if isinstance(m, Mapping)]
    tools = [t for t in task.get("tools") or [] if isinstance(t, dict)]
    script = Script(
        task_id=str(task.get("id") or ""),
        goal=task.get("goal"),
        system=_system(prompt),
        tools=tools,
        start_traces=listed,
        reference=task.get("end_state"),
        provisional=task.get("end_state_source") == "proposed",
        also=even_candidates(task),
    )
    chosen = traces[pool[seed % len(pool)]] if pool else None
    if chosen is not None:
        first = chosen.id == str((task.get("source") or {}).get("trace_id") or listed[0])
        spans = _spans(task, chosen, first)
        turns, exchanges, ends = run_turns(chosen, spans)
        script.acts = run_acts(chosen, spans)
        script.system = _system(chosen.messages) or script.system
        script.tools = [t for t in chosen.tools or [] if isinstance(t, dict)] or tools
        if turns:
            script.user_trace = chosen.id
            script.user_turns, script.exchanges, script.user_ends = turns, exchanges, ends
            return script
    opening = next(
        (
            user_words(content_text(m.get("content")))
            for m in reversed(prompt)
            if m.get("role") == "user"
        ),
        "",
    )
    script.user_turns = [opening] if opening else []
    script.exchanges = [{"asked": "", "said": opening}] if opening else []
    return script
