"""TRL adapter for episodes: ``GRPOTrainer(environment_factory=...)`` rollouts in a world.

Why ``environment_factory`` and not ``rollout_func`` (TRL 1.16 takes both): an episode is an
environment with tools, which is what ``environment_factory`` is. TRL makes one environment
per rollout, calls its ``reset`` with the dataset row, exposes its public methods as the
model's tools, runs the tool-calling loop itself (vLLM or transformers, any chat template
with tool calling), masks the tool answers out of the loss, and hands the environments to the
reward functions. ``rollout_func`` would take all of that over: generation for every backend,
the token bookkeeping and the masks. Here nothing of TRL's generation is replaced.

The mapping, per rollout:

- ``reset(task_id=..., seed=...)`` opens an episode (as a sample of ``run_id`` at the
  trainer's current step) and returns the user's first turn, which TRL appends to the row's
  prompt; the row carries the traced system prompt (:meth:`WorldEpisodes.rows`);
- each world tool is a method with the tool's schema (name, arguments, descriptions), and a
  call is one step whose answer is the world's (one step per call, in the order made);
- TRL's loop ends at the first message without a tool call, so talking with the simulated
  user is a tool too (``user_tool``, default ``reply_to_user``): its answer is the user's
  reply, the conversation the traces had;
- the final message ends the episode (the agent ends it) in the reward function
  :meth:`WorldEpisodes.reward`, which returns each episode's reward: the scored sample's
  (end state against the reference, judges, audit), ``None`` when masked (TRL leaves it out
  of the advantage), never 0 for "unknown".

Use: ``episodes = WorldEpisodes.from_service(url, world_id, api_key=key, run_id="r1")``, then
``GRPOTrainer(model=..., args=..., train_dataset=episodes.dataset(),
processing_class=tokenizer, **episodes.trainer_kwargs())``.

ECHO (:mod:`trainer_bridge.echo`): ``WorldEpisodes(..., echo_coef=0.1, echo_on=("world",))``
and ``episodes.trainer(model=..., args=..., train_dataset=..., processing_class=...)``, a
:class:`~trainer_bridge.trl_echo.EchoGRPOTrainer` that adds the cross-entropy of the world's
answers (and with ``"user"`` the user's replies) to GRPO's loss; path (e) answers, a model's
guesses, only when ``echo_on`` names ``"simulated"``.
"""

from __future__ import annotations

import asyncio
import inspect
import json
import keyword
import logging
import re
from collections.abc import Iterable, Mapping, Sequence
from typing import Any, Literal

from trainer_bridge import echo
from trainer_bridge.client import RewardError
from trainer_bridge.episodes import AsyncEpisodeClient, EpisodeClient, EpisodeStep

log = logging.getLogger(__name__)

_JSON_TYPES: dict[str, type] = {
    "string": str,
    "integer": int,
    "number": float,
    "boolean": bool,
    "array": list,
    "object": dict,
}
#: What a tool answers once the episode has ended (the user ended it, or ``max_turns``).
ENDED = "the conversation has ended"
#: The tool that talks with the simulated user (a name no world tool may take).
USER_TOOL = "reply_to_user"
_USER_SCHEMA = {
    "description": "Send a message to the user (an answer, a question, a confirmation to ask "
    "for) and get the user's reply.",
    "parameters": {
        "type": "object",
        "properties": {"message": {"type": "string", "description": "What to say to the user."}},
        "required": ["message"],
    },
}


def _one_line(text: Any) -> str:
    return re.sub(r"\s+", " ", str(text or "")).strip()


def _hint(schema: Any) -> Any:
    """The Python type whose JSON schema (transformers' ``get_json_schema``) is closest to
    ``schema``: TRL renders a tool from its method's signature, not from a schema."""
    if not isinstance(schema, Mapping):
        return str
    values = schema.get("enum")
    if isinstance(values, list) and values and all(isinstance(v, str | int) for v in values):
        return Literal[tuple(values)]
    kind = schema.get("type")
    if isinstance(kind, list):
        kinds = [k for k in kind if k != "null"]
        kind = kinds[0] if len(kinds) == 1 else None
    if kind == "array":
        items = schema.get("items")
        return list[_hint(items)] if isinstance(items, Mapping) and items.get("type") else list
    return _JSON_TYPES.get(kind, str) if isinstance(kind, str) else str


