"""HTTP models of the episode routes: reset, step, state, and verify.

Imports only ``judge_service.wire`` of the package. An action is any JSON on purpose: a
malformed one is the engine's to answer (a tool error in the observation, as a real backend
would), not a 422; only a body that is not an object with ``action`` is refused. The verdict
and the scored sample are passed through as JSON (their shapes: :mod:`judge_service.world.
verify` and the wire ``SampleResult``).
"""

from __future__ import annotations

from datetime import datetime
from typing import Annotated, Any, Literal

from pydantic import BaseModel, Field, JsonValue, StrictBool

from judge_service.wire import DbInt, Identifier, ModelSpec, _Strict

#: The most turns an episode may be given: far above any traced conversation, low enough
#: that one episode's stored messages stay a few megabytes.
MAX_TURNS = 1000
#: The most messages a recorded trajectory to verify may hold.
MAX_MESSAGES = 10_000

Message = dict[str, JsonValue]


class EpisodeReset(_Strict):
    """``POST /v1/worlds/{id}/episodes``: which task to play, and as which sample."""

    task_id: Identifier = Field(description="A forge trace task of one of the world's jobs.")
    seed: DbInt = Field(default=0, description="Picks which traced run's user is replayed.")
    run_id: Identifier | None = Field(
        default=None, description="The run the episode's scored sample belongs to."
    )
    step: DbInt | None = Field(default=None, description="The training step of that sample.")
    max_turns: Annotated[int, Field(ge=1, le=MAX_TURNS)] = Field(
        default=30, description="Agent turns before the episode ends by itself."
    )
    user_model: ModelSpec | None = Field(
        default=None,
        description="A model that plays the user (its goal and the traced user's facts, "
        "told only when asked); unset: the traced user's turns are replayed.",
    )
    reference: Literal["task", "none"] = Field(
        default="task",
        description="`task`: the episode is rewarded against the task's reference end state "
        "(a task without one is refused). `none`: played without one, for fidelity checks "
        "and world-model training; its reward is null.",
    )
    simulator: ModelSpec | None = Field(
        default=None,
        description="A model that answers the tool calls nothing learned from the traces "
        "answers (path e), given the tool's schema, the entities the call names and the "
        "most similar traced calls; unset: such a call gets an error saying so.",
    )


class EpisodeStep(_Strict):
    """``POST /v1/episodes/{id}/step``: the agent's next assistant message."""

    action: JsonValue = Field(
        description="An assistant message: `content` and/or `tool_calls` (OpenAI format). "
        "Anything else is answered with a tool error in the observation."
    )
    end: StrictBool = Field(default=False, description="The agent ends the episode.")


class VerifyRequest(_Strict):
    """``POST /v1/worlds/{id}/verify``: a trajectory recorded elsewhere, for a task."""

    task_id: Identifier
    messages: list[Message] = Field(max_length=MAX_MESSAGES)


class MessageSource(BaseModel):
    """Whose words a message is (:mod:`judge_service.episodes.sources`), so a trainer can tell
    the environment's tokens from the agent's."""

    source: Literal["system", "agent", "world", "user"]
    path: str | None = Field(
        default=None,
        description="A world's answer: the path that answered it, (a) `read`, (b) "
        "`transition`, (c) `function`, (d) `replay`, (e) `model_needed`, or `rejected`.",
    )
    simulated: bool | None = Field(
        default=None,
        description="A world's answer: true when a model made it up (path e), so that "
        "training can leave it out.",
    )
    by: Literal["replay", "model"] | None = Field(
        default=None, description="A user's turn: the traced user's, or a model's."
    )


class Observation(BaseModel):
    messages: list[dict[str, Any]]
    sources: list[MessageSource] = Field(
        default_factory=list, description="One per message, in order: whose words it is."
    )


class ResetObservation(Observation):
    tools: list[dict[str, Any]] = Field(description="The tool schemas the traces offered.")


class EpisodeStarted(BaseModel):
    episode_id: str
    observation: ResetObservation


class StepAnswer(BaseModel):
    observation: Observation
    done: bool
    reward: float | None = Field(
        default=None,
        description="Once done: the scored sample's reward (the end-state judge and the "
        "audit; 0.0 when an action was not a chat message); None while the episode runs, and "
        "when the sample is masked or could not be scored (`result` says why).",
    )
    result: dict[str, Any] | None = Field(
        default=None, description="Once done: `{verdict, sample}` (sample: a SampleResult)."
    )


class EpisodeDetail(BaseModel):
    id: str
    world_id: str
    task_id: str
    status: Literal["open", "done"]
    run_id: str | None = None
    step: int | None = None
    seed: int
    turns: int
    max_turns: int
    ended_by: str | None = None
    messages: list[dict[str, Any]]
    sources: list[MessageSource] = Field(
        default_factory=list, description="One per message, in order: whose words it is."
    )
    touched: dict[str, Any] = Field(
        description="Each entity the episode's writes changed, in its current state."
    )
    answers: list[dict[str, Any]] = Field(
        description="Per tool answer: `message` (index), `tool`, `path` (a)-(e), `error`; "
        "a call the user made on their own side has `by: user` and its `answer`, and its "
        "`message` is the user's reply."
    )
    result: dict[str, Any] | None = None
    created_at: datetime
    updated_at: datetime


class VerifyAnswer(BaseModel):
    verdict: dict[str, Any]
    calls: list[dict[str, Any]] = Field(description="Per replayed call: `tool`, `path`, `error`.")
