"""One long-lived event loop per worker thread (uvloop when installed), reused by every batch.

Why not ``asyncio.run`` per batch: a fresh loop gets fresh pooled HTTP sessions, so every batch
opened new connections to each judge server (a GRPO step's 256 samples x 3 judges made 192 TCP
connects) and paid for a loop's start and shutdown. One loop per thread keeps the connection
pools, the per-model limits and the Redis clients (all loop-bound) warm across batches. uvloop
runs aiohttp's callbacks in C: less CPU per judge call than the pure-Python selector loop.
"""

from __future__ import annotations

import asyncio
import contextlib
import os
import threading
from collections.abc import Callable, Coroutine
from typing import Any, TypeVar

T = TypeVar("T")
_local = threading.local()


def _loop_factory() -> Callable[[], asyncio.AbstractEventLoop] | None:
    try:
        import uvloop  # installed with uvicorn[standard]
    except ImportError:  # pragma: no cover - uvloop is a dependency on Linux and macOS
        return None
    return uvloop.new_event_loop


def run_on_thread_loop(coroutine: Coroutine[Any, Any, T]) -> T:
    """Run ``coroutine`` to completion on this thread's own loop, made on first use (and again
    in a forked child, which must not touch its parent's loop)."""
    runner: asyncio.Runner | None = getattr(_local, "runner", None)
    if runner is None or _local.pid != os.getpid():
        runner = _local.runner = asyncio.Runner(loop_factory=_loop_factory())
        _local.pid = os.getpid()
    return runner.run(coroutine)


class Interrupts:
    """Coroutines that worker threads run on their loops, which one call cancels: how the
    embedded executor stops its batches when the service stops. Each runs through
    :meth:`guard`; once :meth:`cancel_all` was called, a coroutine that starts is cancelled
    at once."""

    def __init__(self) -> None:
        self._lock = threading.Lock()
        self._running: dict[asyncio.Task[Any], asyncio.AbstractEventLoop] = {}
        self.cancelled = False

    async def guard(self, coroutine: Coroutine[Any, Any, T]) -> T:
        """Await ``coroutine`` as a task that :meth:`cancel_all` cancels."""
        task, loop = asyncio.current_task(), asyncio.get_running_loop()
        assert task is not None
        with self._lock:
            if self.cancelled:
                coroutine.close()
                raise asyncio.CancelledError
            self._running[task] = loop
        try:
            return await coroutine
        finally:
            with self._lock:
                self._running.pop(task, None)

    def cancel_all(self) -> int:
        """Cancel every guarded coroutine, from any thread; how many were running."""
        with self._lock:
            self.cancelled = True
            running = list(self._running.items())
        for task, loop in running:
            with contextlib.suppress(RuntimeError):  # its loop closed: nothing left to cancel
                loop.call_soon_threadsafe(task.cancel)
        return len(running)
