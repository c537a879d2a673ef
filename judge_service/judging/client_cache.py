"""The verdict cache of ``judging.client``: Redis in production, an in-process LRU embedded.

Keys are digests of what decides a verdict (model, template, sample content, rubric version,
schema, sampling), never the rendered prompt, whose fence boundary is random.
"""

from __future__ import annotations

import asyncio
import hashlib
import json
import logging
import threading
from collections import OrderedDict
from collections.abc import Callable
from typing import Any, Protocol, TypeVar

import pydantic_core

log = logging.getLogger(__name__)
T = TypeVar("T")
LoopLocal = dict[int, tuple[asyncio.AbstractEventLoop, Any]]


def loop_local(store: LoopLocal, factory: Callable[[], T]) -> T:
    """The running loop's value in ``store`` (asyncio objects are loop-bound). Values of closed
    loops are dropped: they hold their loop, so a worker running one loop per batch would leak."""
    loop = asyncio.get_running_loop()
    entry = store.get(id(loop))
    if entry is None or entry[0] is not loop:
        for key, (old, _) in list(store.items()):
            if old.is_closed():
                store.pop(key, None)
        entry = store[id(loop)] = (loop, factory())
    return entry[1]


def cache_key(parts: dict[str, Any]) -> str:
    """A stable digest of everything that decides a verdict.

    pydantic-core writes the JSON (in Rust: ~10x ``json.dumps``, once per judge call); the
    top-level parts are sorted, nested dicts keep their order (the code builds them in a
    fixed order; two requests that order one sample's JSON keys differently just miss)."""
    blob = pydantic_core.to_json(sorted(parts.items()), fallback=str)
    return "js:verdict:" + hashlib.sha256(blob).hexdigest()


class ResultCache(Protocol):
    """Where verdicts are kept. A failing cache is a miss, never a failed judge."""

    async def get(self, key: str) -> dict[str, Any] | None: ...

    async def set(self, key: str, value: dict[str, Any]) -> None: ...

    async def aclose(self) -> None: ...


class MemoryCache:
    """In-process LRU cache: the embedded default (no set-up)."""

    def __init__(self, max_items: int = 100_000) -> None:
        self.max_items = max_items
        self._items: OrderedDict[str, bytes] = OrderedDict()
        self._lock = threading.Lock()

    async def get(self, key: str) -> dict[str, Any] | None:
        with self._lock:
            blob = self._items.get(key)
            if blob is not None:
                self._items.move_to_end(key)
        return None if blob is None else pydantic_core.from_json(blob)

    async def set(self, key: str, value: dict[str, Any]) -> None:
        blob = pydantic_core.to_json(value)  # a copy: the caller may change its dict
        with self._lock:
            self._items[key] = blob
            self._items.move_to_end(key)
            while len(self._items) > self.max_items:
                self._items.popitem(last=False)

    async def aclose(self) -> None:
        """Nothing to close."""


class RedisCache:
    """Redis cache shared by all workers; one asyncio client per event loop (loop-bound)."""

    def __init__(self, url: str, *, ttl_s: int = 30 * 86400) -> None:
        self.url = url
        self.ttl_s = ttl_s
        self._clients: LoopLocal = {}

    def _client(self) -> Any:
        from redis import asyncio as aioredis

        return loop_local(
            self._clients,
            lambda: aioredis.from_url(self.url, socket_connect_timeout=2, socket_timeout=2),
        )

    async def get(self, key: str) -> dict[str, Any] | None:
        try:
            blob = await self._client().get(key)
        except Exception as exc:  # the cache is an optimisation: a Redis outage is a miss
            log.warning("verdict cache read failed: %s", exc)
            return None
        return None if blob is None else json.loads(blob)

    async def set(self, key: str, value: dict[str, Any]) -> None:
        try:
            await self._client().set(key, json.dumps(value), ex=self.ttl_s)
        except Exception as exc:
            log.warning("verdict cache write failed: %s", exc)

    async def aclose(self) -> None:
        """Close the running loop's client."""
        entry = self._clients.pop(id(asyncio.get_running_loop()), None)
        if entry is not None:
            await entry[1].aclose()


def make_cache(url: str | None) -> ResultCache:
    """Redis when a URL is set, else in-process."""
    return RedisCache(url) if url else MemoryCache()
