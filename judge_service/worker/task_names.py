"""The Celery names of the worker's tasks: what the API sends, without importing the tasks."""

SCORE_TASK = "judge_service.score_batch"
MINE_TASK = "judge_service.mine_rubric"
FORGE_TASK = "judge_service.forge"
