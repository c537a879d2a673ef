"""The gate of the routes that dispatch work: 503 ``shutting_down`` while the service stops,
``no_worker`` when no worker is alive, both with Retry-After.

With a broker, work accepted while no worker is alive waits for nobody and is masked
at its deadline; work accepted by a stopping process would be stopped again at once. The
client (the trainer bridge retries 503) should come back instead.
"""

from __future__ import annotations

from typing import Annotated

from fastapi import Depends, Request

from judge_service.core.api.state import ServiceState
from judge_service.core.errors import NoWorker, ShuttingDown

#: Seconds a client is asked to wait: about a worker's start-up, a few heartbeats.
RETRY_AFTER_S = 5


async def check_worker(state: ServiceState) -> None:
    """Raise 503 ``shutting_down`` while the service stops, ``no_worker`` when no worker
    heartbeat is newer than ``JS_WORKER_GRACE_S`` (``state``: the app's)."""
    if state.shutdown.draining:
        raise ShuttingDown()
    if not await state.dispatcher.available():
        grace = state.settings.worker_grace_s
        raise NoWorker(
            f"no worker has been alive for {grace:g} s: nothing would score this; retry later",
            retry_after_s=RETRY_AFTER_S,
            detail={"worker_grace_s": grace},
        )


async def require_worker(request: Request) -> None:
    """:func:`check_worker` as a route dependency."""
    await check_worker(request.app.state)


#: A route parameter (after the key, so that 401 and 403 come first).
WorkerAlive = Annotated[None, Depends(require_worker)]
