"""HTTP models of the rubric routes and of judge agreement with human labels.

Split from :mod:`judge_service.wire` (the reward contract trainers use), so a trainer
node's import stays small. Imports only ``judge_service.wire`` of the package.
"""

from __future__ import annotations

from datetime import datetime
from typing import Annotated

from pydantic import BaseModel, Field, StringConstraints, field_validator

from judge_service.wire import NoNul, PenaltyName, _Strict

#: Rubric names and criterion ids: they appear in URLs, in ``name@N`` and in component keys.
Slug = Annotated[
    str, StringConstraints(min_length=1, max_length=128, pattern=r"^[A-Za-z0-9][A-Za-z0-9._-]*$")
]


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
        repeated = []
        for c in criteria:
            if c.id in seen:
                repeated.append(c.id)
            seen.add(c.id)
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
