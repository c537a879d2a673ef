"""``judge-service report RUN_ID --out report.html``: the run page, written to a file.

The same renderer as ``GET /runs/{run_id}``; the file holds its plots inline, so it opens
anywhere, offline. Its links (review items, other runs) point to ``--base-url``.
"""

from __future__ import annotations

from pathlib import Path
from typing import Annotated

import typer

from judge_service.core.cli_common import CommandLine, project_name, schema_checked
from judge_service.core.settings import get_settings


def report_command(
    run_id: Annotated[str, typer.Argument(help="The run_id the trainer sent with its batches")],
    out: Annotated[Path, typer.Option("--out", dir_okay=False, help="The HTML file to write")],
    base_url: Annotated[
        str, typer.Option(help="The service's URL, put before the page's links")
    ] = "",
    project: Annotated[
        str | None,
        typer.Option(help="Only this project's batches of the run (default: every project's)"),
    ] = None,
) -> None:
    """Write a run's page (plots, alarms, flagged rollouts) to an HTML file."""
    from judge_service.core.storage.db import session_scope
    from judge_service.runs.web_view import run_page

    # two projects may use the same run_id: --project keeps them apart
    project = None if project is None else project_name(project)
    with session_scope(get_settings().database_url) as session:
        html = run_page(
            session=session, run_id=run_id, link_base=base_url.rstrip("/"), project=project
        )
    if html is None:
        where = "" if project is None else f" in project {project!r}"
        typer.echo(f"error: no scored batches for run {run_id!r}{where}", err=True)
        raise typer.Exit(2)
    out.write_text(html, encoding="utf-8")
    typer.echo(f"wrote {out} ({len(html) // 1024} KB)")


def add_commands(cli: CommandLine) -> None:
    """This feature's commands on ``judge-service`` (``core.features``)."""
    cli.command("report")(schema_checked(report_command))