def tool_method(name: str, schema: Mapping[str, Any], *, user: bool = False) -> Any:
    """A method that steps the episode with a call of tool ``name`` (``user``: a message to
    the user), whose signature and docstring give TRL the tool's schema. Arguments whose
    names Python cannot take are left out of the schema (the model can still send them)."""
    parameters = schema.get("parameters") if isinstance(schema.get("parameters"), Mapping) else {}
    properties = parameters.get("properties") or {}
    required = set(parameters.get("required") or [])
    signature = [inspect.Parameter("self", inspect.Parameter.POSITIONAL_OR_KEYWORD)]
    annotations: dict[str, Any] = {"return": str}
    lines = [_one_line(schema.get("description")) or name]
    args = []
    for argument, spec in properties.items():
        if not argument.isidentifier() or keyword.iskeyword(argument) or argument == "self":
            continue
        hint = _hint(spec)
        default = inspect.Parameter.empty if argument in required else None
        signature.append(
            inspect.Parameter(
                argument, inspect.Parameter.KEYWORD_ONLY, default=default, annotation=hint
            )
        )
        annotations[argument] = hint
        about = spec.get("description") if isinstance(spec, Mapping) else None
        args.append(f"    {argument}: {_one_line(about) or argument}")
    if args:
        lines += ["", "Args:", *args]

    def tool(self: EpisodeEnvironment, **arguments: Any) -> str:
        if user:
            return self._say(str(arguments.get("message") or ""))
        return self._call(name, arguments)

    tool.__name__ = tool.__qualname__ = name
    tool.__doc__ = "\n".join(lines)
    tool.__signature__ = inspect.Signature(signature, return_annotation=str)  # type: ignore[attr-defined]
    tool.__annotations__ = annotations
    return tool


def _text(messages: Sequence[Mapping[str, Any]]) -> str:
    return "\n\n".join(str(m.get("content") or "") for m in messages if m.get("content"))


class EpisodeEnvironment:
    """One rollout's episode. Its public methods are the model's tools (TRL reads them off
    the class), so everything else here is private or an attribute."""

    _owner: WorldEpisodes  # set on the class that :meth:`WorldEpisodes.environment` makes

    def __init__(self) -> None:
        self.episode_id: str | None = None
        self.task_id: str | None = None
        self.end: EpisodeStep | None = None  # the step that ended the episode
        #: What each tool call returned, and whose words each part of it is (for ECHO)
        self.said: list[echo.Said] = []
        self._calls = 0

    def reset(self, **row: Any) -> str:
        """Open an episode of the row's ``task_id`` (and ``seed``); the user's first turn."""
        self._abandon()
        owner = self._owner
        task_id = row.get("task_id")
        if not isinstance(task_id, str):
            raise ValueError("a world episode's dataset row needs a task_id column")
        seed = row.get("seed")
        started = owner.client.reset(
            owner.world_id,
            task_id,
            seed=int(seed) if seed is not None else None,
            run_id=owner.run_id,
            step=owner.step,
            max_turns=owner.max_turns,
        )
        self.episode_id, self.task_id, self.end, self._calls = started.episode_id, task_id, None, 0
        self.said = []
        return _text([m for m in started.messages if m.get("role") != "system"])

    def _step(self, action: Mapping[str, Any]) -> str:
        """One step; its observation as text (the model reads it as the tool's answer),
        recorded in :attr:`said` with whose words each message of it is."""
        if self.episode_id is None or self.end is not None:
            self.said.append(echo.Said(ENDED))
            return ENDED
        stepped = self._owner.client.step(self.episode_id, action)
        sources = stepped.sources or [{}] * len(stepped.messages)
        parts = [
            (str(message.get("content") or ""), echo.label_of(source or None, message.get("role")))
            for message, source in zip(stepped.messages, sources, strict=True)
        ]
        if stepped.done:
            self.end = stepped
            parts.append((f"({ENDED})", echo.IGNORED))
        said = echo.said(parts)
        self.said.append(said)
        return said.text

    def _call(self, name: str, arguments: Mapping[str, Any]) -> str:
        """One tool call as one step: the world's answer."""
        self._calls += 1
        call = {
            "id": f"call_{self._calls}",
            "type": "function",
            "function": {"name": name, "arguments": json.dumps(arguments)},
        }
        return self._step({"role": "assistant", "content": "", "tool_calls": [call]})

    def _say(self, message: str) -> str:
        """A text message to the user as one step: the user's reply."""
        return self._step({"role": "assistant", "content": str(message)})

    def _abandon(self) -> None:
        """End an episode left open (its rollout was never scored), so that it does not
        count against the key's open episodes."""
        if self.episode_id is None or self.end is not None:
            return
        try:
            self._owner.client.step(self.episode_id, {"role": "assistant", "content": ""}, end=True)
        except RewardError as exc:
            log.warning("episode %s was left open: %s", self.episode_id, exc)


def _final_action(completion: Any) -> dict[str, Any]:
    """The rollout's last assistant message as the action that ends the episode: its text
    only (tool calls left in it were never run)."""
    if isinstance(completion, str):
        return {"role": "assistant", "content": completion}
    last = completion[-1] if isinstance(completion, list) and completion else {}
    if isinstance(last, Mapping) and last.get("role") == "assistant":
        content = last.get("content")
        return {"role": "assistant", "content": content if isinstance(content, str) else ""}
    return {"role": "assistant", "content": ""}


