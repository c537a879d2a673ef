"""Protocols every plugin is checked against when the registry loads it, and the
optional abilities a plugin declares.

A judge, detector or aggregator is a class; the registry instantiates it with
the options of its spec. Plugins import only this module, ``domain`` and ``llm``.

The required part of a plugin is structural (a ``Judge`` needs ``name`` and an async
``score``, nothing to import). An optional ability is declared by naming it as a base
class (``class PairJudge(GroupScorer)``): the service uses an ability only when the class
declares it, and the registry refuses a class that declares one without implementing it.
"""

from __future__ import annotations

from abc import ABC, abstractmethod
from collections.abc import Sequence
from dataclasses import dataclass, field
from typing import Any, ClassVar, Protocol, runtime_checkable

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

    @property
    def name(self) -> str: ...  # read, never set: an attribute, or a wrapper's property

    async def score(self, sample: Sample, context: JudgeContext) -> JudgeScore: ...


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


# --- optional abilities: a plugin declares one by subclassing it ---------------------------
#
# Why base classes and not probes for a method: a helper that happens to be called
# ``adetect`` is not a promise, and a typo in ``score_grup`` silently turned an ability off.
# Declared, an ability is checked when the plugin loads (each abstract method below must be
# implemented, async where it is async here) and Python refuses to build an instance that
# lacks one.


class GroupScorer(ABC):
    """A judge that can score a whole GRPO group in one call (relative judging).

    The pipeline sends a group of two or more samples to ``score_group`` when the
    instance's ``relative`` is true, and each sample to ``score`` otherwise.
    """

    relative: bool = True

    @abstractmethod
    async def score_group(
        self, samples: Sequence[Sample], context: JudgeContext
    ) -> list[JudgeScore]:
        """One score per sample, in the order of ``samples``."""


class AsyncDetector(ABC):
    """A detector whose audit is awaited (it calls a model, say): the worker awaits
    ``adetect``; the offline ``audit`` command still calls the synchronous ``detect``."""

    @abstractmethod
    async def adetect(self, sample: Sample, evidence: Evidence) -> list[Finding]:
        """The findings, as ``detect`` gives them."""


class UsesLLM(ABC):  # noqa: B024 - a marker: it adds no method, only the declaration
    """A plugin that calls a model. Such a detector is left out of the default detector
    set and of ``judge-service audit --no-llm``; it runs only when asked for."""

    uses_llm: ClassVar[bool] = True


class FromSettings(ABC):
    """A plugin that builds itself from the service settings when no options are given
    (the offline ``audit`` command uses this, e.g. for a detector's own models)."""

    @classmethod
    @abstractmethod
    def from_settings(cls, settings: Any) -> Any:
        """An instance configured from ``settings`` (a ``judge_service.core.settings.Settings``)."""


#: Every optional ability by the name ``judge-service plugins`` lists, with the kinds of
#: plugin it applies to.
ABILITIES: dict[str, tuple[type, tuple[str, ...]]] = {
    "group_scorer": (GroupScorer, ("judges",)),
    "async_detector": (AsyncDetector, ("detectors",)),
    "uses_llm": (UsesLLM, ("judges", "detectors")),
    "from_settings": (FromSettings, ("judges", "detectors", "aggregators")),
}


def abilities_of(plugin: type) -> list[str]:
    """The names of the abilities a plugin class declares, in ``ABILITIES`` order."""
    return [name for name, (ability, _) in ABILITIES.items() if issubclass(plugin, ability)]
