"""The review queue and mining: what they add to the service (``core.features``)."""

from judge_service.core.features import Feature, JobKind

#: The task a mining job runs as (the routes send it by name).
MINE_TASK = "judge_service.mine_rubric"

FEATURE = Feature(
    name="review",
    routers=(
        "judge_service.review.routes_mining:router",
        "judge_service.review.routes_review:router",
        "judge_service.review.web_review_page:router",
    ),
    jobs=(
        JobKind(
            name="mining",
            task=MINE_TASK,
            run="judge_service.review.job_mining:mine_rubric",
            table="judge_service.review.tables:MiningJobRow",
        ),
    ),
    after_batch="judge_service.review.job_review_enqueue:review_after_batch",
)
