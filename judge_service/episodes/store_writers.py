"""This process's episode writer per SQLite file: a mutex, waited for or only tried.

SQLite has one writer per file. Threads whose transactions want it at once wait in its busy
handler, which sleeps (1, 2, 5 ... 100 ms) instead of being woken: 256 episodes stepping
together waited a second each. A mutex hands the turn over at once. PostgreSQL locks rows,
so there it is no mutex at all.
"""

from __future__ import annotations

import threading
from collections.abc import Iterator
from contextlib import contextmanager

_WRITERS: dict[str, threading.Lock] = {}
_WRITERS_LOCK = threading.Lock()


def _writer(url: str) -> threading.Lock:
    with _WRITERS_LOCK:
        return _WRITERS.setdefault(url, threading.Lock())


@contextmanager
def one_writer(url: str) -> Iterator[None]:
    """On SQLite, this process's episode writes one at a time (waiting for the turn)."""
    if not url.startswith("sqlite"):
        yield
        return
    with _writer(url):
        yield


@contextmanager
def writer_if_free(url: str) -> Iterator[bool]:
    """The SQLite file's episode writer, if no thread of this process holds it: ``True``
    while held, ``False`` (and nothing held) when it is taken. Never waits."""
    lock = _writer(url)
    if not lock.acquire(blocking=False):
        yield False
        return
    try:
        yield True
    finally:
        lock.release()
