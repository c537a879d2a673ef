"""``judge-service forge``: traces and documents to tasks (run inline), and export for training.

The commands work on ``JS_DATABASE_URL`` directly, like ``rubrics import``; the jobs they
start are the same jobs the API queues, run in this process.
"""

from __future__ import annotations

import json
from pathlib import Path
from typing import Annotated, Any

import typer
from pydantic import BaseModel, ValidationError

from judge_service.core.cli_common import CommandLine, project_name, schema_first
from judge_service.core.settings import Settings, get_settings

forge_app = typer.Typer(no_args_is_help=True, help="Tasks from production traces and documents.")


def _fail(message: str) -> typer.Exit:
    typer.echo(f"error: {message}", err=True)
    return typer.Exit(2)


def _spec(value: str | None) -> Any:
    if value is None:
        return None
    return json.loads(value) if value.lstrip().startswith("{") else value


def _options(model: type[BaseModel], **values: Any) -> BaseModel:
    try:
        return model.model_validate({k: v for k, v in values.items() if v is not None})
    except ValidationError as exc:
        error = exc.errors()[0]
        field = ".".join(str(p) for p in error["loc"]) or "options"
        raise _fail(f"invalid option {field}: {error['msg']}") from exc


def _read(path: Path, settings: Settings) -> str:
    size = path.stat().st_size
    if size > settings.max_body_bytes:
        raise _fail(
            f"{path} is {size / 2**20:.1f} MB, over JS_MAX_BODY_MB ({settings.max_body_mb:g} MB)"
        )
    return path.read_text(encoding="utf-8")


#: The project a job is made in: its families, tasks, review items and rubric are that project's.
JobProject = Annotated[
    str, typer.Option(help="The job's project: its tasks, review items and rubric are its own")
]


def _run(
    kind: str,
    text: str,
    options: BaseModel,
    parse: Any,
    settings: Settings,
    project: str,
    *,
    as_json: bool = True,
) -> None:
    from judge_service.core.storage import audit
    from judge_service.core.storage.db import session_scope
    from judge_service.forge import store as forge_store
    from judge_service.forge.job import run_forge
    from judge_service.traces.inputs import ForgeInputError

    try:
        parse(text)
    except ForgeInputError as exc:
        field = f" (field `{exc.field}`)" if exc.field and exc.line is not None else ""
        raise _fail(f"{exc}{field}") from exc
    with session_scope(settings.database_url) as session:
        job = forge_store.create_job(
            session=session,
            kind=kind,
            options=options.model_dump(mode="json", exclude_none=True),
            inputs=text,
            created_by="cli",
            project=project,
        )
        audit.record(session=session, actor="cli", action=f"forge.{kind}", target=job.id)
        job_id = job.id
    status = run_forge(job_id, settings=settings)
    with session_scope(settings.database_url) as session:
        row = forge_store.get_job(session=session, job_id=job_id)
        assert row is not None
        families = [
            {"id": f.id, "name": f.name, "tasks": f.tasks, "failed_traces": f.failed_traces}
            for f in forge_store.job_families(session=session, job_id=job_id)
        ]
        out = {"id": job_id, "status": status, "counts": row.counts, "families": families}
        if (row.result or {}).get("set_aside"):
            out["set_aside"] = row.result["set_aside"]
        if row.error:
            out["error"] = row.error
        if not as_json and status == "done":
            from judge_service.forge.cli_table import print_trace_job

            print_trace_job(session=session, job=row)
    if as_json or status != "done":
        typer.echo(json.dumps(out, indent=2))
    if status != "done":
        raise typer.Exit(1)


@forge_app.command("traces")
def traces(
    file: Annotated[
        Path, typer.Argument(exists=True, dir_okay=False, help="JSONL, a trace a line")
    ],
    rubric: Annotated[str | None, typer.Option(help="Rubric that mined items join")] = None,
    miner: Annotated[str | None, typer.Option(help="Mining model: litellm string or JSON")] = None,
    max_items: Annotated[int | None, typer.Option(help="Most items mined per family")] = None,
    writes: Annotated[
        list[str] | None, typer.Option("--write", help="A tool to take as a write (repeat)")
    ] = None,
    reads: Annotated[
        list[str] | None, typer.Option("--read", help="A tool to take as a read (repeat)")
    ] = None,
    mine: Annotated[
        bool, typer.Option(help="Mine families with failed traces for rubric items")
    ] = True,
    policy: Annotated[
        bool, typer.Option(help="Ask the miner where the agent broke its rules (needs --miner)")
    ] = False,
    hindsight: Annotated[
        bool, typer.Option(help="Ask the judges which candidate a disagreeing task called for")
    ] = True,
    judges: Annotated[
        list[str] | None,
        typer.Option("--judge", help="A hindsight judge (repeat; default: the miner)"),
    ] = None,
    as_json: Annotated[bool, typer.Option("--json", help="Print the job as JSON")] = False,
    project: JobProject = "default",
) -> None:
    """Tasks from traces, one per user goal, with reference end states: a table of the tasks
    (goal line, runs, end state, its source), the tool classes and the failure signs, and
    the traces set aside with the reason."""
    from judge_service.forge.wire import TraceOptions
    from judge_service.traces.conversation import read_traces

    project = project_name(project)
    settings = get_settings()
    tools = {"writes": writes or [], "reads": reads or []} if writes or reads else None
    options = _options(
        TraceOptions,
        rubric=rubric,
        miner=_spec(miner),
        max_items=max_items,
        tools=tools,
        mine=None if mine else False,
        policy=policy or None,
        hindsight=None if hindsight else False,
        hindsight_judges=[_spec(j) for j in judges] if judges else None,
    )
    text = _read(file, settings)
    _run("traces", text, options, read_traces, settings, project, as_json=as_json)


