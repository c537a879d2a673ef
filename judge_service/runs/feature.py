"""Run pages and reports: what they add to the service (``core.features``)."""

from judge_service.core.features import Feature

FEATURE = Feature(
    name="runs",
    routers=(
        "judge_service.runs.routes:router",
        "judge_service.runs.routes_judges:router",
        "judge_service.runs.web_pages:router",
    ),
    commands="judge_service.runs.cli:add_commands",
)
