"""The traces half of a forge job: traces through the pure forge into tasks, families and
review items, remembering each trace so that a repeat upload adds nothing.

A trace the forge cannot use (:func:`~judge_service.traces.conversation.unforgeable`, or one that
yields no goal) is set aside: ``result.set_aside`` lists each with its line and the reason,
``counts.set_aside`` says how many, and the other traces are forged.

Traces already forged in the job's project (same id, same content) are skipped and counted
under ``already_seen``, with links to the tasks they went into.
"""

from __future__ import annotations

from typing import Any

from judge_service.core.settings import Settings
from judge_service.forge import store as forge_store
from judge_service.forge import store_seen
from judge_service.forge.embed import get_embedder
from judge_service.forge.job_asks import ask_all
from judge_service.forge.job_goals import goal_lines
from judge_service.forge.job_hindsight import judge_references
from judge_service.forge.job_review import enqueue_family, job_project, mine_families
from judge_service.forge.policy import SCHEMA as POLICY_SCHEMA
from judge_service.forge.policy import policy_prompt, policy_signs
from judge_service.forge.tables import TaskFamilyRow
from judge_service.forge.trace_tasks import TraceForge, TraceTask, forge_traces
from judge_service.judging.client_options import default_model
from judge_service.traces.conversation import Trace, read_traces


def mining_skipped(options: dict[str, Any], settings: Settings) -> str | None:
    """Why the job mines no rubric items, or ``None`` when it does. Without a ``miner`` and
    without a model in ``JS_DEFAULT_JUDGES``, mining would run on the local SmolLM2 model, a
    minute or more per failed family on a CPU, for items of little use: the job says so
    instead of taking that long."""
    if not options.get("mine", True):
        return "mine=false"
    if options.get("miner") is None and default_model(settings) is None:
        return "no miner: give miner= (or JS_DEFAULT_JUDGES) to mine the failed families"
    return None


def check_policy(
    job_id: str, traces: list[Trace], forged: TraceForge, miner: Any, settings: Settings
) -> dict[str, int]:
    """``policy_violation`` signs from the miner, on the traces that have rules; counts."""
    asked = [(t, p) for t in traces if (p := policy_prompt(t)) is not None]
    replies = ask_all(
        job_id,
        miner,
        settings,
        [p for _, p in asked],
        schema=POLICY_SCHEMA,
        name="policy",
        max_tokens=600,
    )
    found: dict[str, list[Any]] = {}
    counts = {"checked": 0, "failed_calls": 0, "violations": 0, "dropped": 0}
    for (trace, _), reply in zip(asked, replies, strict=True):
        counts["checked" if reply is not None else "failed_calls"] += 1
        signs, dropped = policy_signs(trace, reply)
        counts["violations"] += len(signs)
        counts["dropped"] += dropped
        if signs:
            found[trace.id] = signs
    forged.add_signs(traces, found)
    return counts


def trace_key(trace: Trace) -> tuple[str, str]:
    content = {"messages": trace.messages, "tools": trace.tools, "metadata": trace.metadata}
    return trace.id, store_seen.content_hash(content)


def _task_fields(task: TraceTask, goal: str) -> dict[str, Any]:
    first, agreed = task.first, task.consensus
    assert agreed is not None
    return {
        "kind": "trace",
        "prompt": first.prompt,
        "tools": first.tools,
        "reference": None,
        "source": {
            "trace_id": first.trace_id,
            "turn": first.turn,
            "traces": task.trace_ids,
            "request": first.request,
            "entities": first.entities,
            "identity": task.identity,
            "evidence": task.evidence(),
        },
        "duplicates": task.repeats,
        "failed": bool(task.failures),
        "failures": task.failures,
        "goal": goal,
        "end_state": agreed.reference,
        "end_state_source": agreed.source,
        "end_states": [c.as_dict() for c in agreed.candidates],
        "needs_review": agreed.needs_review,
    }


def _shown(task_id: str, task: TraceTask, goal: str) -> dict[str, Any]:
    """A task as its family's review item shows it: the candidate end states side by side."""
    agreed = task.consensus
    assert agreed is not None
    return {
        "id": task_id,
        "goal": goal,
        "request": task.first.request,
        "traces": task.trace_ids[:5],
        "duplicates": task.repeats,
        "failures": task.failures[:3],
        "needs_review": agreed.needs_review,
        "end_state_source": agreed.source,
        "end_states": [c.as_dict() for c in agreed.candidates[:4]],
    }


