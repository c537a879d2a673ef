"""Keys the API checked recently, so a trainer's every step needs no key read.

Why not cachetools' ``TTLCache``: it would be a new dependency for a dict with
expiry times, and this one needs nothing else (it is used from the event loop
only, so it needs no lock either).
"""

from __future__ import annotations

import time
from collections.abc import Callable

from judge_service.core.storage.keys import hash_key
from judge_service.core.storage.tables import ApiKeyRow

#: More distinct keys than any deployment uses within a few seconds; past it, start over.
MAX_KEYS = 1024


class CheckedKeys:
    """Key rows found live in the database, trusted for ``ttl_s`` after the check.

    Only keys that passed are kept: an unknown or revoked key is read every time.
    A key revoked in the database is therefore refused at most ``ttl_s`` later.
    """

    def __init__(self, ttl_s: float, clock: Callable[[], float] = time.monotonic) -> None:
        self.ttl_s = ttl_s
        self.clock = clock
        self._rows: dict[str, tuple[float, ApiKeyRow]] = {}

    def get(self, key: str) -> ApiKeyRow | None:
        """The row checked for ``key`` less than ``ttl_s`` ago, or None."""
        entry = self._rows.get(hash_key(key))
        if entry is None:
            return None
        checked_until, row = entry
        return row if self.clock() < checked_until else None

    def forget(self, key_id: str) -> None:
        """Stop trusting the key ``key_id`` (just revoked through this process): its next
        request reads the database. Other API processes refuse it within ``ttl_s``."""
        self._rows = {k: v for k, v in self._rows.items() if v[1].id != key_id}

    def put(self, key: str, row: ApiKeyRow) -> None:
        if self.ttl_s <= 0:
            return
        now = self.clock()
        if len(self._rows) >= MAX_KEYS:
            self._rows = {k: v for k, v in self._rows.items() if v[0] > now}
            if len(self._rows) >= MAX_KEYS:
                self._rows.clear()
        self._rows[hash_key(key)] = (now + self.ttl_s, row)
