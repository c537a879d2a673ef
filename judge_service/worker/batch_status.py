"""Whether a batch is done, read from its row: what every dispatcher's ``wait`` asks.

Its own module so that both dispatchers import it and neither imports the other: the
dispatcher chooser loads the embedded executor, never the reverse.
"""

from __future__ import annotations

from judge_service.storage import batches
from judge_service.storage.db import session_scope


def batch_done(database_url: str, batch_id: str) -> bool:
    """True when the batch is done in the database (the one source of truth)."""
    with session_scope(database_url) as session:
        return batches.status_of(session=session, batch_id=batch_id) == "done"
