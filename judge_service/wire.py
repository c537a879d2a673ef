"""HTTP request and response models: the wire contract (docs/api.md).

This module imports nothing else of the package, so a trainer node can use it
(through ``trainer_bridge``) with only pydantic installed.
"""

from __future__ import annotations

import email.utils
import math
import time
from datetime import datetime
from typing import Annotated, Literal, NotRequired, TypeVar, overload

from pydantic import (
    AfterValidator,
    BaseModel,
    BeforeValidator,
    ConfigDict,
    Field,
    JsonValue,
    StringConstraints,
)
from typing_extensions import TypedDict  # pydantic takes typing's only from Python 3.12

#: The control characters, as a regular-expression class body: no id or name holds one.
CONTROL_CHARACTERS = r"\x00-\x1f\x7f"
#: Ids, run names and keys: printable, no control characters, bounded.
Identifier = Annotated[
    str,
    StringConstraints(min_length=1, max_length=256, pattern=rf"^[^{CONTROL_CHARACTERS}]+$"),
]


def _no_nul(text: str) -> str:
    if "\x00" in text:
        raise ValueError("NUL characters (\\u0000) are not allowed in this text")
    return text


#: People's text kept in text columns (review notes, edits, rubric descriptions): any
#: character but NUL, which PostgreSQL's text columns cannot hold (the write would be a 500).
#: Text from models and detectors is cleaned where it is stored instead (``safe_text``).
NoNul = AfterValidator(_no_nul)

#: The largest value of the database's INTEGER columns (32-bit on PostgreSQL).
DB_INT_MAX = 2**31 - 1
#: A count, id, step, version or offset that reaches the database: one past its range is
#: refused (422) where it enters, not by the database (500). Query, path and body alike.
DbInt = Annotated[int, Field(ge=0, le=DB_INT_MAX)]

FailureKind = Literal[
    "judge_failed", "below_quorum", "timeout", "bad_sample", "flagged_hack", "internal_error"
]
BatchStatus = Literal["queued", "running", "done"]
#: What becomes of a flagged sample's reward (docs/audit.md): floored, scaled or masked.
PenaltyName = Literal["floor", "scale", "mask"]
Role = Literal["trainer", "reviewer", "admin"]


def parse_retry_after(value: str | None) -> float | None:
    """Seconds a ``Retry-After`` header value asks a client to wait, or None if it asks nothing.

    Delta-seconds or an HTTP date (RFC 9110); a date in the past is 0. The service sends the
    header (a 503 while no worker is alive) and judge servers send it (a 429): the one parser
    of both the model client and ``trainer_bridge``, which may import this module alone.
    """
    if value is None:
        return None
    try:
        seconds = float(value)
    except ValueError:
        parsed = email.utils.parsedate_tz(value)
        if parsed is None:
            return None
        seconds = email.utils.mktime_tz(parsed) - time.time()
    return max(0.0, seconds) if math.isfinite(seconds) else None


class _Strict(BaseModel):
    """Unknown fields are errors, so a typo like ``rubirc`` is reported, not ignored."""

    model_config = ConfigDict(extra="forbid")


class ToolCallFunction(BaseModel):
    name: str
    arguments: str | dict[str, JsonValue] = ""


class ToolCall(BaseModel):
    id: str | None = None
    type: str = "function"
    function: ToolCallFunction


class Message(BaseModel):
    """An OpenAI-style chat message, tool calls and tool results included."""

    model_config = ConfigDict(extra="allow")

    role: Literal["system", "developer", "user", "assistant", "tool", "function"]
    content: str | list[dict[str, JsonValue]] | None = None
    name: str | None = None
    tool_calls: list[ToolCall] | None = None
    tool_call_id: str | None = None


TextOrMessages = str | list[Message]
Reference = str | int | float | list[str | int | float] | None


class SampleIn(_Strict):
    """One rollout. Only ``id``, ``prompt`` and ``completion`` are required."""

    id: Identifier
    group_id: Identifier | None = None
    prompt: TextOrMessages
    completion: TextOrMessages
    reference: Reference = None
    context: list[str] | None = None
    metadata: dict[str, JsonValue] = Field(default_factory=dict)


class JudgeSpecObject(BaseModel):
    """``{"name": ..., "weight": ..., <options>}``; extra keys are the judge's options."""

    model_config = ConfigDict(extra="allow")

    name: Annotated[str, StringConstraints(min_length=1, max_length=256)]
    weight: float = Field(default=1.0, ge=0, allow_inf_nan=False)


JudgeSpec = Annotated[str, StringConstraints(min_length=1, max_length=256)] | JudgeSpecObject


_Spec = TypeVar("_Spec")


@overload
def spec_object(value: str) -> dict[str, str]: ...
@overload
def spec_object(value: _Spec) -> _Spec: ...
def spec_object(value: object) -> object:
    """A model spec in its one form, the object ``{"name": ..., <options>}``: a plain model
    string ``s`` is ``{"name": s}``; anything else is returned as it is, to be validated."""
    return {"name": value} if isinstance(value, str) else value


class ModelSpecObject(BaseModel):
    """A model to call: ``{"name": <litellm model string>, <options>}``; extra keys are its
    call options (``api_base``, ``api_key``, ``timeout_s``, ...)."""

    model_config = ConfigDict(extra="allow")

    name: Annotated[str, StringConstraints(min_length=1, max_length=256)]


#: A model given as a plain model string or as an object, always read as the object, so
#: what is stored and what workers read has one form.
ModelSpec = Annotated[ModelSpecObject, BeforeValidator(spec_object)]


