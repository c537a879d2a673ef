"""The forge: what it adds to the service (``core.features``)."""

from judge_service.core.features import Feature, JobKind

#: The task a forge job runs as (the routes send it by name).
FORGE_TASK = "judge_service.forge"

FEATURE = Feature(
    name="forge",
    routers=("judge_service.forge.routes:router",),
    jobs=(
        JobKind(
            name="forge",
            task=FORGE_TASK,
            run="judge_service.forge.job:run_forge",
            table="judge_service.forge.tables:ForgeJobRow",
        ),
    ),
    review_decisions=(("task_family", "judge_service.forge.store:decide_family_item"),),
    commands="judge_service.forge.cli:add_commands",
)
