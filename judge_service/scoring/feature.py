"""Batches of rewards: what scoring adds to the service (``core.features``)."""

from judge_service.core.features import Feature

FEATURE = Feature(
    name="scoring",
    hot_routers=("judge_service.scoring.routes:router",),
    routers=("judge_service.scoring.routes_openrlhf:router",),
    setup_app="judge_service.scoring.web_submission:attach",
    score_batch="judge_service.scoring.job:score_batch",
    expire_batch="judge_service.scoring.store_expiry:expire_batch",
    commands="judge_service.scoring.cli:add_commands",
)
