"""Worlds: what they add to the service (``core.features``). Their episodes are a feature of
their own (``episodes/feature.py``), over the world."""

from judge_service.core.features import Feature, JobKind

#: The task that builds a world (the routes send it by name).
WORLD_TASK = "judge_service.world"

FEATURE = Feature(
    name="world",
    routers=("judge_service.world.routes:router",),
    jobs=(
        JobKind(
            name="world",
            task=WORLD_TASK,
            run="judge_service.world.job:run_world",
            table="judge_service.world.tables:WorldRow",
        ),
    ),
    commands="judge_service.world.cli:add_commands",
)
