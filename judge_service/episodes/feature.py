"""Episodes over a world: what they add to the service (``core.features``). The step and
the read are hot routes on the app's own router (``routes.attach``)."""

from judge_service.core.features import Feature

FEATURE = Feature(
    name="episodes",
    hot_routers=("judge_service.episodes.routes:router",),
    routers=("judge_service.episodes.routes_verify:router",),
    setup_app="judge_service.episodes.routes:attach",
)