class RewardRequest(_Strict):
    """``POST /v1/rewards``: one batch of rollouts to score."""

    samples: list[SampleIn] = Field(min_length=1)
    rubric: Identifier | None = None
    judges: list[JudgeSpec] | None = Field(default=None, min_length=1)
    aggregator: Identifier | None = None
    quorum: Annotated[DbInt, Field(ge=1)] | None = None
    run_id: Identifier | None = None
    step: DbInt | None = None
    idempotency_key: Identifier | None = None
    wait: bool = True
    timeout_s: float | None = Field(default=None, gt=0)
    penalty: PenaltyName | None = None
    detectors: list[Identifier] | None = None
    hindsight_judges: list[JudgeSpec] | None = Field(default=None, min_length=1)
    calibrate: bool = Field(
        default=False,
        description="Map each judge's score through its isotonic calibration against human "
        "labels (GET /v1/judges/agreement) before consensus. Off by default.",
    )
    detail: Literal["full", "compact"] = Field(
        default="full",
        description="`compact` answers each result without its `judges` and `components`. "
        "Both are stored all the same: GET /v1/rewards/{batch_id} returns them. For trainers "
        "that read only rewards, masks and hack scores: less to build, send and parse per step.",
    )


class JudgeResult(BaseModel):
    judge: str
    score: float | None = None
    rationale: str | None = None
    error: str | None = None


class FindingOut(BaseModel):
    """``basis``: what backs it (code, tool, output, narration, model); only code, tool and
    output findings change a reward. ``fact`` points at the act, ``narration`` quotes what the
    agent said for or against it."""

    detector: str
    kind: str
    severity: Literal["info", "low", "medium", "high"]
    confidence: float
    evidence: str
    basis: str | None = None
    fact: str | None = None
    narration: str | None = None


class SampleResult(BaseModel):
    """One reward. ``valid: false`` means masked: ``reward`` is null, never a silent 0."""

    id: str
    reward: float | None
    valid: bool
    failure_kind: FailureKind | None = None
    failure_reason: str | None = None
    raw_reward: float | None = None
    penalty: float = 0.0
    hack_score: float = 0.0
    components: dict[str, float] = Field(default_factory=dict)
    judges: list[JudgeResult] = Field(default_factory=list)
    agreement: float | None = None
    findings: list[FindingOut] = Field(default_factory=list)


#: What a ``detail: "compact"`` answer leaves out of each result.
COMPACT_RESULT_OMITS = frozenset({"judges", "components"})


class GroupStats(BaseModel):
    reward_std: float
    has_advantage: bool


class Usage(BaseModel):
    judge_calls: int = 0
    cache_hits: int = 0
    prompt_tokens: int = 0
    completion_tokens: int = 0
    cost_usd: float = 0.0


class Progress(BaseModel):
    scored: int
    total: int


class RewardResponse(BaseModel):
    """The answer to a batch. ``results`` is in sample order once ``status`` is ``done``."""

    batch_id: str
    status: BatchStatus
    rubric: str | None = None
    run_id: str | None = None
    step: int | None = None
    progress: Progress
    results: list[SampleResult] = Field(default_factory=list)
    groups: dict[str, GroupStats] = Field(default_factory=dict)
    usage: Usage = Field(default_factory=Usage)
    #: What the trainer should know about this batch as a whole, e.g. that its judges
    #: cannot score it before ``timeout_s`` at their measured rate.
    warnings: list[str] = Field(default_factory=list)

    def to_json(self, *, compact: bool = False) -> str:
        """The answer as JSON; ``compact`` leaves each result's judges and components out."""
        if not compact:
            return self.model_dump_json()
        return self.model_dump_json(exclude={"results": {"__all__": set(COMPACT_RESULT_OMITS)}})


class RewardFields(TypedDict):
    """The part of a ``SampleResult`` a trainer acts on."""

    id: str
    reward: float | None
    valid: bool
    hack_score: NotRequired[float]  # 0.0 when absent, as in ``SampleResult``


class RewardFieldsAnswer(TypedDict):
    """A ``RewardResponse`` read for its rewards only (``AsyncRewardClient.rewards``): the
    rest of the answer is skipped, which reads a GRPO step's answer ~3x faster."""

    batch_id: str
    status: BatchStatus
    results: list[RewardFields]


class OpenRLHFRequest(BaseModel):
    """OpenRLHF's remote reward protocol (``POST /get_reward``)."""

    query: list[str] = Field(min_length=1)
    prompts: list[str] | None = None
    labels: list[JsonValue] | None = None


class OpenRLHFResponse(BaseModel):
    rewards: list[float]
    scores: list[float]
    extra_logs: dict[str, list[float]]  # per sample: valid (1.0 or 0.0), hack_score, ...
    #: As in ``RewardResponse``: e.g. the judges cannot score the batch before its deadline.
    warnings: list[str] = Field(default_factory=list)


#: A project name (a short slug), or ``*``: every project (admin keys only).
PROJECT_PATTERN = r"^([a-z0-9][a-z0-9_-]{0,62}|\*)$"


class KeyCreateRequest(_Strict):
    role: Role
    name: Identifier | None = None
    project: str | None = Field(
        None,
        pattern=PROJECT_PATTERN,
        description="The key's project (default: the creating key's; `default` for an "
        "all-projects admin); `*`: every project, for admin keys",
    )


class KeyCreated(BaseModel):
    id: str
    role: Role
    project: str = "default"
    key: str


class KeyInfo(BaseModel):
    """A key as admins see it: never the key itself, which was shown once at creation."""

    id: str
    name: str | None = None
    role: Role
    project: str
    created_at: datetime
    revoked_at: datetime | None = None


class KeyList(BaseModel):
    keys: list[KeyInfo]


class ErrorDetail(BaseModel):
    code: str
    message: str
    detail: JsonValue = None


class ErrorBody(BaseModel):
    error: ErrorDetail
