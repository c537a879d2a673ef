"""HTTP models of the rubric, mining, review, label and agreement routes.

Split from :mod:`judge_service.wire` (the reward contract trainers use), so a trainer
node's import stays small. Imports only ``judge_service.wire`` of the package.
"""

from __future__ import annotations

from datetime import datetime
from typing import Annotated, Literal

from pydantic import BaseModel, Field, JsonValue, StringConstraints, field_validator

from judge_service.wire import Identifier, JudgeSpec, NoNul, PenaltyName, _Strict

#: Rubric names and criterion ids: they appear in URLs, in ``name@N`` and in component keys.
Slug = Annotated[
    str, StringConstraints(min_length=1, max_length=128, pattern=r"^[A-Za-z0-9][A-Za-z0-9._-]*$")
]
Decision = Literal["approve", "reject", "edit"]
HumanLabel = Literal["good", "bad"]
ReviewKind = Literal["rubric_item", "hack_finding", "disagreement", "task_family"]
ReviewStatus = Literal["pending", "approved", "rejected", "edited"]


class CriterionIn(_Strict):
    """A yes/no rubric item. A negative weight marks a pitfall (met means worse)."""

    id: Slug
    text: Annotated[
        str, StringConstraints(min_length=1, max_length=2000, strip_whitespace=True), NoNul
    ]
    weight: float = Field(default=1.0, ge=-100, le=100)
    tags: list[Annotated[str, StringConstraints(min_length=1, max_length=64), NoNul]] = Field(
        default_factory=list
    )

    @field_validator("weight")
    @classmethod
    def _not_zero(cls, value: float) -> float:
        if value == 0:
            raise ValueError("a weight of 0 would make the criterion count for nothing")
        return value


class RubricCreate(_Strict):
    """``POST /v1/rubrics``, and the format of rubric YAML files."""

    name: Slug
    description: Annotated[str, NoNul] = Field(default="", max_length=4000)
    criteria: list[CriterionIn] = Field(min_length=1, max_length=200)
    prompts: dict[Slug, Annotated[str, NoNul]] = Field(default_factory=dict)
    penalty: PenaltyName | None = None

    @field_validator("criteria")
    @classmethod
    def _unique_ids(cls, criteria: list[CriterionIn]) -> list[CriterionIn]:
        seen: set[str] = set()
        repeated = [c.id for c in criteria if c.id in seen or seen.add(c.id)]
        if repeated:
            raise ValueError(f"criterion ids must be unique; repeated: {', '.join(repeated)}")
        return criteria


class CriterionOut(BaseModel):
    id: str
    text: str
    weight: float
    tags: list[str] = Field(default_factory=list)


class RubricOut(BaseModel):
    """One immutable rubric version. ``ref`` is ``name@version``."""

    name: str
    version: int
    ref: str
    active: bool
    status: str
    description: str
    criteria: list[CriterionOut]
    prompts: dict[str, str] = Field(default_factory=dict)
    penalty: str | None = None
    created_at: datetime
    created_by: str | None = None
    source: str | None = None


class RubricSummary(BaseModel):
    name: str
    version: int
    ref: str
    description: str
    criteria: int
    versions: int
    updated_at: datetime


class RubricList(BaseModel):
    rubrics: list[RubricSummary]


class RubricVersions(BaseModel):
    versions: list[RubricOut]


class MineRequest(_Strict):
    """``POST /v1/rubrics/{name}/mine``. ``model`` is a litellm model string or an object with
    ``name`` plus call options (``api_base``, ``api_key``, ``response_format_kind``)."""

    run_id: Identifier
    model: JudgeSpec | None = None
    max_items: int = Field(default=5, ge=1, le=20)


class MiningJob(BaseModel):
    id: str
    rubric: str
    run_id: str
    status: Literal["queued", "running", "done", "failed"]
    max_items: int
    created_at: datetime
    finished_at: datetime | None = None
    result: dict[str, JsonValue] = Field(default_factory=dict)
    error: str | None = None


class ReviewDecision(BaseModel):
    decision: Decision
    reviewer: str
    at: datetime
    text: str | None = None
    weight: float | None = None
    note: str | None = None
    outcome: str | None = None


class ReviewItem(BaseModel):
    """Something a human should decide: a mined rubric item, a suspected hack, a split panel."""

    id: int
    kind: ReviewKind
    status: ReviewStatus
    project: str = "default"
    rubric: str | None = None
    run_id: str | None = None
    batch_id: str | None = None
    sample_id: str | None = None
    payload: dict[str, JsonValue]
    evidence: dict[str, JsonValue]
    created_at: datetime
    decided_at: datetime | None = None
    decided_by: str | None = None
    decisions: list[ReviewDecision] = Field(default_factory=list)


class ReviewList(BaseModel):
    items: list[ReviewItem]


class DecisionRequest(_Strict):
    """``edit`` approves a rubric item with a changed ``text`` and/or ``weight``.

    ``label`` also records the reviewer's good/bad label on the item's rollout.
    """

    decision: Decision
    text: Annotated[str, StringConstraints(min_length=1, max_length=2000), NoNul] | None = None
    weight: float | None = Field(default=None, ge=-100, le=100)
    note: Annotated[str, StringConstraints(max_length=4000), NoNul] | None = None
    label: HumanLabel | None = None


class DecisionResult(BaseModel):
    item: ReviewItem
    decision: Decision
    rubric: str | None = None
    known_hack_id: int | None = None


class LabelRequest(_Strict):
    """A reviewer's judgement of one scored rollout, the ground truth for judge agreement."""

    batch_id: Identifier
    sample_id: Identifier
    label: HumanLabel
    note: Annotated[str, StringConstraints(max_length=4000), NoNul] | None = None


class LabelOut(BaseModel):
    batch_id: str
    sample_id: str
    label: HumanLabel
    reviewer: str
    created_at: datetime


class Calibration(BaseModel):
    """Isotonic map from a judge's score to P(a human labels the rollout good)."""

    x: list[float]
    y: list[float]


class JudgeAgreement(BaseModel):
    judge: str
    labels: int
    good: int
    bad: int
    cohen_kappa: float | None = None
    spearman_rho: float | None = None
    spearman_p: float | None = None
    calibration: Calibration | None = None


class AgreementResponse(BaseModel):
    """Per judge: agreement with human labels (score >= ``threshold`` counts as good)."""

    threshold: float
    min_labels_for_calibration: int
    judges: list[JudgeAgreement]
    consensus: JudgeAgreement | None = None
