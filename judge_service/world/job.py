"""The world task: the traces of forge jobs through :mod:`judge_service.world` into storage.

Runs on a Celery worker or the embedded executor (``WORLD_TASK``), or inline from the CLI.
Safe to run twice: a finished build is not run again, and a re-delivered one writes its
whole result in one update at the end.

The goals are the forge jobs' tasks (a task's repeats are its runs). One run of every goal
with repeats is held out: the world is built without them and measured on them
(:func:`~judge_service.world.fidelity.evaluate`). The world stored is then built from every
trace, held-out runs included, since that is the world episodes will run in; the fidelity is
its estimate on runs it has not seen.
"""

from __future__ import annotations

import logging
from functools import partial
from typing import Any

from sqlalchemy.orm import Session

from judge_service.core.settings import Settings
from judge_service.core.storage.db import session_scope
from judge_service.forge import store as forge_store
from judge_service.traces.conversation import Trace, parse_traces
from judge_service.world import store as world_store
from judge_service.world.build import build_world
from judge_service.world.fidelity import evaluate, hold_out
from judge_service.world.summary import world_counts, world_report

log = logging.getLogger(__name__)


def job_inputs(*, session: Session, job_ids: list[str]) -> tuple[list[Trace], dict[str, list[str]]]:
    """The traces of the forge jobs (a trace id seen in an earlier job is kept once) and the
    goals: task id -> the runs of it among these traces, in the jobs' task order. A trace a
    job skipped as already forged counts in the task it went into then."""
    traces: dict[str, Trace] = {}
    sources: dict[str, list[Any]] = {}  # task id -> its runs, in the jobs' task order
    seen: list[str] = []
    for job_id in job_ids:
        job = forge_store.get_job(session=session, job_id=job_id)
        if job is None or job.kind != "traces":
            raise ValueError(f"forge job {job_id!r} is gone or holds no traces")
        for trace in parse_traces(job.inputs):
            traces.setdefault(trace.id, trace)
        for task, _ in forge_store.list_tasks(session=session, job_id=job_id):
            if task.kind == "trace":
                sources[task.id] = (task.source or {}).get("traces", [])
        seen += [t for s in (job.result or {}).get("already_seen", []) for t in s["task_ids"]]
    for task_id in dict.fromkeys(t for t in seen if t not in sources):
        found = forge_store.get_task(session=session, task_id=task_id)
        if found is not None and found[0].kind == "trace":
            sources[task_id] = (found[0].source or {}).get("traces", [])
    groups: dict[str, list[str]] = {}
    for task_id, runs in sources.items():
        kept = list(dict.fromkeys(str(t) for t in runs if t in traces))
        if kept:
            groups[task_id] = kept
    return list(traces.values()), groups


def build(
    traces: list[Trace], groups: dict[str, list[str]], jobs: int
) -> tuple[dict[str, Any], dict[str, Any], dict[str, Any]]:
    """The world (as JSON), its counts and its report."""
    held = hold_out(groups)
    held_world, fidelity = evaluate(traces, held)
    world = build_world(traces) if held else held_world
    counts = world_counts(world, jobs=jobs, traces=len(traces), groups=groups, held_out=held)
    return world.model_dump(mode="json"), counts, world_report(world, fidelity)


def run_world(world_id: str, *, settings: Settings, scope: Any = None) -> str:
    """Build the world; returns its final status (``done``, ``failed``, or the status it had)."""
    scope = scope or partial(session_scope, settings.database_url)
    with scope() as session:
        row = world_store.get_world(session=session, world_id=world_id)
        if row is None or not world_store.start_world(session=session, world_id=world_id):
            return "missing" if row is None else row.status
        job_ids = list(row.jobs)
    try:
        with scope() as session:
            traces, groups = job_inputs(session=session, job_ids=job_ids)
        world, counts, report = build(traces, groups, len(job_ids))
    except Exception as exc:  # a failed build says why; it does not crash the worker
        log.exception("world %s failed", world_id)
        with scope() as session:
            world_store.finish_world(
                session=session, world_id=world_id, error=f"{type(exc).__name__}: {exc}"
            )
        return "failed"
    with scope() as session:
        world_store.finish_world(
            session=session, world_id=world_id, world=world, counts=counts, report=report
        )
    return "done"
