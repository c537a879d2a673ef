"""Choosing and building the hindsight-audit detectors of a batch, through the registry.

By default every installed detector that calls no model runs. The LLM hindsight
detector runs only when a request or ``JS_HINDSIGHT_JUDGES`` names its models.
The API and ``judge-service score`` both resolve a batch's audit with
:func:`audit_plan`, so a file scored offline is audited as the API would audit it.
"""

from __future__ import annotations

from typing import Any, TypedDict

from judge_service.contracts import Detector, UsesLLM
from judge_service.core.errors import ValidationFailed
from judge_service.core.registry import PluginError, Registry
from judge_service.core.settings import Settings

HINDSIGHT = "llm_hindsight"


class UnknownDetector(ValidationFailed):
    code = "unknown_detector"


def _uses_llm(registry: Registry, name: str) -> bool:
    try:
        return issubclass(registry.load("detectors", name), UsesLLM)
    except PluginError:
        return True  # a detector that cannot load is left out of the default set


def resolve_detectors(
    requested: list[str] | None, *, settings: Settings, registry: Registry
) -> list[str]:
    """Detector names for a batch; 422 naming any that is unknown or fails to load."""
    names = requested if requested is not None else settings.detector_names()
    if names is None:
        return [n for n in registry.names("detectors") if not _uses_llm(registry, n)]
    for name in names:
        if name == HINDSIGHT:
            raise UnknownDetector(
                f"{HINDSIGHT} is enabled with `hindsight_judges`, not in `detectors`",
                detail={"field": "detectors", "detector": name},
            )
        try:
            registry.load("detectors", name)
        except PluginError as exc:
            raise UnknownDetector(
                f"detector {name!r} cannot be used: {exc}",
                detail={"field": "detectors", "detector": name},
            ) from exc
    return names


def hindsight_models(requested: list[Any] | None, *, settings: Settings) -> list[dict] | None:
    """The hindsight detector's own models, or None when it is off."""
    specs = requested or settings.hindsight_specs()
    if not specs:
        return None
    return [s if isinstance(s, dict) else {"name": s} for s in specs]


class AuditPlan(TypedDict):
    """The audit fields of a :class:`~judge_service.core.batch_plan.BatchPlan`, as its keywords."""

    detectors: list[str]
    hindsight: list[dict] | None
    penalty: str


def audit_plan(
    detectors: list[str] | None = None,
    hindsight: list[Any] | None = None,
    penalty: str | None = None,
    *,
    settings: Settings,
    registry: Registry,
) -> AuditPlan:
    """The audit part of a batch plan: detector names, hindsight models and penalty policy.

    Each argument is what the request (or its rubric, for the penalty) asked for; None
    takes the service's default (``JS_DETECTORS``, ``JS_HINDSIGHT_JUDGES``,
    ``JS_PENALTY_POLICY``).
    """
    return {
        "detectors": resolve_detectors(detectors, settings=settings, registry=registry),
        "hindsight": hindsight_models(hindsight, settings=settings),
        "penalty": penalty or settings.penalty_policy,
    }


def build_detectors(
    names: list[str],
    hindsight: list[dict] | None,
    *,
    registry: Registry,
    settings: Settings,
    client: Any = None,
) -> list[Detector]:
    """Detector instances for a batch plan (the worker calls this)."""
    detectors = [registry.create("detectors", name) for name in names]
    if hindsight:
        detectors.append(
            registry.create(
                "detectors",
                HINDSIGHT,
                models=hindsight,
                min_reward=settings.hindsight_min_reward,
                client=client,
            )
        )
    return detectors
