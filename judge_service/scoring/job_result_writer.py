"""Writing a batch's outcomes as they arrive, and marking the batch done.

The writer buffers outcomes and stores them in small transactions on a shared
thread pool, off the scoring event loop. The last write also marks the batch
done, in the same transaction.
"""

from __future__ import annotations

import asyncio
import time
from collections import Counter
from collections.abc import Iterable
from concurrent.futures import ThreadPoolExecutor

from judge_service.core import metrics
from judge_service.core.storage.db import session_scope
from judge_service.domain import Outcome
from judge_service.scoring import store_batches as batches
from judge_service.scoring.store_results import ScoredSample, save_results

#: Shared by every batch of the process: a new loop's default executor would start
#: fresh threads for each batch.
DB_WRITERS = ThreadPoolExecutor(max_workers=4, thread_name_prefix="judge-db-write")
FLUSH_EVERY = 256
#: Outcomes wait at most this long to be written. Short, because the batch's last write is
#: on the trainer's clock (it holds the done mark); docs/benchmarks.md has the measurement.
FLUSH_INTERVAL_S = 0.1


class ResultWriter:
    """Stores one batch's outcomes; ``finish`` writes the rest and marks the batch done.

    ``positions[index]`` is the batch position of the ``index``-th sample being
    scored, ``sample_rows`` maps positions to sample row ids, ``n_samples`` is the
    whole batch (some samples may have been scored by an earlier run).
    """

    def __init__(
        self,
        database_url: str,
        batch_id: str,
        positions: list[int],
        sample_rows: dict[int, int],
        n_samples: int,
    ) -> None:
        self.database_url = database_url
        self.batch_id = batch_id
        self.n_samples = n_samples
        self.positions = positions
        self.sample_rows = sample_rows
        self.buffer: list[tuple[int, Outcome]] = []
        self.last_flush = time.monotonic()
        self.stored = 0
        self.all_inserted = True  # False once another run had stored some of these first
        self.received = 0

    async def add(self, index: int, outcome: Outcome) -> None:
        """Take the outcome of ``positions[index]``; write a chunk when one is due."""
        self.buffer.append((self.positions[index], outcome))
        self.received += 1
        if self.received == len(self.positions):
            return  # the last one: ``finish`` writes it with the done mark, in one go
        due = time.monotonic() - self.last_flush >= FLUSH_INTERVAL_S
        if len(self.buffer) >= FLUSH_EVERY or due:
            await self._flush(finish=False)

    async def flush(self) -> None:
        """Write what is buffered now, without the done mark (the scoring was stopped)."""
        await self._flush(finish=False)

    async def finish(self) -> bool:
        """Write what is left and mark the batch done if complete; True when it is done."""
        return await self._flush(finish=True)

    async def _flush(self, *, finish: bool) -> bool:
        chunk, self.buffer = self.buffer, []
        self.last_flush = time.monotonic()
        if not chunk and not finish:
            return False
        try:
            loop = asyncio.get_running_loop()
            return await loop.run_in_executor(DB_WRITERS, self._write, chunk, finish)
        finally:
            count_scored(outcome for _, outcome in chunk)

    def _write(self, chunk: list[tuple[int, Outcome]], finish: bool) -> bool:
        rows = self.sample_rows
        scored = [ScoredSample(rows[position], position, outcome) for position, outcome in chunk]
        with session_scope(self.database_url) as session:
            inserted = save_results(session=session, batch_id=self.batch_id, scored=scored)
            self.stored += len(scored)
            self.all_inserted = self.all_inserted and inserted == len(scored)
            if not finish:
                return False
            if self.all_inserted and self.stored == len(rows) == self.n_samples:
                # every sample's result went in with this run: no need to count them
                batches.mark_done(session=session, batch_id=self.batch_id)
                return True
            return batches.finish_if_complete(session=session, batch_id=self.batch_id)


def count_scored(scored: Iterable[Outcome]) -> None:
    """Add outcomes and their verdicts to the Prometheus counters: counted here in one
    loop, then one ``labels()`` call per kind (each costs a few microseconds)."""
    outcomes: Counter[str] = Counter()
    verdicts: Counter[tuple[str, str]] = Counter()
    for outcome in scored:
        outcomes[outcome.failure_kind or "valid"] += 1
        for verdict in outcome.judges:
            status = "ok" if verdict.ok else "timeout" if verdict.timed_out else "error"
            verdicts[verdict.judge, status] += 1
    for kind, n in outcomes.items():
        metrics.SAMPLES_SCORED.labels(kind).inc(n)
    for (judge, status), n in verdicts.items():
        metrics.JUDGE_VERDICTS.labels(judge, status).inc(n)
