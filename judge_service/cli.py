"""``judge-service``: serve, worker, db upgrade, keys, plugins, score, local-model, forge, world.

Every command builds its settings once from the environment and works from any
working directory: migrations, templates and seed rubrics come from the installed package,
and the default database lives in the user's data directory.
"""

from __future__ import annotations

import logging
import os
import tempfile
from pathlib import Path
from typing import Annotated

import typer

from judge_service.access.cli import keys_app
from judge_service.audit.cli import audit_command, detectors_app
from judge_service.core.cli_common import CommandLine, project_name, schema_checked, schema_first
from judge_service.core.settings import get_settings
from judge_service.forge.cli import forge_app
from judge_service.rubrics.cli import rubrics_app
from judge_service.runs.cli import report_command
from judge_service.world.cli import world_app

app = CommandLine(no_args_is_help=True, add_completion=False, help=__doc__)
db_app = typer.Typer(no_args_is_help=True, help="Database schema.")
app.add_typer(db_app, name="db")
# the commands that use the service's tables check its schema first (schema_first)
app.add_typer(schema_first(keys_app), name="keys")
app.add_typer(detectors_app, name="detectors")
app.command("audit")(audit_command)
app.add_typer(schema_first(rubrics_app), name="rubrics")
app.command("report")(schema_checked(report_command))
app.add_typer(schema_first(forge_app), name="forge")
app.add_typer(schema_first(world_app), name="world")
log = logging.getLogger("judge_service")


@app.callback()
def _options(
    verbose: Annotated[
        bool, typer.Option("--verbose", "-v", help="Print the traceback when a command fails.")
    ] = False,
) -> None:
    app.verbose = verbose


def _logging(level: str) -> None:
    logging.basicConfig(
        level=level.upper(), format="%(asctime)s %(levelname)s %(name)s: %(message)s"
    )


def _upgrade(database_url: str, revision: str = "head") -> list[str]:
    """Migrate to ``revision``; at head, add the shipped seed rubrics the database lacks.
    Returns the refs of the rubrics added."""
    from judge_service.core.storage.db import upgrade
    from judge_service.rubrics.store_seeds import seed_missing

    upgrade(database_url, revision)
    if revision != "head":
        return []
    return [item.ref for item in seed_missing(database_url)]


@db_app.command("upgrade")
def db_upgrade(revision: str = "head") -> None:
    """Create or migrate the tables (Alembic) of JS_DATABASE_URL, then import the shipped
    rubrics that it does not have yet (an existing rubric is never changed)."""
    from judge_service.core.storage.db import describe_url

    settings = get_settings()
    seeded = _upgrade(settings.database_url, revision)
    typer.echo(f"database at {revision}: {describe_url(settings.database_url)}")
    for ref in seeded:
        typer.echo(f"imported the shipped rubric {ref}")


@app.command()
def plugins() -> None:
    """List the installed judges, detectors and aggregators with their packages and the
    optional abilities each declares (group_scorer, async_detector, uses_llm, from_settings)."""
    from rich.console import Console
    from rich.table import Table

    from judge_service.core.registry import Registry

    table = Table("kind", "name", "package", "target", "abilities", "status")
    for info in Registry().describe():
        status = "ok" if info.error is None else f"[red]failed: {info.error}[/red]"
        abilities = ", ".join(info.abilities) or "-"
        package = f"{info.distribution} {info.version}"
        table.add_row(info.kind[:-1], info.name, package, info.target, abilities, status)
    Console(width=240).print(table)


@app.command()
def serve(
    host: str = "127.0.0.1",
    port: int = 8000,
    migrate: Annotated[bool, typer.Option(help="Run `db upgrade` first (default when embedded)")]
    | None = None,
    workers: Annotated[
        int,
        typer.Option(
            min=1, help="API processes (uvicorn workers); more than 1 needs PostgreSQL and a broker"
        ),
    ] = 1,
) -> None:
    """Run the HTTP API (embedded executor when JS_BROKER_URL is unset)."""
    import uvicorn

    from judge_service.core.api.app import create_app
    from judge_service.core.api.edge import uvicorn_options
    from judge_service.core.api.server import serve as serve_app
    from judge_service.core.api.startup import DatabaseStartup
    from judge_service.core.storage.db import describe_url

    environment = get_settings()
    settings = environment.served_on(host)  # free endpoints: off beyond loopback
    _logging(settings.log_level)
    if workers > 1 and (settings.embedded or settings.database_url.startswith("sqlite")):
        raise typer.BadParameter(
            f"{workers} API processes need PostgreSQL (JS_DATABASE_URL) and a broker "
            "(JS_BROKER_URL): embedded, batches are scored inside the one API process, and "
            "SQLite lets one process write at a time. Run one process, or scale with "
            "`judge-service worker --concurrency N` on PostgreSQL and Redis.",
            param_hint="--workers",
        )
    log.info("database: %s", describe_url(settings.database_url))
    if settings.free_endpoints != environment.free_endpoints:
        log.info(
            "free endpoints: off, as the API listens on %s, beyond loopback: a request's own "
            "api_base is refused (JS_ENDPOINTS names the model servers; "
            "JS_ALLOW_FREE_ENDPOINTS=true allows any)",
            host,
        )

    def upgrade_now() -> None:
        for ref in _upgrade(settings.database_url):
            log.info("imported the shipped rubric %s", ref)

    # a database that is down does not stop the server: the migration waits for it
    run_migration = upgrade_now if (migrate if migrate is not None else settings.embedded) else None
    options = {
        "host": host,
        "port": port,
        "log_level": settings.log_level.lower(),
        "access_log": settings.access_log,
        **uvicorn_options(settings),  # header size and time limits, keep-alive
    }
    if workers == 1:  # SIGINT or SIGTERM: a clean stop (api.shutdown); a second: at once
        serve_app(create_app(settings, migrate=run_migration), **options)
    else:  # each process builds its own app from the environment, as this one did
        if run_migration is not None:  # once, here, not in every process
            DatabaseStartup(settings.database_url, [("the migration", run_migration)]).run()
        uvicorn.run(
            "judge_service.core.api.app:app_from_environment",
            factory=True,
            workers=workers,
            **options,
        )


