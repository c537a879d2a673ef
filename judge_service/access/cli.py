"""``judge-service keys``: create, list and revoke API keys on ``JS_DATABASE_URL`` directly
(the operator's way in before any admin key exists; admins can also use ``/v1/keys``)."""

from __future__ import annotations

from typing import Annotated

import typer

from judge_service.core.cli_common import CommandLine, project_name, schema_first
from judge_service.core.settings import get_settings

keys_app = typer.Typer(no_args_is_help=True, help="API keys.")


@keys_app.command("create")
def keys_create(
    role: Annotated[str, typer.Option(help="trainer, reviewer or admin")],
    name: Annotated[str | None, typer.Option(help="A label for the key")] = None,
    project: Annotated[
        str | None,
        typer.Option(
            help="The project the key sees and makes things in (default: `default`; the "
            "first admin key of a new database, made without it, is for every project)"
        ),
    ] = None,
    all_projects: Annotated[
        bool, typer.Option("--all-projects", help="An admin key for every project (`*`)")
    ] = False,
) -> None:
    """Create an API key of a project. The key is printed once, alone on the last line."""
    from judge_service.core.projects import ALL, DEFAULT
    from judge_service.core.storage import audit
    from judge_service.core.storage.db import session_scope
    from judge_service.core.storage.keys import any_key, create_key
    from judge_service.rubrics.store_seeds import seed_project

    if role not in ("trainer", "reviewer", "admin"):
        raise typer.BadParameter("role must be trainer, reviewer or admin", param_hint="--role")
    if all_projects and role != "admin":
        raise typer.BadParameter("only admin keys can be for every project", param_hint="--role")
    if all_projects and project is not None:
        raise typer.BadParameter(
            "give --project or --all-projects, not both", param_hint="--project"
        )
    if project is not None:
        project = project_name(project)
    elif all_projects:
        project = ALL
    settings = get_settings()
    with session_scope(settings.database_url) as session:
        if project is None:  # the first admin key of a new database is the operator's: all
            project = ALL if role == "admin" and not any_key(session=session) else DEFAULT
        row, plain = create_key(session=session, role=role, name=name, project=project)
        audit.record(
            session=session,
            actor="cli",
            action="key.create",
            target=row.id,
            detail={"role": role, "project": project},
        )
        if project != ALL:
            seed_project(session=session, project=project, actor="cli")
    where = "every project" if project == ALL else f"project {project}"
    typer.echo(f"created {role} key {row.id} of {where}; it is shown only now:")
    typer.echo(plain)


@keys_app.command("list")
def keys_list(
    project: Annotated[
        str | None, typer.Option(help="Only this project's keys (default: every key)")
    ] = None,
) -> None:
    """The keys (id, role, project, name, created, revoked), oldest first; never the keys."""
    from rich.console import Console
    from rich.markup import escape
    from rich.table import Table

    from judge_service.core.storage.db import session_scope
    from judge_service.core.storage.keys import list_keys

    project = None if project is None else project_name(project)
    settings = get_settings()
    table = Table("id", "role", "project", "name", "created", "revoked")
    with session_scope(settings.database_url) as session:
        for row in list_keys(session=session, project=project):
            revoked = row.revoked_at.isoformat(timespec="seconds") if row.revoked_at else ""
            table.add_row(
                row.id, row.role, row.project, escape(row.name or ""),  # a name is no markup
                row.created_at.isoformat(timespec="seconds"), revoked,
            )  # fmt: skip
    Console(width=200).print(table)


@keys_app.command("revoke")
def keys_revoke(key_id: Annotated[str, typer.Argument(help="The key's id (`keys list`)")]) -> None:
    """Revoke a key: the API refuses it (within JS_KEY_CACHE_S), and its web sessions end."""
    from judge_service.core.storage import audit
    from judge_service.core.storage.db import session_scope
    from judge_service.core.storage.keys import revoke_key

    settings = get_settings()
    with session_scope(settings.database_url) as session:
        row, revoked = revoke_key(session=session, key_id=key_id)
        if row is None:
            typer.echo(f"error: no key {key_id!r} (`judge-service keys list` shows them)", err=True)
            raise typer.Exit(2)
        if revoked:
            detail = {"role": row.role, "project": row.project}
            audit.record(
                session=session, actor="cli", action="key.revoke", target=row.id, detail=detail
            )
    typer.echo(f"revoked key {key_id}" if revoked else f"key {key_id} was revoked already")


def add_commands(cli: CommandLine) -> None:
    """This feature's commands on ``judge-service`` (``core.features``)."""
    cli.add_typer(schema_first(keys_app), name="keys")
