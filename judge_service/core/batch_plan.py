"""The plan a batch is scored with: resolved once by the API, stored with the batch, read
by the worker and by ``judge-service score``.

Why one typed model and not a dict: the API writes it in one process and a worker reads
it in another, maybe after a release; a field written is a field read, checked on both
sides. It is the core's, beside the batches table that stores it, because the API (which
may import neither the pipeline nor the worker) builds it, storage keeps it and the worker
reads it; it imports only ``domain`` and the ``wire`` under it.

Stored as JSON in ``batches.plan`` (``model_dump(mode="json")``, in storage only) with the
keys of the dict it replaces, so rows written before it load as they are: every field has
a default, a judge given as a bare name is read as ``{"name": ...}``, and unknown keys are
ignored.
"""

from __future__ import annotations

from typing import Any

from pydantic import BaseModel, ConfigDict, Field, model_validator

from judge_service.domain import Rubric
from judge_service.wire import PenaltyName


class ModelEntry(BaseModel):
    """A model to call, as stored: ``name`` and its options (``model``, ``endpoint``, ...).

    A server is named by ``endpoint``, never given a key: a worker resolves the name to a
    base URL and key when it builds its panel (``judge_service.judging.endpoints``).
    """

    model_config = ConfigDict(extra="allow", frozen=True)

    name: str

    @model_validator(mode="before")
    @classmethod
    def _bare_name(cls, value: Any) -> Any:
        return {"name": value} if isinstance(value, str) else value

    @property
    def options(self) -> dict[str, Any]:
        """The options besides the declared fields (``endpoint``, ``model``, ...)."""
        return dict(self.model_extra or {})

    def as_spec(self) -> dict[str, Any]:
        """The spec as the panel builder and ``endpoints.resolve_specs`` take it."""
        return self.model_dump(mode="json")


class JudgeEntry(ModelEntry):
    """A panel member: a model spec with its weight in the consensus."""

    weight: float = 1.0


class CalibrationMap(BaseModel):
    """A judge's isotonic map, frozen into the plan: raw score ``x`` -> calibrated ``y``."""

    model_config = ConfigDict(frozen=True)

    x: list[float]
    y: list[float]


class BatchPlan(BaseModel):
    """Everything the API resolved to score a batch, besides its samples and deadline
    (``timeout_s`` and ``deadline_at`` are columns of the batch)."""

    model_config = ConfigDict(frozen=True, extra="ignore")

    judges: list[JudgeEntry] = Field(default_factory=list)
    aggregator: str | None = None  # None: the worker's JS_DEFAULT_AGGREGATOR
    quorum: int | None = None
    detectors: list[str] = Field(default_factory=list)
    hindsight: list[ModelEntry] | None = None  # the hindsight detector's models; None: off
    penalty: PenaltyName | None = None  # None: the worker's JS_PENALTY_POLICY
    rubric: Rubric | None = None  # the version resolved at acceptance, frozen
    calibration: dict[str, CalibrationMap] | None = None  # by judge name; None: raw scores
    warnings: list[str] = Field(default_factory=list)  # said in every answer of the batch

    @property
    def rubric_ref(self) -> str | None:
        """``name@N`` of the plan's rubric, or None."""
        return self.rubric.ref if self.rubric is not None else None
