"""Shared pieces of the benchmarks: child processes for the fake judge and the service."""

from __future__ import annotations

import os
import socket
import subprocess
import sys
import tempfile
import time
from pathlib import Path

import httpx

ROOT = Path(__file__).resolve().parents[1]
BIN = Path(sys.executable).parent


def free_port() -> int:
    with socket.socket() as sock:
        sock.bind(("127.0.0.1", 0))
        return sock.getsockname()[1]


def wait_http(url: str, proc: subprocess.Popen, timeout: float = 60) -> None:
    deadline = time.monotonic() + timeout
    while time.monotonic() < deadline:
        if proc.poll() is not None:
            raise RuntimeError(f"{proc.args} exited with {proc.returncode}")
        try:
            if httpx.get(url, timeout=1).status_code < 500:
                return
        except httpx.HTTPError:
            pass
        time.sleep(0.1)
    raise RuntimeError(f"{url} did not answer")


class Child:
    """A child process in its own session, killed with its group on exit."""

    def __init__(self, args: list[str], env: dict[str, str] | None = None) -> None:
        self.log = tempfile.NamedTemporaryFile(prefix="bench-", suffix=".log", delete=False)  # noqa: SIM115
        self.proc = subprocess.Popen(
            args,
            env=env,
            cwd=ROOT,
            stdout=self.log,
            stderr=subprocess.STDOUT,
            start_new_session=True,
        )

    def stop(self) -> None:
        if self.proc.poll() is None:
            os.killpg(self.proc.pid, 15)
            try:
                self.proc.wait(timeout=10)
            except subprocess.TimeoutExpired:
                os.killpg(self.proc.pid, 9)


def fake_judge_server(latency_ms: int) -> tuple[Child, str]:
    """The OpenAI-compatible fake from tests/fakes, answering after ``latency_ms``."""
    port = free_port()
    child = Child(
        [
            sys.executable,
            "-m",
            "tests.fakes.openai_server",
            "--port",
            str(port),
            "--latency-ms",
            str(latency_ms),
        ]
    )
    url = f"http://127.0.0.1:{port}/v1"
    wait_http(f"{url}/models", child.proc)
    return child, url


def service_env(**values: str) -> dict[str, str]:
    env = {k: v for k, v in os.environ.items() if not k.startswith("JS_")}
    env.update(values)
    return env


def cli(*args: str, env: dict[str, str]) -> str:
    done = subprocess.run(
        [str(BIN / "judge-service"), *args],
        env=env,
        cwd=ROOT,
        capture_output=True,
        text=True,
        check=True,
    )
    return done.stdout


def start_service(env: dict[str, str]) -> tuple[Child, str, str]:
    """``judge-service serve`` on a free port, after ``db upgrade``; returns (child, url, key)."""
    cli("db", "upgrade", env=env)
    key = cli("keys", "create", "--role", "trainer", env=env).strip().splitlines()[-1]
    port = free_port()
    child = Child([str(BIN / "judge-service"), "serve", "--port", str(port)], env=env)
    url = f"http://127.0.0.1:{port}"
    try:
        wait_http(f"{url}/healthz", child.proc, timeout=180)  # a loaded machine starts slowly
    except BaseException:
        child.stop()  # never left running when it did not come up
        raise
    return child, url, key


def start_worker(env: dict[str, str], concurrency: int = 2, pool: str | None = None) -> Child:
    pool_args = ["--pool", pool] if pool else []
    child = Child(
        [str(BIN / "judge-service"), "worker", "--concurrency", str(concurrency), *pool_args],
        env=env,
    )
    deadline = time.monotonic() + 180  # a loaded machine starts slowly
    while "ready." not in Path(child.log.name).read_text(errors="replace") or not _beating(env):
        if time.monotonic() > deadline or child.proc.poll() is not None:
            raise RuntimeError("worker did not start")
        time.sleep(0.1)
    return child


def _beating(env: dict[str, str]) -> bool:
    """A worker heartbeat is stored: the API takes work only then (else 503 ``no_worker``),
    and Celery's "ready." can come before the first beat."""
    from judge_service.core.storage.db import session_scope
    from judge_service.core.storage.workers import live

    with session_scope(env["JS_DATABASE_URL"]) as session:
        return bool(live(session=session, within_s=60))
