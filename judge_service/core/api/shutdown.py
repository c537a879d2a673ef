"""A clean stop of ``judge-service serve``: drain, stop, answer everyone, then close.

On SIGINT or SIGTERM (``api.server`` passes it on) the service:

1. refuses new work at once: the routes that create work answer 503 ``shutting_down`` with
   Retry-After (``api.worker_gate``), while reads, polls and pages still answer, on the same
   port (uvicorn alone would close it, and a client would get a refused connection);
2. lets running work finish for ``JS_SHUTDOWN_GRACE_S`` (the embedded executor's batches and
   jobs; with a broker, the batches that clients wait for), and goes on as soon as nothing
   is left;
3. stops what still runs: the embedded executor cancels its batches (what was scored stays
   stored) and hands them back, lease released, so that the next start, or another worker on
   the same database, resumes them at its next sweep;
4. answers every client still waiting: 202 with the batch as it stands, as after
   ``wait: false``, so that it polls (``POST /get_reward``, which has no 202: 503
   ``shutting_down``); then uvicorn closes the port and the process ends.

A second signal skips what is left of step 2. Nothing here may block the event loop: the
server runs :meth:`Shutdown.begin` from its loop, and the stop itself runs on a thread.
"""

from __future__ import annotations

import asyncio
import logging
from collections.abc import Iterator
from contextlib import contextmanager

from judge_service.core.worker.dispatch import Dispatcher

log = logging.getLogger(__name__)

#: How long the stop waits for cancelled batches to wind down (they stop at their next
#: await: milliseconds), normally and after a second signal.
STOP_WAIT_S, FORCED_STOP_WAIT_S = 5.0, 1.0
#: How often the drain checks whether the running work has finished.
POLL_S = 0.05


class Shutdown:
    """The stopping state of one app (``app.state.shutdown``); ``dispatcher`` is set as the
    app starts. ``draining``: new work is refused; ``waits_over``: waiting clients are
    answered now; ``finished``: everyone is answered, the server may close."""

    def __init__(self, grace_s: float) -> None:
        self.grace_s = grace_s
        self.dispatcher: Dispatcher | None = None
        self.draining = False
        self.waits_over = False
        self.finished = False
        self.waiting = 0  # requests waiting for their batch
        self._forced = False
        self._task: asyncio.Task[None] | None = None

    def begin(self) -> None:
        """The first signal: refuse new work and start the drain (on the server's loop)."""
        if self.draining:
            return
        self.draining = True
        log.info(
            "stopping: new work is refused (503 shutting_down); running work has %g s to "
            "finish (JS_SHUTDOWN_GRACE_S); a second Ctrl-C (or SIGTERM) stops it at once",
            self.grace_s,
        )
        if self.dispatcher is not None:
            self.dispatcher.drain()
        self._task = asyncio.get_running_loop().create_task(self._drain())

    def force(self) -> None:
        """The second signal: stop what runs now, without waiting for the grace to end."""
        if self.draining and not self._forced and not self.finished:
            log.info("second signal: stopping the running work now")
        self._forced = True

    @contextmanager
    def waiter(self) -> Iterator[None]:
        """Counts a request that waits for its batch: the drain waits for it too."""
        self.waiting += 1
        try:
            yield
        finally:
            self.waiting -= 1

    def _settled(self) -> bool:
        """Nothing is left to wait for: no work runs here, and no client waits."""
        busy = self.dispatcher.busy() if self.dispatcher is not None else 0
        return busy == 0 and self.waiting == 0

    async def _drain(self) -> None:
        loop = asyncio.get_running_loop()
        deadline = loop.time() + self.grace_s
        try:
            while not self._forced and not self._settled() and loop.time() < deadline:
                await asyncio.sleep(POLL_S)
            if self.dispatcher is not None:
                wait_s = FORCED_STOP_WAIT_S if self._forced else STOP_WAIT_S
                await asyncio.to_thread(self.dispatcher.stop, wait_s)
        except Exception as exc:  # e.g. the database is down: the leases lapse by themselves
            log.warning("stopping the running work failed (%r); its leases lapse instead", exc)
        finally:
            self.waits_over = True
            if self.dispatcher is not None:
                self.dispatcher.wake_waiters()
            self.finished = True
