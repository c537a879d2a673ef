"""``judge-service world``: build a world from forge jobs (run inline), show or list worlds.

The commands work on ``JS_DATABASE_URL`` directly, like ``forge traces``; the build they
start is the same job the API queues, run in this process.
"""

from __future__ import annotations

import json
from pathlib import Path
from typing import Annotated, Any

import typer

from judge_service.core.cli_common import CommandLine, project_name, schema_first
from judge_service.core.settings import get_settings

world_app = typer.Typer(no_args_is_help=True, help="Worlds simulated from production traces.")


def _fail(message: str) -> typer.Exit:
    typer.echo(f"error: {message}", err=True)
    return typer.Exit(2)


def _detail(world_id: str) -> dict[str, Any] | None:
    """The world as ``GET /v1/worlds/{id}`` answers it (JSON types), or None."""
    from judge_service.core.storage.db import session_scope
    from judge_service.world import store as world_store
    from judge_service.world.wire import WorldDetail

    with session_scope(get_settings().database_url) as session:
        row = world_store.get_world(session=session, world_id=world_id)
        if row is None:
            return None
        return WorldDetail.model_validate(world_store.world_fields(row)).model_dump(mode="json")


def _print(detail: dict[str, Any], as_json: bool) -> None:
    if as_json:
        typer.echo(json.dumps(detail, indent=2))
        return
    from judge_service.world.cli_show import print_world

    print_world(detail)


def _models(settings: Any, **given: str | None) -> dict[str, Any]:
    """The model options as the world stores them (checked as ``POST /v1/worlds`` checks)."""
    from pydantic import TypeAdapter, ValidationError

    from judge_service.core.errors import JudgeServiceError
    from judge_service.judging.endpoints import check_spec
    from judge_service.wire import ModelSpec

    models = {}
    for field, value in given.items():
        if value is None:
            continue
        try:
            raw = json.loads(value) if value.lstrip().startswith("{") else value
            spec = TypeAdapter(ModelSpec).validate_python(raw).model_dump(exclude_none=True)
            models[field] = check_spec(spec, settings=settings, field=field)
        except (ValueError, ValidationError, JudgeServiceError) as exc:
            raise _fail(f"--{field.replace('_', '-')}: {exc}") from exc
    return models


@world_app.command("build")
def build(
    jobs: Annotated[list[str], typer.Argument(help="Forge job ids: traces jobs, done")],
    name: Annotated[str | None, typer.Option(help="A name to know the world by")] = None,
    project: Annotated[
        str, typer.Option(help="The project of the forge jobs, and of the world")
    ] = "default",
    as_json: Annotated[bool, typer.Option("--json", help="Print the world as JSON")] = False,
    simulator: Annotated[
        str | None,
        typer.Option(help="Its episodes' model for calls nothing learned answers (path e)"),
    ] = None,
    user_model: Annotated[
        str | None, typer.Option(help="Its episodes' model that plays the user")
    ] = None,
) -> None:
    """Build a world from the traces of forge jobs: entities, a model of each tool, and its
    fidelity on one held-out run of every goal with repeats, beside exact-call replay.
    ``--simulator`` and ``--user-model`` take a model string or a JSON spec object, as
    ``POST /v1/worlds`` does."""
    from judge_service.core.storage import audit
    from judge_service.core.storage.db import session_scope
    from judge_service.world import store as world_store
    from judge_service.world.job import run_world

    project = project_name(project)
    settings = get_settings()
    models = _models(settings, simulator=simulator, user_model=user_model)
    with session_scope(settings.database_url) as session:
        problems = world_store.job_problems(
            session=session, job_ids=list(dict.fromkeys(jobs)), project=project, see=None
        )
        if problems:
            raise _fail("; ".join(problems))
        row = world_store.create_world(
            session=session,
            name=name,
            jobs=jobs,
            project=project,
            created_by="cli",
            models=models,
        )
        audit.record(session=session, actor="cli", action="world.build", target=row.id)
        world_id = row.id
    status = run_world(world_id, settings=settings)
    detail = _detail(world_id)
    assert detail is not None
    _print(detail, as_json)
    if status != "done":
        raise typer.Exit(1)


@world_app.command("show")
def show(
    world_id: Annotated[str, typer.Argument(help="The world's id")],
    as_json: Annotated[bool, typer.Option("--json", help="Print the world as JSON")] = False,
    out: Annotated[
        Path | None, typer.Option("--out", help="Also write the world itself (JSON) here")
    ] = None,
) -> None:
    """A world's status, counts, per tool the paths that answered its held-out calls and
    the transitions learned, and its fidelity beside the exact-call replay baseline."""
    detail = _detail(world_id)
    if detail is None:
        raise _fail(f"no world {world_id!r}")
    _print(detail, as_json)
    if out is not None:
        from judge_service.core.storage.db import session_scope
        from judge_service.world import store as world_store

        with session_scope(get_settings().database_url) as session:
            world = world_store.world_json(session=session, world_id=world_id)
        if world is None:
            raise _fail(f"world {world_id!r} is {detail['status']}: there is no world to write")
        out.write_text(json.dumps(world), encoding="utf-8")
        typer.echo(f"world written to {out}", err=True)


@world_app.command("list")
def list_worlds(
    project: Annotated[
        str | None, typer.Option(help="Only this project's worlds (default: every project's)")
    ] = None,
) -> None:
    """The worlds, newest first: id, status, name, traces, held-out runs, exact rate."""
    from judge_service.core.storage.db import session_scope
    from judge_service.world import store as world_store

    project = None if project is None else project_name(project)
    with session_scope(get_settings().database_url) as session:
        rows = world_store.list_worlds(session=session, project=project, limit=1000)
        for row in rows:
            counts, report = row.counts or {}, row.report or {}
            exact = ((report.get("fidelity") or {}).get("world") or {}).get("exact", "-")
            typer.echo(
                f"{row.id}  {row.status:8} {row.name}  traces={counts.get('traces', '-')} "
                f"held_out={counts.get('held_out_runs', '-')} exact={exact}"
            )


def add_commands(cli: CommandLine) -> None:
    """This feature's commands on ``judge-service`` (``core.features``)."""
    cli.add_typer(schema_first(world_app), name="world")
