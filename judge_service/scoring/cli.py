"""``judge-service score``: a JSONL file through the API's pipeline, offline."""

from __future__ import annotations

from pathlib import Path
from typing import Annotated

import typer

from judge_service.core.cli_common import CommandLine, configure_logging, project_name
from judge_service.core.settings import get_settings


def score(
    infile: Annotated[
        Path, typer.Argument(exists=True, dir_okay=False, help="JSONL, a sample a line")
    ],
    out: Annotated[Path, typer.Option("--out", help="JSONL, a result a line")],
    judge: Annotated[list[str] | None, typer.Option(help="Judge spec; repeat for a panel")] = None,
    aggregator: str | None = None,
    timeout_s: float = 600.0,
    audit: Annotated[
        bool,
        typer.Option(
            "--audit/--no-audit",
            help="Run the default detectors and JS_PENALTY_POLICY after the judges, as the API",
        ),
    ] = True,
    project: Annotated[
        str | None,
        typer.Option(
            help="Only this project's confirmed hacks feed the known-hack detector "
            "(default: every project's)"
        ),
    ] = None,
) -> None:
    """Score a JSONL file through the API's pipeline (judges, then the hindsight audit and
    its penalty), with a progress bar and a summary that counts flagged samples."""
    from judge_service.core.errors import JudgeServiceError
    from judge_service.scoring.job_offline import score_file

    project = None if project is None else project_name(project)
    settings = get_settings()
    configure_logging("WARNING")

    try:
        score_file(
            infile,
            out,
            settings=settings,
            judges=judge,
            aggregator=aggregator,
            timeout_s=timeout_s,
            audit=audit,
            project=project,
        )
    except JudgeServiceError as exc:
        typer.echo(f"error: {exc.message}", err=True)
        raise typer.Exit(2) from exc


def add_commands(cli: CommandLine) -> None:
    """Offline scoring's command (``core.features``)."""
    cli.command("score")(score)
