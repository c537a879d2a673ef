"""Start-up work that needs the database, done whenever the database is there.

``serve`` migrates (when asked) and the embedded executor starts its heartbeat and sweeper
(whose first pass picks up what a previous process left) as the process starts. With the
database down, the process serves anyway: one log line says so, ``/readyz`` and every route
that needs the database answer 503, and a thread retries the remaining steps, in order,
until they pass. No restart is needed once the database is back.
"""

from __future__ import annotations

import logging
import threading
from collections.abc import Callable

from judge_service.core.storage.db import describe_url
from judge_service.core.storage.outage import Outage, explain, find_outage

log = logging.getLogger(__name__)

#: Retry delays: the first, then 1.5 times longer each time, up to the last.
FIRST_RETRY_S, MAX_RETRY_S = 0.5, 5.0

Step = tuple[str, Callable[[], object]]


class DatabaseStartup:
    """Runs named steps in order; on a database outage, retries the rest on a thread."""

    def __init__(self, database_url: str, steps: list[Step]) -> None:
        self.database_url = database_url
        self._steps = list(steps)
        self._stop = threading.Event()
        self._thread: threading.Thread | None = None

    @property
    def done(self) -> bool:
        """True once every step has passed."""
        return not self._steps

    def run(self) -> None:
        """Try every step now. A database outage is logged once and left to a thread; any
        other error is raised (a bug should stop start-up, as before)."""
        outage = self._attempt()
        if outage is None:
            return
        log.warning(
            "%s; serving anyway: /readyz and the routes that need the database answer 503 "
            "until it is back, then %s runs without a restart",
            explain(outage, self.database_url),
            " and ".join(name for name, _ in self._steps),
        )
        self._thread = threading.Thread(target=self._retry, name="db-startup", daemon=True)
        self._thread.start()

    def stop(self, timeout: float = 5.0) -> None:
        """Stop retrying (the process is shutting down)."""
        self._stop.set()
        if self._thread is not None:
            self._thread.join(timeout)

    def _attempt(self) -> Outage | None:
        """Run the steps left; the outage that stopped them, or None when all passed."""
        while self._steps:
            name, step = self._steps[0]
            try:
                step()
            except Exception as exc:
                outage = find_outage(exc)
                if outage is None:
                    raise
                log.debug("start-up step %r waits for the database: %s", name, outage.reason)
                return outage
            self._steps.pop(0)
        return None

    def _retry(self) -> None:
        delay = FIRST_RETRY_S
        while not self._stop.wait(delay):
            try:
                if self._attempt() is None:
                    where = describe_url(self.database_url)
                    log.warning("the database is back (%s): start-up finished", where)
                    return
            except Exception:  # a bug once the database answers: log it, stop retrying
                log.exception("start-up failed once the database answered")
                return
            delay = min(delay * 1.5, MAX_RETRY_S)
