"""The reads both dispatchers share: whether a batch is done (what every ``wait`` asks)
and which workers are alive (``/readyz``).

Its own module so that both dispatchers import it and neither imports the other: the
dispatcher chooser loads the embedded executor, never the reverse.
"""

from __future__ import annotations

from sqlalchemy import select

from judge_service.core.storage import workers
from judge_service.core.storage.db import session_scope
from judge_service.core.storage.tables import BatchRow
from judge_service.core.storage.workers import WorkerSeen


def batch_done(database_url: str, batch_id: str) -> bool:
    """True when the batch is done in the database (the one source of truth)."""
    with session_scope(database_url) as session:
        status = session.scalar(select(BatchRow.status).where(BatchRow.id == batch_id))
        return status == "done"


def live_workers(database_url: str, within_s: float) -> list[WorkerSeen]:
    """Workers with a heartbeat within ``within_s`` (one lease: an older one's have lapsed)."""
    with session_scope(database_url) as session:
        return workers.live(session=session, within_s=within_s)
