"""HTTP models of the forge routes: upload options, jobs, tasks, a run's difficulty tiers.

Imports only ``judge_service.wire`` of the package. Uploads are JSONL bodies; their options
come as query parameters (a model spec is a litellm model string or a JSON object; either is
read, and stored, as the object ``{"name": ..., <options>}``).
"""

from __future__ import annotations

from datetime import datetime
from typing import Annotated, Any, Literal

from pydantic import BaseModel, Field, JsonValue, StringConstraints, model_validator

from judge_service.wire import ModelSpec, _Strict

Tier = Literal["too_easy", "learnable", "too_hard"]
RubricName = Annotated[
    str, StringConstraints(min_length=1, max_length=128, pattern=r"^[A-Za-z0-9][A-Za-z0-9._-]*$")
]


ToolName = Annotated[str, StringConstraints(min_length=1, max_length=128)]


class ToolOverrides(_Strict):
    """Tools to take as state-changing (``writes``) or read-only (``reads``), whatever the
    schemas and the traces say (query: ``tools.writes=a,b``)."""

    writes: list[ToolName] = Field(default_factory=list, max_length=500)
    reads: list[ToolName] = Field(default_factory=list, max_length=500)

    @model_validator(mode="after")
    def _apart(self) -> ToolOverrides:
        both = sorted(set(self.writes) & set(self.reads))
        if both:
            raise ValueError(f"a tool cannot be both a write and a read: {', '.join(both)}")
        return self


class TraceOptions(_Strict):
    """``POST /v1/forge/traces``: which rubric mined items join, the mining model (it also
    writes the tasks' goal lines), and read/write overrides for tools."""

    rubric: RubricName = "production-traces"
    miner: ModelSpec | None = None
    max_items: int = Field(default=3, ge=1, le=20)
    mine: bool = Field(
        default=True, description="Mine the families with failed traces for rubric items."
    )
    policy: bool = Field(
        default=False,
        description="Ask the miner, per trace, where the agent broke its system prompt's "
        "rules: the sign policy_violation (needs a miner).",
    )
    hindsight: bool = Field(
        default=True,
        description="Where a task's runs disagree, ask the hindsight panel (hindsight_judges, "
        "else the miner) which candidate end state the request called for; its choice "
        "weighs into the proposed reference. Off without a model.",
    )
    hindsight_judges: list[ModelSpec] = Field(default_factory=list, max_length=5)
    tools: ToolOverrides | None = None

    @model_validator(mode="after")
    def _policy_needs_a_model(self) -> TraceOptions:
        if self.policy and self.miner is None:
            raise ValueError("policy needs a miner: the model that reads the conversations")
        return self


class DocumentOptions(_Strict):
    """``POST /v1/forge/documents``. Unset models fall back to the generator's, and the
    generator's to the first of ``JS_DEFAULT_JUDGES`` (else the local model)."""

    generator: ModelSpec | None = None
    verifiers: list[ModelSpec] | None = Field(default=None, min_length=1, max_length=9)
    solver: ModelSpec | None = None
    samples_per_task: int = Field(default=4, ge=1, le=64)
    max_tasks: int = Field(default=50, ge=1, le=10_000)
    min_pass: float = Field(default=0.0, ge=0.0, le=1.0)
    max_pass: float = Field(default=0.75, ge=0.0, le=1.0)
    chunk_chars: int = Field(default=1500, ge=200, le=20_000)

    @model_validator(mode="after")
    def _band(self) -> DocumentOptions:
        if self.min_pass >= self.max_pass:
            raise ValueError("min_pass must be below max_pass")
        return self


class ForgeFamily(BaseModel):
    id: str
    name: str
    terms: list[str]
    status: Literal["pending", "approved", "retired"]
    tasks: int
    failed_traces: int


class ForgeJob(BaseModel):
    """A forge job. ``counts``: for traces ``traces, set_aside, candidates,
    duplicates_merged, tasks, families, failed_traces``; for documents ``documents, chunks,
    candidates, tasks, families`` and ``dropped`` by reason. A traces job's ``result.set_aside``
    lists each trace it could not forge (``trace_id``, ``line``, ``reason``)."""

    id: str
    kind: Literal["traces", "documents"]
    status: Literal["queued", "running", "done", "failed"]
    options: dict[str, JsonValue]
    counts: dict[str, JsonValue] = Field(default_factory=dict)
    result: dict[str, JsonValue] = Field(default_factory=dict)
    families: list[ForgeFamily] = Field(default_factory=list)
    created_at: datetime
    finished_at: datetime | None = None
    error: str | None = None


class ForgeTask(BaseModel):
    id: str
    job_id: str
    family_id: str
    family: str
    family_status: Literal["pending", "approved", "retired"]
    kind: Literal["trace", "document"]
    prompt: Any
    tools: list[JsonValue] | None = None
    reference: JsonValue = None
    source: dict[str, JsonValue]
    with_context: float | None = None
    without_context: float | None = None
    duplicates: int
    failures: list[dict[str, JsonValue]] = Field(default_factory=list)
    tier: Tier | None = None
    tier_run_id: str | None = None
    goal: str | None = Field(default=None, description="Trace tasks: the one-line goal.")
    end_state: dict[str, JsonValue] | None = Field(
        default=None,
        description="Trace tasks: the reference end state, entity key -> state; null while "
        "no end state is agreed.",
    )
    end_state_source: (
        Literal["consensus", "single_trace", "proposed", "review", "upload"] | None
    ) = None
    end_states: list[dict[str, JsonValue]] = Field(
        default_factory=list,
        description="The distinct end states of the task's repeats, most common first: "
        "`{end_state, count, traces}`.",
    )
    needs_review: bool = False


class EndStateChoice(_Strict):
    """``POST /v1/tasks/{id}/end_state``: a reviewer picks a candidate (``choose``, its index
    in ``end_states``) or supplies the reference (``end_state``)."""

    choose: int | None = Field(default=None, ge=0)
    end_state: dict[str, JsonValue] | None = None
    note: str | None = Field(default=None, max_length=2000)

    @model_validator(mode="after")
    def _one(self) -> EndStateChoice:
        if (self.choose is None) == (self.end_state is None):
            raise ValueError("give exactly one of choose and end_state")
        return self


class ForgeTaskList(BaseModel):
    tasks: list[ForgeTask]


class RunTask(BaseModel):
    """One task of a run: steps it appeared in, pass rate (valid samples with reward >= 0.5),
    mean per-step reward std, and its tier (none when no sample was valid)."""

    task_id: str
    steps: list[int]
    samples: int
    valid: int
    pass_rate: float | None
    mean_reward: float | None
    reward_std: float | None
    tier: Tier | None
    stored: bool = Field(description="Whether the task is a forged task that took this tier.")


class RunTasks(BaseModel):
    run_id: str
    tasks: list[RunTask]
    tiers: dict[str, int] = Field(description="How many tasks are in each tier.")
    steps: dict[int, dict[str, float]] = Field(description="Per step, each tier's share.")
