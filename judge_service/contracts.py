"""Protocols every plugin is checked against when the registry loads it.

A judge, detector or aggregator is a class; the registry instantiates it with
the options of its spec. Plugins import only this module, ``domain`` and ``llm``.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass, field
from typing import Any, Protocol, runtime_checkable

from judge_service.domain import Finding, JudgeScore, Rubric, Sample, Verdict


@dataclass(frozen=True)
class JudgeContext:
    """What a judge may use besides the sample: the rubric and the batch's deadline."""

    rubric: Rubric | None = None
    deadline: float | None = None  # time.monotonic() value
    settings: Any = None
    group: Sequence[Sample] = field(default_factory=tuple)


@runtime_checkable
class Judge(Protocol):
    """Scores one sample in [0, 1]. Raises on failure; the pipeline records the error."""

    name: str

    async def score(self, sample: Sample, context: JudgeContext) -> JudgeScore: ...


@runtime_checkable
class GroupJudge(Protocol):
    """Optional: a judge that scores a whole GRPO group at once (relative mode)."""

    name: str

    async def score_group(
        self, samples: Sequence[Sample], context: JudgeContext
    ) -> list[JudgeScore]: ...


@dataclass(frozen=True)
class Evidence:
    """What a detector may look at besides the sample."""

    verdicts: Sequence[Verdict] = ()
    rubric: Rubric | None = None
    run_stats: dict[str, Any] = field(default_factory=dict)
    #: Transcripts of confirmed hacks (the known-hack corpus), so none pays twice.
    known_hacks: Sequence[str] = ()
    #: The consensus reward before any penalty (None when the sample was masked).
    raw_reward: float | None = None


@runtime_checkable
class Detector(Protocol):
    """Audits one scored sample in hindsight for reward hacking."""

    name: str

    def detect(self, sample: Sample, evidence: Evidence) -> list[Finding]: ...


@runtime_checkable
class Aggregator(Protocol):
    """Combines the valid judges' scores, honouring their weights, into one reward."""

    name: str

    def aggregate(self, scores: Sequence[float], weights: Sequence[float]) -> float: ...
