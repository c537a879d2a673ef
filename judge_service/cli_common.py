"""What several ``judge-service`` commands share: a database they can use, or a clear error."""

from __future__ import annotations

import typer

from judge_service.settings import Settings, get_settings


def ready_settings() -> Settings:
    """The settings, once the database is known to be migrated; otherwise exit 1 with what
    to run (instead of an SQL error about a missing table)."""
    from judge_service.storage.db import schema_problem

    settings = get_settings()
    problem = schema_problem(settings.database_url)
    if problem is not None:
        typer.echo(f"error: {problem}: run `judge-service db upgrade` first", err=True)
        raise typer.Exit(1)
    return settings
