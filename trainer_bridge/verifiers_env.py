"""verifiers adapter for episodes: a ``MultiTurnEnv`` whose environment turns come from a world.

Each rollout is one episode of the service (``trainer_bridge.episodes``): ``setup_state``
resets it, so the rollout's prompt is the episode's observation (the traced system prompt and
the user's first turn) and its tools are the ones the traces offered; every assistant message
is then a step, answered by the world (tool calls) or by the simulated user (text). The
episode ends the way the service ends it (the user ends the conversation, ``max_turns``); a
rollout stopped earlier by verifiers (its own limits, an error) ends its episode in cleanup,
with the agent's last message, so no episode stays open.

The reward is the episode's, read from state (``episode_reward``; ``episode_result`` holds
the verdict and the scored sample) by :func:`episode_reward` (verifiers 0.3; use the env's own
rubric or add the function to yours). verifiers expects numbers, so a masked episode
(no reward: the world could not tell, or the service could not be reached) scores
``masked_value`` with ``judge_service_valid: False`` in its state, as
:func:`trainer_bridge.verifiers.group_reward_function` does. Dataset rows name the task in
``info``: ``{"task_id", "seed"?, "step"?}`` (:func:`episode_dataset` writes them).
"""

from __future__ import annotations

import logging
from collections.abc import Awaitable, Callable, Iterable, Mapping, Sequence
from typing import Any

import verifiers as vf
from verifiers.types import AssistantMessage, Messages, Tool
from verifiers.utils.message_utils import normalize_messages

from trainer_bridge.client import RewardError
from trainer_bridge.episodes import AsyncEpisodeClient, EpisodeStep

log = logging.getLogger(__name__)


def episode_dataset(task_ids: Iterable[str], seeds: Sequence[int] = (0,)) -> Any:
    """Rows for :class:`WorldEpisodeEnv`: one per task and seed. The prompt is a placeholder:
    the episode's reset gives the real one."""
    from datasets import Dataset

    rows = [(task_id, seed) for task_id in task_ids for seed in seeds]
    return Dataset.from_list(
        [
            {
                "prompt": [{"role": "user", "content": f"task {task_id}"}],
                "info": {"task_id": task_id, "seed": seed},
            }
            for task_id, seed in rows
        ]
    )


def action_of(message: Any) -> dict[str, Any]:
    """A verifiers assistant message as the service's action (OpenAI format)."""
    if message is None or getattr(message, "role", None) != "assistant":
        return {"role": "assistant", "content": ""}
    content = message.content
    if isinstance(content, list):  # content parts: their text
        content = "".join(str(part.get("text") or "") for part in content)
    action: dict[str, Any] = {"role": "assistant", "content": content or ""}
    calls = getattr(message, "tool_calls", None) or []
    if calls:
        action["tool_calls"] = [
            {
                "id": call.id,
                "type": "function",
                "function": {"name": call.name, "arguments": call.arguments},
            }
            for call in calls
        ]
    return action


def messages_of(observation: Sequence[Mapping[str, Any]]) -> Messages:
    """The service's observation as verifiers messages (a tool message always has an id,
    text content)."""
    fixed = []
    for raw in observation:
        message = dict(raw)
        if message.get("content") is None:
            message["content"] = ""
        if message.get("role") == "tool" and not isinstance(message.get("tool_call_id"), str):
            message["tool_call_id"] = ""
        fixed.append(message)
    return normalize_messages(fixed, field_name="observation")


def tools_of(schemas: Iterable[Mapping[str, Any]]) -> list[Tool]:
    """OpenAI tool schemas (``{"type": "function", "function": {...}}``) as ``vf.Tool``."""
    tools = []
    for schema in schemas:
        function = schema.get("function", schema)
        if not isinstance(function, Mapping) or not isinstance(function.get("name"), str):
            continue
        parameters = function.get("parameters")
        tools.append(
            Tool(
                name=function["name"],
                description=str(function.get("description") or ""),
                parameters=dict(parameters) if isinstance(parameters, Mapping) else {},
            )
        )
    return tools


def _ended(state: vf.State, stepped: EpisodeStep) -> None:
    state["episode_done"] = True
    state["episode_reward"] = stepped.reward
    state["episode_result"] = stepped.result


