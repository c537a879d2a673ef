"""The Celery names of the worker's tasks: what the API sends, without importing the tasks."""

SCORE_TASK = "judge_service.score_batch"
MINE_TASK = "judge_service.mine_rubric"
FORGE_TASK = "judge_service.forge"
WORLD_TASK = "judge_service.world"

#: The task that runs each kind of job (``storage.lost_jobs.JobKind``).
JOB_TASKS = {"mining": MINE_TASK, "forge": FORGE_TASK, "world": WORLD_TASK}
