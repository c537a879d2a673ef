"""Writing answered batches out as results a little later, when the process is idle.

The embedded fast path answers once a batch's outcomes are committed as one settled
row (``storage.settled``). Writing them out as results, verdicts and findings takes a
database thread ~5-10 ms of interpreter time, and a thread holding the interpreter
stalls the event loop. Started at once, it would slow the answer being sent and the
trainer's next request. So it starts when the next batch's judge calls are out
(:meth:`DeferredWriteOuts.start_waiting`, called by the fast path), or ``delay_s``
after the answer if no batch comes: either way in a judge wait, when the loop has
nothing to do.

Anyone who reads results in this process first calls :meth:`DeferredWriteOuts.wait`,
which starts every write-out still waiting: a read after an answer sees the batch.
"""

from __future__ import annotations

import asyncio
from collections.abc import Callable

from judge_service.worker.result_writer import DB_WRITERS

#: How long a write-out waits after the answer when no other batch starts meanwhile.
WRITE_OUT_DELAY_S = 0.05


class DeferredWriteOuts:
    """Write-outs of this process, started after a delay, on the database writer threads."""

    def __init__(self, delay_s: float = WRITE_OUT_DELAY_S) -> None:
        self.delay_s = delay_s
        #: Starters not yet run, with the event loop each belongs to.
        self._waiting: dict[Callable[[], None], asyncio.AbstractEventLoop] = {}
        self._running: set[asyncio.Future[None]] = set()

    def add(self, write_out: Callable[[], None], *, now: bool = False) -> asyncio.Future[None]:
        """Run ``write_out`` on a writer thread ``delay_s`` from now (``now``: at once).

        The future resolves when it has run; its error, if any, is retrieved here (the
        write-out logs its own failures).
        """
        loop = asyncio.get_running_loop()
        done: asyncio.Future[None] = loop.create_future()

        def start() -> None:
            if start not in self._waiting:
                return  # started already
            del self._waiting[start]
            try:
                running = loop.run_in_executor(DB_WRITERS, write_out)
            except Exception as exc:  # no thread to run it (shutting down): fail, don't hang
                if not done.done():
                    done.set_exception(exc)
                return
            running.add_done_callback(lambda ran: _pass_on(ran, done))

        self._waiting[start] = loop
        self._running.add(done)
        done.add_done_callback(self._forget)
        if now:
            start()
        else:
            loop.call_later(self.delay_s, start)
        return done

    def _forget(self, done: asyncio.Future[None]) -> None:
        self._running.discard(done)
        if not done.cancelled():
            done.exception()  # retrieved: logged where it was raised

    def start_waiting(self) -> None:
        """Start every waiting write-out of the running event loop now."""
        loop = asyncio.get_running_loop()
        for start, owner in list(self._waiting.items()):
            if owner is loop:
                start()

    async def wait(self, timeout: float | None = None) -> None:
        """Start every waiting write-out of the running event loop now and return when
        they are all done, failed included (or after ``timeout`` seconds)."""
        self.start_waiting()
        loop = asyncio.get_running_loop()
        running = [done for done in self._running if done.get_loop() is loop]
        if running:
            await asyncio.wait(running, timeout=timeout)


def _pass_on(ran: asyncio.Future[None], done: asyncio.Future[None]) -> None:
    if done.done():
        return
    if ran.cancelled():
        done.cancel()
    elif ran.exception() is not None:
        done.set_exception(ran.exception())  # type: ignore[arg-type]
    else:
        done.set_result(None)
