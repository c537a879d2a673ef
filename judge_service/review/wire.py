"""HTTP models of the review queue, mining and label routes.

Split from :mod:`judge_service.wire` (the reward contract trainers use), so a trainer
node's import stays small. Imports only ``judge_service.wire`` of the package.
"""

from __future__ import annotations

from datetime import datetime
from typing import Annotated, Literal

from pydantic import BaseModel, Field, JsonValue, StringConstraints

from judge_service.wire import Identifier, JudgeSpec, NoNul, _Strict

Decision = Literal["approve", "reject", "edit"]
HumanLabel = Literal["good", "bad"]
ReviewKind = Literal["rubric_item", "hack_finding", "disagreement", "task_family"]
ReviewStatus = Literal["pending", "approved", "rejected", "edited"]


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
