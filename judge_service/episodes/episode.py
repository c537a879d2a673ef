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
- text with no tool calls goes to the user (:mod:`~judge_service.episodes.user`), who replies;
  first, where the user has tools of their own and the text asks them to use one, they do
  (:mod:`~judge_service.episodes.user_tools`): each call is answered by the world and
  recorded among the answers with ``"by": "user"`` under the user's reply.

It is done when the user ends it, the agent passes ``end=True`` (its action then gets no
reply), or after ``max_turns`` actions; :func:`finish` compares the end state with the task's.
"""

from __future__ import annotations

from typing import Any, Literal

from judge_service.episodes.script import Script, script_for
from judge_service.episodes.state import Episode, entities_of, state_of
from judge_service.episodes.step import NEEDED, REJECTED, Step, user_acts
from judge_service.episodes.user import REPLAY, SimulatedUser
from judge_service.episodes.user_tools import offered, reply_after
from judge_service.world.actions import parse_action
from judge_service.world.simulate import ToolSimulator
from judge_service.world.verify import Verdict, end_state_verdict
from judge_service.world.world import World

__all__ = [
    "NEEDED",
    "REJECTED",
    "Episode",
    "Script",
    "act",
    "entities_of",
    "finish",
    "script_for",
    "start",
    "state_of",
]


def start(
    world: World,
    script: Script,
    seed: int = 0,
    max_turns: int = 30,
    user: SimulatedUser | None = None,
) -> tuple[Episode, list[dict[str, Any]]]:
    """A new episode from the task's initial state; the observation is ``[system, the
    user's opening turn]``. The script's tools lose the user's own: an agent is never
    offered one."""
    script.tools = offered(world, script.tools)
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
    step = Step(world, episode, simulator)
    ended_by: Literal["user", "agent", "max_turns"] | None = None
    if not (end and (action is None or (isinstance(action, dict) and not action))):
        parsed = parse_action(action, world.agent_tools(), script.schemas(), f"call_{turns}")
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
            did = user_acts(step, script, parsed.text)
            text, ends = (user or REPLAY).reply(script, step.messages, episode.seed)
            if did and user is None:  # the replayed user says what their own tools showed
                text = reply_after(script.acts, [(e["tool"], e["answer"]) for e in did])
                ends = (
                    script.user_ends and bool(script.user_turns) and text == script.user_turns[-1]
                )
            if text or not ends:
                index = step.say({"role": "user", "content": text})
                for entry in did:
                    entry["message"] = index
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
        also=script.also,
    ).model_copy(update={"provisional": script.provisional})
