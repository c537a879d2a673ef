"""Handing committed work to the queue, undone when the queue cannot take it.

A batch or job is committed before it is sent, so a worker always finds its row. When the
send fails, the row is undone (removed, or finished as failed) and the client gets a 503,
never a 202 for work that nobody will run.
"""

from __future__ import annotations

from collections.abc import Callable

from judge_service.core.errors import JudgeServiceError, Unavailable


def submit_or_undo(submit: Callable[[], object], undo: Callable[[], object]) -> None:
    """Call ``submit``; when it raises, call ``undo`` and raise 503 ``unavailable`` (or the
    service's own error that it raised: ``shutting_down`` when the process began to stop)."""
    try:
        submit()
    except JudgeServiceError:
        undo()
        raise
    except Exception as exc:
        undo()
        raise Unavailable(f"the task queue is unavailable: {type(exc).__name__}") from exc
