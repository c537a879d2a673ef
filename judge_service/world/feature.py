"""Worlds and their episodes: what they add to the service (``core.features``)."""

from judge_service.core.features import Feature, JobKind

#: The task that builds a world (the routes send it by name).
WORLD_TASK = "judge_service.world"

FEATURE = Feature(
    name="world",
    hot_routers=("judge_service.world.routes_episodes:router",),
    routers=("judge_service.world.routes:router", "judge_service.world.routes_verify:router"),
    setup_app="judge_service.world.routes_episodes:attach",
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
