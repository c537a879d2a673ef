"""``judge-service serve``'s uvicorn server, which stops the way ``api.shutdown`` says.

uvicorn alone, on SIGINT or SIGTERM, closes the port at once, waits for the open requests
(a client waiting for its batch: as long as the batch takes), then stops the app; a second
Ctrl-C skips the app's stop and cancels what still runs, which answers waiting clients a
plain-text 500. Here a signal goes to the app's :class:`~judge_service.core.api.shutdown.Shutdown`
instead: the first begins the drain, the second cuts it short. Only once every client is
answered does uvicorn close, as on its own first signal. The signal is not raised again at
the end (uvicorn's habit): the stop is complete, and the process exits 0 through the normal
path, without a ``KeyboardInterrupt``.
"""

from __future__ import annotations

import atexit
import logging
import os
import sys
from types import FrameType
from typing import Any

import uvicorn
from fastapi import FastAPI

log = logging.getLogger(__name__)

#: Once every client is answered, how long uvicorn waits for the last requests (a read, a
#: 503) to finish before it cancels them.
CLOSE_S = 5


class StoppingServer(uvicorn.Server):
    """uvicorn's server, passing its stop signals to the app's ``state.shutdown``."""

    def __init__(self, config: uvicorn.Config, app: FastAPI) -> None:
        super().__init__(config)
        self.app = app
        self.signals = 0

    def handle_exit(self, sig: int, frame: FrameType | None) -> None:
        """A signal handler: only counts. The event loop acts on it (``on_tick``)."""
        self.signals += 1

    async def on_tick(self, counter: int) -> bool:
        """Every 0.1 s on the server's loop: start the drain, cut it short, or exit."""
        shutdown = self.app.state.shutdown
        if self.signals:
            shutdown.begin()
            if self.signals > 1:
                shutdown.force()
        if shutdown.finished:
            self.should_exit = True
        return await super().on_tick(counter)


def serve(app: FastAPI, **options: Any) -> None:
    """Run ``app`` with uvicorn's ``options`` until it is stopped; exit 3 when it could not
    start (as ``uvicorn.run``)."""
    config = uvicorn.Config(app, timeout_graceful_shutdown=CLOSE_S, **options)
    server = StoppingServer(config, app)
    server.run()
    if not server.started:
        sys.exit(3)  # uvicorn's STARTUP_FAILURE
    dispatcher = getattr(app.state, "dispatcher", None)
    left = dispatcher.busy() if dispatcher is not None else 0
    if left:
        _exit_now(left)


def _exit_now(left: int) -> None:
    """The last resort: the executor's threads still run ``left`` tasks that ignore
    cancellation (a mining or forge job, a judge blocked in a call); the interpreter would
    wait for them at exit. Their batches were handed back and every client answered: run
    the exit hooks (the local judge server stops), flush the log, and end the process."""
    log.warning(
        "exiting without waiting for %d task(s) still running on the executor; they run "
        "again on the next start",
        left,
    )
    atexit._run_exitfuncs()
    logging.shutdown()
    sys.stdout.flush()
    sys.stderr.flush()
    os._exit(0)
