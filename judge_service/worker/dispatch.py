"""Choosing how a stored batch reaches a worker: Celery when a broker is set, else in-process."""

from __future__ import annotations

from typing import Protocol

from judge_service.registry import Registry
from judge_service.settings import Settings
from judge_service.worker.celery_app import TASK_NAME, make_celery
from judge_service.worker.inprocess import InProcessDispatcher


class Dispatcher(Protocol):
    def submit(self, batch_id: str) -> object: ...

    def submit_task(self, name: str, *args: str) -> object: ...

    def ping(self) -> bool: ...

    def close(self) -> None: ...


class CeleryDispatcher:
    """Sends the scoring task to the broker; the workers do the rest."""

    def __init__(self, settings: Settings) -> None:
        self.app = make_celery(settings)

    def submit(self, batch_id: str) -> object:
        return self.app.send_task(TASK_NAME, args=[batch_id], retry=True)

    def submit_task(self, name: str, *args: str) -> object:
        """Any other registered task by name (mining, say)."""
        return self.app.send_task(name, args=list(args), retry=True)

    def ping(self) -> bool:
        try:
            with self.app.connection_for_write() as connection:
                connection.ensure_connection(max_retries=1, timeout=2)
        except Exception:  # readiness reports any broker failure as "not ready"
            return False
        return True

    def close(self) -> None:
        self.app.close()


def make_dispatcher(settings: Settings, registry: Registry) -> Dispatcher:
    if settings.embedded:
        return InProcessDispatcher(settings, registry)
    return CeleryDispatcher(settings)
