"""``judge-service``: serve, worker, db upgrade, keys, plugins, score, local-model, forge, world.

Every command builds its settings once from the environment and works from any
working directory: migrations, templates and seed rubrics come from the installed package,
and the default database lives in the user's data directory.
"""

from __future__ import annotations

import logging
import os
import tempfile
from typing import Annotated

import typer

from judge_service.core.cli_common import CommandLine, configure_logging
from judge_service.core.features import installed, load
from judge_service.core.settings import get_settings

app = CommandLine(no_args_is_help=True, add_completion=False, help=__doc__)
db_app = typer.Typer(no_args_is_help=True, help="Database schema.")
app.add_typer(db_app, name="db")
# each feature adds its commands (core.features); those that use the service's tables
# check its schema first (core.cli_common.schema_first)
for feature in installed():
    if feature.commands:
        load(feature.commands)(app)
log = logging.getLogger("judge_service")


@app.callback()
def _options(
    verbose: Annotated[
        bool, typer.Option("--verbose", "-v", help="Print the traceback when a command fails.")
    ] = False,
) -> None:
    app.verbose = verbose


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
    configure_logging(settings.log_level)
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

    def remove() -> None:
        if os.getpid() == owner:
            shutil.rmtree(folder, ignore_errors=True)

    atexit.register(remove)
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
    configure_logging(settings.log_level)
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


def main() -> None:
    app()


if __name__ == "__main__":
    main()
