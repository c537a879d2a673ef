"""Traces already forged, per project: a repeat upload adds no task.

A trace is known by its id and the hash of its content, so a trace sent again unchanged is
skipped (and linked to the tasks it went into), while a trace whose content changed under the
same id is forged as new.
"""

from __future__ import annotations

import hashlib
import json
from collections.abc import Iterable
from typing import Any

from sqlalchemy import delete, select, tuple_
from sqlalchemy.orm import Session

from judge_service.forge.tables import SeenTraceRow


def content_hash(record: dict[str, Any]) -> str:
    """The hash of a trace's content (its messages, tools and metadata; key order aside)."""
    text = json.dumps(record, sort_keys=True, ensure_ascii=False, separators=(",", ":"))
    return hashlib.sha256(text.encode("utf-8")).hexdigest()


def seen(
    *, session: Session, project: str, keys: Iterable[tuple[str, str]]
) -> dict[tuple[str, str], list[str]]:
    """Of ``(trace id, content hash)`` keys, those already forged in ``project``, with the
    ids of the tasks they went into."""
    keys = list(keys)
    found: dict[tuple[str, str], list[str]] = {}
    for start in range(0, len(keys), 500):
        chunk = keys[start : start + 500]
        query = select(SeenTraceRow).where(
            SeenTraceRow.project == project,
            tuple_(SeenTraceRow.trace_id, SeenTraceRow.content_hash).in_(chunk),
        )
        for row in session.scalars(query):
            found[(row.trace_id, row.content_hash)] = list(row.task_ids)
    return found


def record(
    *,
    session: Session,
    project: str,
    job_id: str,
    traces: dict[tuple[str, str], list[str]],
) -> None:
    """Remember the job's new traces with the tasks each went into."""
    for (trace_id, digest), task_ids in traces.items():
        row_id = hashlib.sha256(f"{project}:{trace_id}:{digest}".encode()).hexdigest()[:32]
        if session.get(SeenTraceRow, row_id) is None:
            session.add(
                SeenTraceRow(
                    id=row_id,
                    project=project,
                    trace_id=trace_id,
                    content_hash=digest,
                    job_id=job_id,
                    task_ids=task_ids,
                )
            )
    session.flush()


def forget_job(*, session: Session, job_id: str) -> None:
    """Drop what an interrupted run of the job recorded, so its re-run records it whole."""
    session.execute(delete(SeenTraceRow).where(SeenTraceRow.job_id == job_id))