def _store(
    scope: Any, job_id: str, forged: TraceForge, lines: list[str], keys: dict[str, Any]
) -> list[tuple[str, Any]]:
    stored: list[tuple[str, Any]] = []
    by_trace: dict[tuple[str, str], list[str]] = {}
    index_of = {id(t): i for i, t in enumerate(forged.tasks)}
    with scope() as session:
        project = job_project(session=session, job_id=job_id)
        position = 0
        for index, family in enumerate(forged.families):
            row: TaskFamilyRow = forge_store.add_family(
                session=session,
                job_id=job_id,
                index=index,
                name=family.name,
                terms=family.terms,
                tasks=len(family.tasks),
                failed_traces=len(family.failed_traces),
            )
            shown = []
            for task in family.tasks:
                goal = lines[index_of[id(task)]]
                added = forge_store.add_task(
                    session=session, family=row, position=position, **_task_fields(task, goal)
                )
                position += 1
                shown.append(_shown(added.id, task, goal))
                for trace_id in task.trace_ids:
                    by_trace.setdefault(keys[trace_id], []).append(added.id)
            counts = {
                "tasks": len(family.tasks),
                "duplicates_merged": sum(t.repeats for t in family.tasks),
                "failed_traces": len(family.failed_traces),
                "needs_review": sum(1 for t in family.tasks if t.consensus.needs_review),
            }
            enqueue_family(session=session, family=row, kind="traces", counts=counts, tasks=shown)
            stored.append((row.id, family))
        store_seen.record(session=session, project=project, job_id=job_id, traces=by_trace)
    return stored


def traces_job(
    job_id: str, text: str, options: dict[str, Any], settings: Settings, scope: Any
) -> tuple[dict[str, Any], dict[str, Any]]:
    """Tasks and families from the job's new traces, a review item per family, then mining
    of the families with failed traces. Returns the job's counts and result."""
    parsed, unread = read_traces(text)
    keys = {t.id: trace_key(t) for t in parsed}
    with scope() as session:
        forge_store.clear_job_output(session=session, job_id=job_id)
        store_seen.forget_job(session=session, job_id=job_id)
        project = job_project(session=session, job_id=job_id)
        known = store_seen.seen(session=session, project=project, keys=keys.values())
    fresh = [t for t in parsed if keys[t.id] not in known]
    overrides = options.get("tools") or {}
    forged = forge_traces(
        fresh,
        embedder=get_embedder(settings.forge_embeddings),
        writes=overrides.get("writes") or (),
        reads=overrides.get("reads") or (),
    )
    lines, line_counts = goal_lines(job_id, forged.tasks, options.get("miner"), settings)
    dropped = {a.trace_id for a in forged.set_aside}
    forged_traces = [t for t in fresh if t.id not in dropped]
    policy = (
        check_policy(job_id, forged_traces, forged, options.get("miner"), settings)
        if options.get("policy")
        else None
    )
    hindsight = judge_references(job_id, forged_traces, forged, lines, options, settings)
    stored = _store(scope, job_id, forged, lines, keys)
    skipped = mining_skipped(options, settings)
    mining = (
        []
        if skipped
        else mine_families(
            session_scope=scope, job_id=job_id, options=options, families=stored, settings=settings
        )
    )
    already = [
        {"trace_id": t.id, "task_ids": known[keys[t.id]]} for t in parsed if keys[t.id] in known
    ]
    set_aside = [a.as_dict() for a in [*unread, *forged.set_aside]]
    result = {
        "set_aside": sorted(set_aside, key=lambda a: a["line"]),
        "failed": forged.failed,
        "mining": mining,
        **forged.result(),
        "goal_lines": line_counts,
        "policy": policy,
        "hindsight": hindsight,
        "mining_skipped": skipped,
        "already_seen": already,
    }
    counts = {**forged.counts(), "set_aside": len(set_aside), "already_seen": len(already)}
    return counts, result
