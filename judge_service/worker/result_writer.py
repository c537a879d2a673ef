"""Writing a batch's outcomes as they arrive, and marking the batch done.

The writer buffers outcomes and stores them in small transactions on a shared
thread pool, off the scoring event loop. The last write also marks the batch
done, in the same transaction. It keeps what it stored, so a batch scored from
start to end in this run can be answered from memory instead of read back.

With ``settle_first`` (the embedded fast path), a batch whose outcomes all arrive
in the last write is committed as one settled row instead (``storage.settled``):
the answer goes out after that commit, and the outcomes are written out as
results afterwards, by whoever runs :attr:`ResultWriter.settled` through
``settled.write_out``.
"""

from __future__ import annotations

import asyncio
import time
from collections import Counter
from collections.abc import Iterable
from concurrent.futures import Future, ThreadPoolExecutor
from operator import attrgetter

from judge_service import metrics
from judge_service.domain import Outcome
from judge_service.storage import batches, settled
from judge_service.storage.db import get_engine, session_scope
from judge_service.storage.results import ScoredSample, save_results

#: Shared by every batch of the process: a new loop's default executor would start
#: fresh threads for each batch.
DB_WRITERS = ThreadPoolExecutor(max_workers=4, thread_name_prefix="judge-db-write")
FLUSH_EVERY = 256
FLUSH_INTERVAL_S = 0.5
#: How long a write waits for the batch's own rows to be committed by the API.
STORED_WAIT_S = 60.0
_POSITION = attrgetter("position")


class BatchNotStored(Exception):
    """The batch's samples were never committed, so its outcomes have nowhere to go."""


class ResultWriter:
    """Stores one batch's outcomes; ``finish`` writes the rest and marks the batch done.

    ``sample_rows`` resolves to ``{position: sample row id}``. The embedded executor
    starts judging while the API still commits the samples, so the first write may
    have to wait for it; a Celery worker passes a future that is already resolved.
    """

    def __init__(
        self,
        database_url: str,
        batch_id: str,
        positions: list[int],
        sample_rows: Future[dict[int, int]],
        n_samples: int,
        *,
        settle_first: bool = False,
    ) -> None:
        self.database_url = database_url
        self.settle_first = settle_first
        #: The outcomes committed as a settled row, still to be written out as results.
        self.settled: list[ScoredSample] | None = None
        self.batch_id = batch_id
        self.n_samples = n_samples
        self.positions = positions
        self.sample_rows = sample_rows
        self.buffer: list[tuple[int, Outcome]] = []
        self.last_flush = time.monotonic()
        self.stored: list[ScoredSample] = []
        self.all_inserted = True  # False once another run had stored some of these first
        self.received = 0
        self.not_stored: BatchNotStored | None = None

    async def add(self, index: int, outcome: Outcome) -> None:
        """Take the outcome of ``positions[index]``; write a chunk when one is due."""
        self.buffer.append((self.positions[index], outcome))
        self.received += 1
        if self.received == len(self.positions):
            return  # the last one: ``finish`` writes it with the done mark, in one go
        due = time.monotonic() - self.last_flush >= FLUSH_INTERVAL_S
        if len(self.buffer) >= FLUSH_EVERY or due:
            await self._flush(finish=False)

    async def finish(self) -> bool:
        """Write what is left and mark the batch done if complete; True when it is done
        (or, with ``settle_first``, settled: see :attr:`settled`).

        Raises :class:`BatchNotStored` when the batch's samples were never committed.
        """
        if self.not_stored is not None:
            raise self.not_stored
        return await self._flush(finish=True)

    async def _flush(self, *, finish: bool) -> bool:
        chunk, self.buffer = self.buffer, []
        self.last_flush = time.monotonic()
        try:
            if (not chunk and not finish) or self.not_stored is not None:
                return False
            loop = asyncio.get_running_loop()
            return await loop.run_in_executor(DB_WRITERS, self._write, chunk, finish)
        except BatchNotStored as exc:
            self.not_stored = exc  # outcomes still arriving have nowhere to go either
            if finish:
                raise
            return False
        finally:
            if self.settled is None:  # a settled batch is counted as it is written out
                count_scored(outcome for _, outcome in chunk)

    def _write(self, chunk: list[tuple[int, Outcome]], finish: bool) -> bool:
        try:
            rows = self.sample_rows.result(timeout=STORED_WAIT_S)
        except Exception as exc:
            raise BatchNotStored(f"batch {self.batch_id} was not stored: {exc!r}") from exc
        scored = [ScoredSample(rows[position], position, outcome) for position, outcome in chunk]
        whole = not self.stored and len(scored) == len(rows) == self.n_samples
        if finish and self.settle_first and whole:
            with get_engine(self.database_url).begin() as connection:
                taken = settled.settle(connection=connection, batch_id=self.batch_id, scored=scored)
            if taken:
                self.stored, self.settled = scored, scored
                return True
        with session_scope(self.database_url) as session:
            inserted = save_results(session=session, batch_id=self.batch_id, scored=scored)
            self.stored.extend(scored)
            self.all_inserted = self.all_inserted and inserted == len(scored)
            if not finish:
                return False
            if self.all_inserted and len(self.stored) == len(rows) == self.n_samples:
                # every sample's result went in with this run: no need to count them
                batches.mark_done(session=session, batch_id=self.batch_id)
                return True
            return batches.finish_if_complete(session=session, batch_id=self.batch_id)

    def answered(self) -> list[Outcome] | None:
        """Every stored outcome in sample order, when this run stored the whole batch."""
        if not self.all_inserted or len(self.stored) != self.n_samples:
            return None
        return [item.outcome for item in sorted(self.stored, key=_POSITION)]


def resolved(rows: dict[int, int]) -> Future[dict[int, int]]:
    """A future already holding ``rows`` (for batches read from the database)."""
    future: Future[dict[int, int]] = Future()
    future.set_result(rows)
    return future


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
