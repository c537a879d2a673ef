"""Building a judge panel from the specs of a request, through the plugin registry.

A judge spec is a plugin name (``"reference_match"``), an object
``{"name": ..., "weight": ..., <options>}``, or a litellm model string (it
contains a ``/``), which becomes the ``llm`` plugin with ``model=<string>``.
The name ``local/smollm2-135m`` is the local SmolLM2 judge: the ``llm`` plugin
with the options of the local llama.cpp server.
"""

from __future__ import annotations

import math
from collections.abc import Callable
from typing import Any

from judge_service.core.errors import UnknownAggregator, UnknownJudge
from judge_service.core.registry import PluginError, Registry
from judge_service.core.settings import Settings
from judge_service.judging.consensus import Panel
from judge_service.judging.members import PanelMember
from judge_service.judging.names import LOCAL_JUDGE_NAME
from judge_service.judging.providers import unusable_model

LLM_PLUGIN = "llm"


def normalise_spec(spec: str | dict[str, Any]) -> dict[str, Any]:
    """Every spec as a dict with ``name`` and ``weight``."""
    if isinstance(spec, str):
        return {"name": spec, "weight": 1.0}
    normal = dict(spec)
    normal.setdefault("weight", 1.0)
    return normal


def default_panel(settings: Settings) -> list[Any]:
    """The panel a batch gets when it names none: ``JS_DEFAULT_JUDGES``, else the local
    judge. One rule, so the API, the offline ``score`` and the deadline warning agree."""
    return settings.default_judge_specs() or [LOCAL_JUDGE_NAME]


LocalOptions = Callable[[], dict[str, Any]]


def known_judges(registry: Registry) -> list[str]:
    """The judge names a spec may give: the installed judge plugins and the local judge
    (besides model strings such as ``openai/gpt-4.1-mini``), sorted."""
    return sorted({*registry.names("judges"), LOCAL_JUDGE_NAME})


def _validation_only_local() -> dict[str, Any]:
    """Options to check a local-judge spec without starting the local server."""
    from judge_service.judging.names import LOCAL_LITELLM_MODEL

    return {"model": LOCAL_LITELLM_MODEL, "api_base": "http://127.0.0.1:1/v1"}


def build_member(
    spec: dict[str, Any],
    *,
    registry: Registry,
    extra: dict[str, Any],
    local: LocalOptions = _validation_only_local,
    field: str = "judges",
) -> PanelMember:
    """One panel member; ``extra`` options (a model client, say) go to LLM judges only.
    An unusable spec is UnknownJudge naming ``field`` and the judge names that are known.

    ``local`` gives the local judge's options; the worker's version starts the server.
    """
    options = {k: v for k, v in spec.items() if k not in ("name", "weight")}
    name = spec["name"]
    weight = float(spec.get("weight", 1.0))
    if not (math.isfinite(weight) and weight >= 0):  # NaN would reach the stored outcomes
        raise UnknownJudge(
            f"{field}: judge {name!r} cannot be used: its weight must be a finite number >= 0",
            detail={"field": field, "judge": name, "weight": str(weight)},
        )
    try:
        if "/" in name and LLM_PLUGIN not in registry.names("judges"):
            raise PluginError("model judges need the `llm` judge plugin, not installed")
        if name == LOCAL_JUDGE_NAME:
            base = {**local(), "name": LOCAL_JUDGE_NAME}
            judge = registry.create("judges", LLM_PLUGIN, **{**base, **extra, **options})
        elif "/" in name:
            if (why := unusable_model(name)) is not None:
                raise PluginError(why)
            judge = registry.create("judges", LLM_PLUGIN, **{"model": name, **extra, **options})
        else:
            judge = registry.create("judges", name, **options)
    except PluginError as exc:
        known = known_judges(registry)
        raise UnknownJudge(
            f"{field}: judge {name!r} cannot be used: {exc}; known judges: "
            f"{', '.join(known)}, or a model string such as 'openai/gpt-4.1-mini'",
            detail={"field": field, "judge": name, "reason": str(exc), "known": known},
        ) from exc
    return PanelMember(name=name, judge=judge, weight=weight)


def build_panel(
    specs: list[dict[str, Any]],
    *,
    registry: Registry,
    aggregator: str,
    quorum: int | None = None,
    llm_options: dict[str, Any] | None = None,
    local: LocalOptions = _validation_only_local,
    field: str = "judges",
) -> Panel:
    """A panel of judges with its aggregator and quorum; raises UnknownJudge/UnknownAggregator
    (an unknown judge named as ``field.i``)."""
    extra = llm_options or {}
    members = [
        build_member(s, registry=registry, extra=extra, local=local, field=f"{field}.{i}")
        for i, s in enumerate(specs)
    ]
    try:
        combine = registry.create("aggregators", aggregator)
    except PluginError as exc:
        raise UnknownAggregator(
            f"aggregator {aggregator!r} cannot be used: {exc}",
            detail={"aggregator": aggregator, "known": registry.names("aggregators")},
        ) from exc
    size = sum(1 for m in members if m.weight > 0)
    chosen = Panel.default_quorum(size) if quorum is None else min(quorum, max(size, 1))
    return Panel(members=members, aggregator=combine, quorum=chosen)