def _documents_text(path: Path, settings: Settings) -> str:
    from judge_service.forge.documents import read_folder
    from judge_service.traces.inputs import ForgeInputError

    if path.is_dir():
        try:
            documents = read_folder(path)
        except ForgeInputError as exc:
            raise _fail(str(exc)) from exc
        text = "".join(json.dumps({"id": d.id, "text": d.text}) + "\n" for d in documents)
        if len(text.encode()) > settings.max_body_bytes:
            raise _fail(f"{path} holds over JS_MAX_BODY_MB ({settings.max_body_mb:g} MB) of text")
        return text
    if path.suffix == ".jsonl":
        return _read(path, settings)
    return json.dumps({"id": path.name, "text": _read(path, settings)}) + "\n"


@forge_app.command("documents")
def documents(
    path: Annotated[Path, typer.Argument(exists=True, help="A folder of .md/.txt, or JSONL")],
    generator: Annotated[str | None, typer.Option(help="Writes {question, answer, quote}")] = None,
    verifier: Annotated[
        list[str] | None, typer.Option(help="Answers with the chunk; repeat for a panel")
    ] = None,
    solver: Annotated[str | None, typer.Option(help="The policy-class model, no chunk")] = None,
    samples_per_task: Annotated[int | None, typer.Option(help="Solver samples per task")] = None,
    max_tasks: Annotated[int | None, typer.Option(help="Stop after this many tasks")] = None,
    min_pass: Annotated[float | None, typer.Option(help="Keep pass rates above this")] = None,
    max_pass: Annotated[float | None, typer.Option(help="... and at most this")] = None,
    chunk_chars: Annotated[int | None, typer.Option(help="Largest chunk")] = None,
    project: JobProject = "default",
) -> None:
    """Grounded tasks from documents: kept where the solver fails without the document."""
    from judge_service.forge.documents import parse_documents
    from judge_service.forge.wire import DocumentOptions

    project = project_name(project)
    settings = get_settings()
    options = _options(
        DocumentOptions,
        generator=_spec(generator),
        verifiers=[_spec(v) for v in verifier] if verifier else None,
        solver=_spec(solver),
        samples_per_task=samples_per_task,
        max_tasks=max_tasks,
        min_pass=min_pass,
        max_pass=max_pass,
        chunk_chars=chunk_chars,
    )
    text = _documents_text(path, settings)
    _run("documents", text, options, parse_documents, settings, project)


@forge_app.command("export")
def export(
    out: Annotated[Path, typer.Option("--out", help="JSONL for datasets.load_dataset('json')")],
    tier: Annotated[str | None, typer.Option(help="too_easy, learnable or too_hard")] = None,
    run: Annotated[str | None, typer.Option(help="Take tiers from this run first")] = None,
    family: Annotated[str | None, typer.Option(help="A family id or name")] = None,
    include_unapproved: Annotated[bool, typer.Option(help="Also pending families")] = False,
    project: Annotated[
        str | None,
        typer.Option(help="Only this project's tasks and run (default: every project's)"),
    ] = None,
) -> None:
    """Write approved tasks (prompt, reference, task_id, ...) as JSONL."""
    from judge_service.core.storage.db import session_scope
    from judge_service.forge import store as forge_store
    from judge_service.forge.export import record
    from judge_service.forge.store_runs import apply_run_tiers
    from judge_service.forge.tiers import TIERS

    if tier is not None and tier not in TIERS:
        raise _fail(f"--tier must be one of {', '.join(TIERS)}")
    project = None if project is None else project_name(project)
    settings = get_settings()
    with session_scope(settings.database_url) as session:
        run_tiers: dict[str, str | None] = {}
        if run is not None:  # this run's tiers decide, even where a later run stored its own
            stats, _, _ = apply_run_tiers(session=session, run_id=run, project=project)
            if not stats:
                where = "" if project is None else f" in project {project!r}"
                raise _fail(f"no scored samples with a task for run {run!r}{where}")
            run_tiers = {s.task: s.tier for s in stats}
        rows = forge_store.list_tasks(
            session=session,
            family=family,
            tier=tier if run is None else None,
            approved=None if include_unapproved else True,
            project=project,
        )
        records = []
        for task, fam in rows:
            task_tier = run_tiers.get(task.id) if run is not None else task.tier
            if fam.status == "retired" or (tier is not None and task_tier != tier):
                continue
            records.append(
                record(
                    task_id=task.id,
                    prompt=task.prompt,
                    reference=task.reference,
                    tools=task.tools,
                    family=fam.name,
                    tier=task_tier,
                    kind=task.kind,
                )
            )
    out.write_text("".join(json.dumps(r) + "\n" for r in records), encoding="utf-8")
    typer.echo(f"{len(records)} tasks written to {out}")


def add_commands(cli: CommandLine) -> None:
    """This feature's commands on ``judge-service`` (``core.features``)."""
    cli.add_typer(schema_first(forge_app), name="forge")