class WorldEpisodes:
    """A world's episodes for ``GRPOTrainer``: the environment class, the reward function,
    the callback that tells resets the training step, and the dataset rows.

    ``tools`` are the OpenAI schemas of the world's tools (:meth:`from_service` reads them
    off the world's tasks). ``played`` lists every scored episode, for a summary.
    ``echo_coef`` and ``echo_on``: ECHO's weight and tokens (:meth:`trainer`).
    """

    def __init__(
        self,
        base_url: str,
        world_id: str,
        tools: Sequence[Mapping[str, Any]],
        *,
        api_key: str | None = None,
        run_id: str | None = None,
        max_turns: int | None = None,
        user_tool: str | None = USER_TOOL,
        tasks: Sequence[Mapping[str, Any]] = (),
        timeout_s: float = 600.0,
        echo_coef: float = 0.0,
        echo_on: Sequence[str] = (echo.WORLD,),
        **client_options: Any,
    ) -> None:
        unknown = set(echo_on) - set(echo.ENVIRONMENT)
        if unknown or echo_coef < 0:
            raise ValueError(
                f"echo_coef must be >= 0 and echo_on within {echo.ENVIRONMENT}: "
                f"got {echo_coef}, {sorted(unknown)}"
            )
        self.echo_coef, self.echo_on = float(echo_coef), tuple(echo_on)
        self.client = EpisodeClient(base_url, api_key, timeout=timeout_s, **client_options)
        self.async_client = AsyncEpisodeClient(
            base_url, api_key, timeout=timeout_s, **client_options
        )
        self.world_id = world_id
        self.run_id = run_id
        self.max_turns = max_turns
        self.step: int | None = None  # the trainer's global step, from the callback
        self.tasks = list(tasks)
        self.tools = list(tools)
        self.played: list[dict[str, Any]] = []
        self.environment = self._environment_class(tools, user_tool)

    @classmethod
    def from_service(
        cls,
        base_url: str,
        world_id: str,
        *,
        api_key: str | None = None,
        task_ids: Iterable[str] | None = None,
        tool_names: Iterable[str] | None = None,
        **options: Any,
    ) -> WorldEpisodes:
        """The world's trace tasks that have a reference end state (or ``task_ids`` of them),
        and the tools they offer (or ``tool_names`` of them: the rest stay unknown to the
        model, which keeps a small model's prompt short), read from the service."""
        with EpisodeClient(base_url, api_key) as client:
            world = client.world(world_id)
            tasks = [
                task
                for job in world.get("jobs") or []
                for task in client.tasks(job)
                if task.get("kind") == "trace" and task.get("end_state")
            ]
        if task_ids is not None:
            wanted = list(task_ids)
            by_id = {task["id"]: task for task in tasks}
            missing = [t for t in wanted if t not in by_id]
            if missing:
                raise ValueError(f"not trace tasks of world {world_id!r}: {missing[:10]}")
            tasks = [by_id[t] for t in wanted]
        tools: dict[str, Mapping[str, Any]] = {}
        for task in tasks:
            for schema in task.get("tools") or []:
                function = schema.get("function", schema) if isinstance(schema, Mapping) else {}
                if isinstance(function.get("name"), str):
                    tools.setdefault(function["name"], schema)
        if tool_names is not None:
            kept = set(tool_names)
            tools = {name: schema for name, schema in tools.items() if name in kept}
        return cls(
            base_url, world_id, list(tools.values()), api_key=api_key, tasks=tasks, **options
        )

    def _environment_class(
        self, tools: Sequence[Mapping[str, Any]], user_tool: str | None
    ) -> type[EpisodeEnvironment]:
        methods: dict[str, Any] = {"_owner": self}
        for schema in tools:
            function = schema.get("function", schema)
            name = function.get("name") if isinstance(function, Mapping) else None
            if not isinstance(name, str) or not name.isidentifier() or name.startswith("_"):
                log.warning("tool %r left out: TRL needs a Python name", name)
                continue
            if name in methods or hasattr(EpisodeEnvironment, name) or name == user_tool:
                raise ValueError(f"tool {name!r} clashes with a name the environment needs")
            methods[name] = tool_method(name, function)
        if user_tool:
            methods[user_tool] = tool_method(user_tool, _USER_SCHEMA, user=True)
        return type("WorldEpisode", (EpisodeEnvironment,), methods)

    def rows(self, seeds: Sequence[int] = (0,), *, system: bool = True) -> list[dict[str, Any]]:
        """Dataset rows, one per task and seed: ``prompt`` (the task's traced system prompt,
        unless ``system`` is false, and an empty user turn that the reset fills), ``task_id``
        and ``seed``. A GRPO group is one row, so its rollouts meet the same user."""
        rows = []
        for task in self.tasks:
            prompt = task.get("prompt") if isinstance(task.get("prompt"), list) else []
            head = [
                {"role": "system", "content": str(m.get("content") or "")}
                for m in prompt[:1]
                if isinstance(m, Mapping) and m.get("role") == "system" and system
            ]
            for seed in seeds:
                rows.append(
                    {
                        "prompt": [*head, {"role": "user", "content": ""}],
                        "task_id": task["id"],
                        "seed": seed,
                    }
                )
        return rows

    def dataset(self, seeds: Sequence[int] = (0,), *, system: bool = True) -> Any:
        """:meth:`rows` as a ``datasets.Dataset``."""
        from datasets import Dataset

        return Dataset.from_list(self.rows(seeds, system=system))

    async def reward(
        self,
        prompts: list[Any],
        completions: list[Any],
        environments: list[EpisodeEnvironment] | None = None,
        **kwargs: Any,
    ) -> list[float | None]:
        """TRL's reward signature: end every rollout's episode with its final message, and
        return the episodes' rewards (``None``: masked)."""
        if environments is None:
            raise ValueError("the world episode reward needs GRPOTrainer(environment_factory=...)")
        ends = await asyncio.gather(
            *(self._end(env, done) for env, done in zip(environments, completions, strict=True)),
            return_exceptions=True,
        )
        rewards: list[float | None] = []
        for env, end in zip(environments, ends, strict=True):
            if isinstance(end, BaseException):
                log.warning("episode %s gave no reward: %s", env.episode_id, end)
                rewards.append(None)
                continue
            verdict = (end.result or {}).get("verdict") or {}
            self.played.append(
                {
                    "episode_id": env.episode_id,
                    "task_id": env.task_id,
                    "step": self.step,
                    "reward": end.reward,
                    "reached": verdict.get("reached"),
                    "hack_score": end.sample.get("hack_score", 0.0),
                }
            )
            rewards.append(end.reward)
        log_metric = kwargs.get("log_metric")
        if callable(log_metric) and rewards:
            valid = [r for r in rewards if r is not None]
            log_metric("world/valid_fraction", len(valid) / len(rewards))
            log_metric("world/reached", sum(r >= 1.0 for r in valid) / len(rewards))
        return rewards

    async def _end(self, env: EpisodeEnvironment, completion: Any) -> EpisodeStep:
        if env.end is not None:
            return env.end
        if env.episode_id is None:
            raise ValueError("the rollout's environment was never reset")
        env.end = await self.async_client.step(env.episode_id, _final_action(completion), end=True)
        return env.end

    @property
    def callback(self) -> Any:
        """A ``TrainerCallback`` that keeps :attr:`step` at the trainer's global step, so each
        episode is a sample of the step that generated it."""
        from transformers import TrainerCallback

        owner = self

        class EpisodeStepCallback(TrainerCallback):
            def on_step_begin(self, args: Any, state: Any, control: Any, **kwargs: Any) -> None:
                owner.step = int(state.global_step)

        return EpisodeStepCallback()

    def trainer_kwargs(self) -> dict[str, Any]:
        """``environment_factory``, ``reward_funcs`` and ``callbacks`` for ``GRPOTrainer``.
        With ``echo_coef`` set, a plain ``GRPOTrainer`` would leave ECHO out: use
        :meth:`trainer`."""
        if self.echo_coef:
            raise ValueError("echo_coef needs the ECHO trainer: use WorldEpisodes.trainer(...)")
        return self._trainer_kwargs()

    def trainer(self, **kwargs: Any) -> Any:
        """A :class:`~trainer_bridge.trl_echo.EchoGRPOTrainer` on these episodes, with
        ``echo_coef`` and ``echo_on``; ``kwargs`` are ``GRPOTrainer``'s (``model``, ``args``,
        ``train_dataset``, ``processing_class``, ...). It logs the environment tokens'
        cross-entropy per source at each step, ``echo_coef`` 0 included."""
        from trainer_bridge.trl_echo import EchoGRPOTrainer

        given = self._trainer_kwargs()
        callbacks = [*given.pop("callbacks"), *(kwargs.pop("callbacks", None) or [])]
        return EchoGRPOTrainer(
            **kwargs,
            **given,
            callbacks=callbacks,
            echo_coef=self.echo_coef,
            echo_on=self.echo_on,
        )

    def _trainer_kwargs(self) -> dict[str, Any]:
        reward = self.reward

        async def world_episode(*args: Any, **kwargs: Any) -> list[float | None]:
            return await reward(*args, **kwargs)

        return {
            "environment_factory": self.environment,
            "reward_funcs": [world_episode],
            "callbacks": [self.callback],
        }

    def close(self) -> None:
        self.client.close()
