"""The Celery name of the scoring task: what the API sends, without importing the task.

The other tasks are the features' job kinds (``core.features.JobKind.task``)."""

SCORE_TASK = "judge_service.score_batch"
