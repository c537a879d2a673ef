"""What several ``judge-service`` commands share: a database they can use, or a clear error."""

from __future__ import annotations

import functools
import logging
import traceback
from collections.abc import Callable
from typing import Any

import typer

from judge_service.core.settings import Settings, get_settings

#: The exit status of a command that could not reach its database.
DATABASE_EXIT = 2


class CommandLine(typer.Typer):
    """The root ``judge-service`` app. Any command that fails because the database cannot be
    reached prints one line (what failed, where, what to do) and exits 2, instead of pages
    of traceback; ``judge-service -v …`` prints the traceback too. Other errors are bugs and
    keep their traceback."""

    verbose = False

    def __call__(self, *args: Any, **kwargs: Any) -> Any:
        try:
            return super().__call__(*args, **kwargs)
        except Exception as exc:
            from judge_service.core.storage.outage import explain, find_outage

            outage = find_outage(exc)
            if outage is None:
                raise
            if self.verbose:
                traceback.print_exception(exc)
            try:
                line = explain(outage, get_settings().database_url)
            except Exception:  # settings that do not load: say what is known
                line = f"cannot reach the database ({outage.reason}): check JS_DATABASE_URL"
            more = "" if self.verbose else " (`judge-service -v ...` shows the traceback)"
            typer.echo(f"error: {line}{more}", err=True)
            raise SystemExit(DATABASE_EXIT) from None


def ready_settings() -> Settings:
    """The settings, once the database is known to be migrated; otherwise exit 1 with what
    to run (instead of an SQL error about a missing table)."""
    from judge_service.core.storage.db import schema_problem

    settings = get_settings()
    problem = schema_problem(settings.database_url)
    if problem is not None:
        typer.echo(f"error: {problem}: run `judge-service db upgrade` first", err=True)
        raise typer.Exit(1)
    return settings


def schema_first(commands: typer.Typer) -> typer.Typer:
    """``commands``, a group whose every command uses the service's tables, with each
    command checking first (:func:`ready_settings`) that the database is migrated: one line
    and exit 1 otherwise, before the command opens the database (which would leave an empty
    SQLite file behind) or reads a missing table (pages of traceback). The root CLI applies
    it to the groups it mounts, :func:`schema_checked` to single commands; ``--help`` and
    usage errors still come first."""
    for info in commands.registered_commands:
        if info.callback is not None:
            info.callback = schema_checked(info.callback)
    return commands


def schema_checked(command: Callable[..., Any]) -> Callable[..., Any]:
    """``command`` calling :func:`ready_settings` first; its signature, which typer reads
    for the options, is kept."""

    @functools.wraps(command)
    def checked(*args: Any, **kwargs: Any) -> Any:
        ready_settings()
        return command(*args, **kwargs)

    return checked


def project_name(value: str) -> str:
    """``value`` when it is a project name; else the usage error of ``--project``."""
    from judge_service.core.errors import ValidationFailed
    from judge_service.core.projects import check_name

    try:
        return check_name(value)
    except ValidationFailed as exc:
        raise typer.BadParameter(exc.message, param_hint="--project") from exc


def configure_logging(level: str) -> None:
    """Log lines with time, level and logger to stderr, from ``level`` up."""
    logging.basicConfig(
        level=level.upper(), format="%(asctime)s %(levelname)s %(name)s: %(message)s"
    )
