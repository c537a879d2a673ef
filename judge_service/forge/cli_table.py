"""``judge-service forge traces``'s table: what a trace job made, readable in a terminal.

One row per task: its family, goal line, how many runs it merged, its reference end state
(each entity with its status-like fields) and where that came from; then the tools' read/write
classes and the failure signs with their precision against the traces' labels; then the
traces set aside, each with its reason.
"""

from __future__ import annotations

from typing import Any

from rich.console import Console
from rich.markup import escape
from rich.table import Table
from sqlalchemy.orm import Session

from judge_service.forge import store as forge_store
from judge_service.forge.tables import ForgeJobRow

STATUS_FIELDS = ("status", "state", "stage")
MAX_ROWS = 200


def end_state_text(state: dict[str, Any] | None) -> str:
    """An end state in a few words: each entity, with its status-like field if it has one."""
    if state is None:
        return "—"
    if not state:
        return "no change"
    parts = []
    for key, value in state.items():
        shown = ""
        if isinstance(value, dict):
            found = [f"{f}={value[f]}" for f in STATUS_FIELDS if isinstance(value.get(f), str)]
            shown = f" ({found[0]})" if found else f" ({len(value)} fields)"
        parts.append(f"{key}{shown}")
    return "; ".join(parts)


def print_trace_job(*, session: Session, job: ForgeJobRow, console: Console | None = None) -> None:
    console = console or Console(width=160)
    counts, result = job.counts or {}, job.result or {}
    console.print(
        f"forge job {job.id}: {counts.get('traces', 0)} traces, {counts.get('tasks', 0)} tasks "
        f"in {counts.get('families', 0)} families, {counts.get('with_reference', 0)} with a "
        f"reference end state, {counts.get('needs_review', 0)} to review, "
        f"{counts.get('already_seen', 0)} traces already seen, "
        f"{counts.get('set_aside', 0)} set aside"
    )
    console.print(f"goal embeddings: {escape(str(result.get('embedding_model', '?')))}")
    table = Table("family", "goal", "runs", "reference end state", "source", show_lines=False)
    rows = forge_store.list_tasks(session=session, job_id=job.id, limit=MAX_ROWS)
    for task, family in rows:
        source = task.end_state_source or "none"
        if task.needs_review:
            source += ", review"
        table.add_row(
            escape(family.name[:32]),
            escape((task.goal or "")[:160]),
            str(task.duplicates + 1),
            escape(end_state_text(task.end_state)[:70]),
            source,
        )
    console.print(table)
    if counts.get("tasks", 0) > MAX_ROWS:
        console.print(f"(the first {MAX_ROWS} tasks; GET /v1/tasks?job_id={job.id} lists all)")
    tools = result.get("tools") or {}
    writes = sorted(n for n, t in tools.items() if t.get("effect") == "write")
    console.print(f"writes: {escape(', '.join(writes) or 'none')}")
    console.print(f"reads: {len(tools) - len(writes)} tools")
    signs = result.get("failure_signs")
    if signs:
        any_sign = signs["any_sign"]
        console.print(
            f"failure signs vs {signs['labelled']} labels ({signs['failed']} failed): "
            f"{any_sign['flagged']} traces flagged, precision {any_sign['precision']}, "
            f"recall {any_sign['recall']}, balanced accuracy {any_sign['balanced_accuracy']}"
        )
        for kind, figures in signs["by_sign"].items():
            flagged, precision = figures["flagged"], figures["precision"]
            console.print(f"  {kind}: {flagged} traces, precision {precision}")
    print_set_aside(result, console)


def _print_entries(entries: list[dict[str, Any]], console: Console) -> None:
    """The first ``MAX_ROWS`` entries, each as its line, its trace and its reason."""
    for entry in entries[:MAX_ROWS]:
        where = f"line {entry.get('line')} ({entry.get('trace_id')})"
        console.print(f"  {escape(where)}: {escape(str(entry.get('reason')))}")


def print_set_aside(result: dict[str, Any], console: Console) -> None:
    """The traces the job set aside, each with its line and reason, and the tool calls and
    answers it dropped as unpaired."""
    aside = result.get("set_aside") or []
    if aside:
        console.print(f"set aside: {len(aside)} traces, not forged")
        _print_entries(aside, console)
    pairs = result.get("broken_pairs") or []
    if pairs:
        console.print(f"dropped: {len(pairs)} unpaired tool calls or answers (traces forged)")
        _print_entries(pairs, console)
    if len(aside) > MAX_ROWS or len(pairs) > MAX_ROWS:
        console.print(f"(the first {MAX_ROWS} of each; the job's result lists all)")