def episode_reward(masked_value: float = 0.0) -> Callable[..., Awaitable[float]]:
    """A rubric function: the episode's reward from state, ``masked_value`` when masked."""

    async def world_episode(state: vf.State) -> float:
        reward = state.get("episode_reward")
        sample = (state.get("episode_result") or {}).get("sample") or {}
        state["judge_service_valid"] = reward is not None
        state["judge_service_hack_score"] = sample.get("hack_score", 0.0)
        return reward if reward is not None else masked_value

    return world_episode


class WorldEpisodeEnv(vf.MultiTurnEnv):
    """Rollouts that are episodes of one world; the reward is each episode's.

    ``run_id`` and ``step`` (or a row's ``info.step``) make every episode's scored sample one
    of that run's, so the run page, tiers and review see them. ``max_turns`` is the
    episode's (the service ends it); verifiers' own ``max_turns`` stays unbounded unless given
    as ``rollout_max_turns``.
    """

    def __init__(
        self,
        base_url: str,
        world_id: str,
        *,
        api_key: str | None = None,
        run_id: str | None = None,
        step: int | None = None,
        max_turns: int | None = None,
        rollout_max_turns: int = -1,
        masked_value: float = 0.0,
        dataset: Any = None,
        rubric: vf.Rubric | None = None,
        timeout_s: float = 600.0,
        **options: Any,
    ) -> None:
        client_options = {
            k: options.pop(k) for k in ("retries", "backoff_s", "transport") if k in options
        }
        self.client = AsyncEpisodeClient(base_url, api_key, timeout=timeout_s, **client_options)
        self.world_id = world_id
        self.run_id = run_id
        self.step = step
        self.episode_max_turns = max_turns
        super().__init__(
            max_turns=rollout_max_turns,
            dataset=dataset,
            rubric=rubric or vf.Rubric(funcs=[episode_reward(masked_value)]),
            **options,
        )

    async def setup_state(self, state: vf.State) -> vf.State:
        """Reset the row's episode: its observation is the prompt, its tools the tools."""
        info = state.get("info") or {}
        if not isinstance(info, Mapping) or not isinstance(info.get("task_id"), str):
            raise vf.InfraError("a world episode's row needs info.task_id")
        step = info.get("step", self.step)
        try:
            started = await self.client.reset(
                self.world_id,
                info["task_id"],
                seed=info.get("seed"),
                run_id=self.run_id,
                step=step if isinstance(step, int) else None,
                max_turns=self.episode_max_turns,
            )
        except RewardError as exc:
            raise vf.InfraError(f"no episode of task {info['task_id']!r}: {exc}") from exc
        state["episode_id"] = started.episode_id
        state["episode_sent"] = 0  # trajectory steps whose message the episode has
        state["episode_done"] = False
        state["episode_reward"] = None  # once done: the episode's reward (None: masked)
        state["episode_result"] = None  # once done: {verdict, sample}
        # whose words each environment message is (the reset's, then each step's), for a
        # trainer that learns to predict the environment (ECHO: trainer_bridge.echo)
        state["episode_sources"] = list(started.sources)
        state["prompt"] = messages_of(started.messages)
        state["tool_defs"] = tools_of(started.tools)
        return state

    async def env_response(self, messages: Messages, state: vf.State, **kwargs: Any) -> Messages:
        """The agent's last message as a step; the world's or the user's answer."""
        last = messages[-1] if messages else None
        action = action_of(last if isinstance(last, AssistantMessage) else None)
        try:
            stepped = await self.client.step(state["episode_id"], action)
        except RewardError as exc:
            raise vf.InfraError(f"episode {state['episode_id']}: {exc}") from exc
        state["episode_sent"] = len(state["trajectory"])
        state.setdefault("episode_sources", []).extend(stepped.sources)
        answer = messages_of(stepped.messages)
        if stepped.done:
            _ended(state, stepped)
            state["final_env_response"] = answer
        return answer

    @vf.cleanup
    async def end_episode(self, state: vf.State) -> None:
        """An episode still open when the rollout stops is ended by the agent, with its last
        message when the episode has not had it yet; a failure leaves the rollout masked."""
        episode_id = state.get("episode_id")
        if not episode_id or state.get("episode_done"):
            return
        trajectory = state.get("trajectory") or []
        last = None
        if len(trajectory) > state.get("episode_sent", 0):
            completion = trajectory[-1]["completion"]
            last = completion[-1] if completion else None
        try:
            _ended(state, await self.client.step(episode_id, action_of(last), end=True))
        except RewardError as exc:
            log.warning("episode %s was not ended: %s", episode_id, exc)
            state["episode_error"] = str(exc)
