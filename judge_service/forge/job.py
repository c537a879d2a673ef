"""The forge task: a traces or documents job through :mod:`judge_service.forge` into storage.

Runs on a Celery worker or the embedded executor (``FORGE_TASK``), or inline from the CLI.
Safe to run twice: a finished job is not run again, a re-delivered one replaces what it had
written, and review items are keyed by family. The traces half is
:mod:`judge_service.forge.job_traces`.
"""

from __future__ import annotations

import logging
from functools import partial
from typing import Any

from judge_service.core.settings import Settings
from judge_service.core.storage.db import session_scope
from judge_service.forge import store as forge_store
from judge_service.forge.documents import parse_documents
from judge_service.forge.job_documents import forge_documents
from judge_service.forge.job_review import enqueue_family
from judge_service.forge.job_traces import traces_job

log = logging.getLogger(__name__)


def _documents_job(job_id: str, text: str, options: dict[str, Any], settings: Settings, scope: Any):
    """Grounded tasks from documents, one family per document, a review item per family."""
    result, counts, grouped, usage = forge_documents(
        job_id, parse_documents(text), options, settings
    )
    with scope() as session:
        forge_store.clear_job_output(session=session, job_id=job_id)
        position = 0
        for index, (name, terms, members) in enumerate(grouped):
            row = forge_store.add_family(
                session=session,
                job_id=job_id,
                index=index,
                name=name,
                terms=terms,
                tasks=len(members),
            )
            shown = []
            for member in members:
                task = result.tasks[member]
                added = forge_store.add_task(
                    session=session,
                    family=row,
                    position=position,
                    kind="document",
                    prompt=task.question,
                    tools=None,
                    reference=task.answer,
                    source=task.source(),
                    with_context=task.with_context,
                    without_context=task.without_context,
                    duplicates=0,
                    failed=False,
                    failures=[],
                )
                position += 1
                shown.append(
                    {
                        "id": added.id,
                        "question": task.question,
                        "reference": task.answer,
                        "quote": task.quote,
                        "with_context": task.with_context,
                        "without_context": task.without_context,
                    }
                )
            enqueue_family(
                session=session,
                family=row,
                kind="documents",
                counts={"tasks": len(members)},
                tasks=shown,
            )
    return counts, {"drops": result.drops, "usage": usage.model_dump()}


def run_forge(
    job_id: str,
    *,
    settings: Settings,
    scope: Any = None,
) -> str:
    """Run the job; returns its final status (``done``, ``failed``, or the status it had)."""
    scope = scope or partial(session_scope, settings.database_url)
    with scope() as session:
        job = forge_store.get_job(session=session, job_id=job_id)
        if job is None or not forge_store.start_job(session=session, job_id=job_id):
            return "missing" if job is None else job.status
        kind, text, options = job.kind, job.inputs, dict(job.options or {})
    try:
        run = traces_job if kind == "traces" else _documents_job
        counts, result = run(job_id, text, options, settings, scope)
    except Exception as exc:  # a failed job says why; it does not crash the worker
        log.exception("forge job %s failed", job_id)
        with scope() as session:
            forge_store.finish_job(
                session=session,
                job_id=job_id,
                counts={},
                result={},
                error=f"{type(exc).__name__}: {exc}",
            )
        return "failed"
    with scope() as session:
        forge_store.finish_job(session=session, job_id=job_id, counts=counts, result=result)
    return "done"
