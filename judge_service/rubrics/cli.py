"""``judge-service rubrics``: import rubric files as versions, list rubrics, show one."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Annotated

import typer

from judge_service.core.cli_common import CommandLine, project_name, schema_first
from judge_service.core.settings import get_settings

rubrics_app = typer.Typer(no_args_is_help=True, help="Rubrics: versioned yes/no checklists.")

#: Rubric names are per project; every command works in one.
Project = Annotated[str, typer.Option(help="The project whose rubrics these are")]


@rubrics_app.command("import")
def import_rubrics(
    path: Annotated[
        Path | None,
        typer.Argument(help="A rubric YAML file or a folder of them. Default: the shipped seeds."),
    ] = None,
    project: Project = "default",
) -> None:
    """Load rubric files as versions: new names get version 1, changed criteria or prompts
    the next version, and a file equal to the active version changes nothing."""
    from judge_service.core.storage.db import session_scope
    from judge_service.rubrics import files as rubric_files
    from judge_service.rubrics.store_seeds import import_files

    project = project_name(project)
    try:
        loaded = rubric_files.load(path)
    except rubric_files.RubricFileError as exc:
        typer.echo(f"error: {exc}", err=True)
        raise typer.Exit(2) from exc
    if not loaded:
        typer.echo(f"error: no .yaml or .yml rubric files in {path}", err=True)
        raise typer.Exit(2)
    settings = get_settings()
    with session_scope(settings.database_url) as session:
        for item in import_files(session=session, loaded=loaded, actor="cli", project=project):
            typer.echo(f"{item.ref}\t{item.action}\t{item.source}")


@rubrics_app.command("list")
def list_rubrics(project: Project = "default") -> None:
    """Every rubric of the project with its active version."""
    from judge_service.core.storage.db import session_scope
    from judge_service.rubrics import store as rubrics

    with session_scope(get_settings().database_url) as session:
        for summary in rubrics.list_rubrics(session=session, project=project_name(project)):
            typer.echo(
                f"{summary.name}@{summary.version}\t{summary.criteria} criteria"
                f"\t{summary.versions} versions"
            )


@rubrics_app.command("show")
def show_rubric(
    name: str,
    version: Annotated[int | None, typer.Option(help="A version; default: the active one")] = None,
    project: Project = "default",
) -> None:
    """A rubric version as JSON."""
    from judge_service.core.storage.db import session_scope
    from judge_service.rubrics import store as rubrics

    with session_scope(get_settings().database_url) as session:
        row = rubrics.get_version(
            session=session, name=name, version=version, project=project_name(project)
        )
        if row is None:
            typer.echo(f"error: no rubric {name!r}" + (f" version {version}" if version else ""))
            raise typer.Exit(1)
        body = rubrics.to_domain(row).model_dump(mode="json")
    typer.echo(json.dumps({"ref": f"{body['name']}@{body['version']}", **body}, indent=2))


def add_commands(cli: CommandLine) -> None:
    """This feature's commands on ``judge-service`` (``core.features``)."""
    cli.add_typer(schema_first(rubrics_app), name="rubrics")
