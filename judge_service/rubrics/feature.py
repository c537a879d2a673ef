"""Rubrics: what they add to the service (``core.features``)."""

from judge_service.core.features import Feature

FEATURE = Feature(
    name="rubrics",
    routers=("judge_service.rubrics.routes:router",),
    commands="judge_service.rubrics.cli:add_commands",
)