def _metrics_folder() -> str:
    """A new folder for the worker's shared counters (under ``$TMPDIR``), removed when the
    worker's main process exits (not by its forked children)."""
    import atexit
    import shutil

    folder, owner = tempfile.mkdtemp(prefix="judge-service-metrics-"), os.getpid()
    atexit.register(lambda: os.getpid() == owner and shutil.rmtree(folder, ignore_errors=True))
    return folder


@app.command()
def worker(
    concurrency: Annotated[
        int, typer.Option(min=1, help="Batches scored at once: processes with prefork")
    ] = 2,
    pool: Annotated[str, typer.Option(help="Celery pool: prefork, threads, solo")] = "prefork",
    metrics_port: Annotated[int, typer.Option(help="Serve Prometheus metrics; 0 = off")] = 0,
) -> None:
    """Run a Celery worker on JS_BROKER_URL."""
    settings = get_settings()
    if settings.embedded:
        raise typer.BadParameter("JS_BROKER_URL is not set; the embedded server needs no worker")
    _logging(settings.log_level)
    if metrics_port and pool == "prefork":
        # set before prometheus_client is imported: the processes share counters in files
        os.environ["PROMETHEUS_MULTIPROC_DIR"] = _metrics_folder()
    from judge_service.core.api.app import tune_garbage_collector
    from judge_service.core.worker.celery_app import QUEUE, make_worker
    from judge_service.judging.client import get_client

    get_client(settings)  # import litellm and its tables before the start-up heap is frozen
    tune_garbage_collector()  # before the fork: the children share the frozen heap
    if metrics_port:
        _serve_worker_metrics(metrics_port, processes=pool == "prefork")
    make_worker(settings, pool=pool, concurrency=concurrency).worker_main(
        [
            "worker",
            f"--loglevel={settings.log_level}",
            f"--concurrency={concurrency}",
            f"--pool={pool}",
            "-Q",
            QUEUE,
            "--without-gossip",
            "--without-mingle",
        ]
    )


def _serve_worker_metrics(port: int, *, processes: bool) -> None:
    """Prometheus metrics on ``port``; summed over the pool's processes when ``processes``."""
    from prometheus_client import REGISTRY, CollectorRegistry, start_http_server
    from prometheus_client.multiprocess import MultiProcessCollector

    registry = REGISTRY
    if processes:
        registry = CollectorRegistry()
        MultiProcessCollector(registry)
    start_http_server(port, addr="127.0.0.1", registry=registry)


@app.command("build-local-judge")
def build_local_judge() -> None:
    """Build llama.cpp's llama-server for the local judge now (once per machine; ~17 min on
    2 cores), with a progress line every 5 s. `serve` otherwise builds it in the background."""
    from judge_service.judging.local_build import BuildFailed, machine_build

    _logging(get_settings().log_level)
    try:
        typer.echo(f"llama-server: {machine_build().build_with_progress()}")
    except BuildFailed as exc:
        typer.echo(f"the llama-server build failed: {exc}", err=True)
        raise typer.Exit(1) from exc


@app.command("local-model")
def local_model(
    host: str = "127.0.0.1",
    port: Annotated[int, typer.Option(help="0 = JS_LOCAL_MODEL_PORT, or a free port")] = 0,
) -> None:
    """Run the local SmolLM2 judge alone (llama.cpp's OpenAI-compatible server) until stopped.

    Point other processes at it with JS_LOCAL_MODEL_URL=<the printed URL>.
    """
    import signal
    import threading

    from judge_service.judging.local_build import machine_build
    from judge_service.judging.local_model import LocalModelServer

    settings = get_settings()
    _logging(settings.log_level)
    machine_build().build_with_progress()  # once per machine
    server = LocalModelServer(
        model_path=settings.local_model_path, host=host, port=port or settings.local_model_port
    )
    typer.echo(f"local judge (SmolLM2-135M) at {server.start()}")
    stop = threading.Event()
    for sig in (signal.SIGINT, signal.SIGTERM):
        signal.signal(sig, lambda *_: stop.set())
    stop.wait()
    server.stop()


@app.command()
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
    _logging("WARNING")

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


def main() -> None:
    app()


if __name__ == "__main__":
    main()
