"""``judge-service build-local-judge`` and ``local-model``: the local judge by hand."""

from __future__ import annotations

from typing import Annotated

import typer

from judge_service.core.cli_common import CommandLine, configure_logging
from judge_service.core.settings import get_settings


def build_local_judge() -> None:
    """Build llama.cpp's llama-server for the local judge now (once per machine; ~17 min on
    2 cores), with a progress line every 5 s. `serve` otherwise builds it in the background."""
    from judge_service.judging.local_build import BuildFailed, machine_build

    configure_logging(get_settings().log_level)
    try:
        typer.echo(f"llama-server: {machine_build().build_with_progress()}")
    except BuildFailed as exc:
        typer.echo(f"the llama-server build failed: {exc}", err=True)
        raise typer.Exit(1) from exc


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
    configure_logging(settings.log_level)
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


def add_commands(cli: CommandLine) -> None:
    """The local judge's commands (``core.features``)."""
    cli.command("build-local-judge")(build_local_judge)
    cli.command("local-model")(local_model)
