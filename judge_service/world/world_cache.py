"""A few loaded worlds (and what else is fixed once a world is built), kept in the process.

A done world never changes, so a step need not read and parse its JSON (megabytes for a
large corpus, tens of milliseconds) again: the first request that needs a world loads it,
the next ones find it here. The same holds for its forge jobs' parsed traces (read only at
reset) and an episode's script (fixed at reset). Bounded, least recently used first out;
thread-safe, and one loader per key at a time (concurrent requests for a world that is not
loaded yet wait for the one load instead of each parsing it). Pure: the loader is given.
"""

from __future__ import annotations

import threading
from collections import OrderedDict
from collections.abc import Callable, Hashable
from typing import Generic, TypeVar

V = TypeVar("V")

#: Worlds kept loaded: each is the size of its corpus's entities and tool models.
WORLDS = 4
#: Parsed trace sets (by world) kept: only resets read them.
TRACE_SETS = 2
#: Episode scripts kept: small, and a step of an episode whose script is here parses none.
SCRIPTS = 4096


class Lru(Generic[V]):
    """At most ``size`` values by key; :meth:`get` loads a missing one with ``load``."""

    def __init__(self, size: int) -> None:
        self.size = size
        self._values: OrderedDict[Hashable, V] = OrderedDict()
        self._lock = threading.Lock()
        self._loading: dict[Hashable, threading.Lock] = {}

    def get(self, key: Hashable, load: Callable[[], V]) -> V:
        with self._lock:
            if key in self._values:
                self._values.move_to_end(key)
                return self._values[key]
            loading = self._loading.setdefault(key, threading.Lock())
        with loading:
            with self._lock:  # loaded by the request this one waited for
                if key in self._values:
                    return self._values[key]
            try:
                value = load()
            except BaseException:  # nothing is kept: the next request tries again
                with self._lock:
                    self._loading.pop(key, None)
                raise
            with self._lock:
                self._values[key] = value
                while len(self._values) > self.size:
                    self._values.popitem(last=False)
                self._loading.pop(key, None)
            return value

    def peek(self, key: Hashable) -> V | None:
        with self._lock:
            return self._values.get(key)

    def __len__(self) -> int:
        return len(self._values)


class WorldCache:
    """The process's loaded worlds, trace sets and episode scripts (``size=0``: keep none,
    every request loads again; for measuring what the cache saves)."""

    def __init__(self, worlds: int = WORLDS, traces: int = TRACE_SETS, scripts: int = SCRIPTS):
        self.worlds: Lru = Lru(worlds)
        self.traces: Lru = Lru(traces)
        self.scripts: Lru = Lru(scripts)
