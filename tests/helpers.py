"""Test helpers: real server and worker processes, free ports, API keys."""

from __future__ import annotations

import asyncio
import contextlib
import fnmatch
import hashlib
import importlib
import os
import shutil
import signal
import socket
import subprocess
import sys
import tempfile
import time
import uuid
from collections.abc import Callable, Iterator
from pathlib import Path
from typing import Any, TypeVar

import httpx

T = TypeVar("T")

BIN = Path(sys.executable).parent
JUDGE_SERVICE = str(BIN / "judge-service")


#: The labelled dev split kept in the repository (data/, see its README).
DEV_SPLIT = Path(__file__).resolve().parents[1] / "data" / "sorh_dev.jsonl"
TEST_PLUGIN = Path(__file__).resolve().parent / "fixtures" / "js_test_plugin"


def load_script(path: Path, name: str) -> Any:
    """A script of the repository (a data generator, say) imported as the module ``name``."""
    import importlib.util

    spec = importlib.util.spec_from_file_location(name, path)
    assert spec and spec.loader
    module = importlib.util.module_from_spec(spec)
    sys.modules[name] = module  # its dataclasses look their module up by name
    spec.loader.exec_module(module)
    return module


#: Built artefacts that are not part of a package's source (left by an in-place build).
NOT_SOURCE = ("build", "*.egg-info", "__pycache__")


def pip_install_to(source: Path, site: Path) -> None:
    """``pip install --no-deps --target site`` of the package at ``source``, built from a
    copy (so that no build/ or egg-info is left next to it), offline."""
    with tempfile.TemporaryDirectory(prefix="js-plugin-source-") as tmp:
        copy = Path(tmp) / "source"
        shutil.copytree(source, copy, ignore=shutil.ignore_patterns(*NOT_SOURCE))
        done = subprocess.run(
            [
                sys.executable,
                "-m",
                "pip",
                "install",
                "-q",
                "--no-deps",
                "--no-build-isolation",
                "--no-index",
                "--target",
                str(site),
                str(copy),
            ],
            capture_output=True,
            text=True,
            check=False,
        )
    if done.returncode != 0:
        raise RuntimeError(f"installing {source.name} failed:\n{done.stderr}")


def source_digest(source: Path) -> str:
    """A hash of the package's source files (names and contents; built artefacts left out)
    and of the Python version that installs it."""
    digest = hashlib.sha256(f"python{sys.version_info[0]}.{sys.version_info[1]}".encode())
    for path in sorted(source.rglob("*")):
        relative = path.relative_to(source)
        built = any(fnmatch.fnmatch(part, p) for part in relative.parts for p in NOT_SOURCE)
        if path.is_dir() or built:
            continue
        digest.update(str(relative).encode() + b"\0" + path.read_bytes() + b"\0")
    return digest.hexdigest()[:16]


def plugin_cache() -> Path:
    """Where installed test plugins are kept between sessions: ``JS_TEST_PLUGIN_CACHE``, else
    ``$XDG_CACHE_HOME/judge-service/test-plugin`` (``~/.cache/...``)."""
    if os.environ.get("JS_TEST_PLUGIN_CACHE"):
        return Path(os.environ["JS_TEST_PLUGIN_CACHE"])
    cache_home = os.environ.get("XDG_CACHE_HOME") or str(Path.home() / ".cache")
    return Path(cache_home) / "judge-service" / "test-plugin"


def cached_pip_install(source: Path, cache: Path) -> Path:
    """The folder ``pip_install_to`` fills from ``source``, installed once per version of its
    source files: ``cache/<source_digest>``, reused when it is there. A new install goes to a
    temporary folder next to it and is renamed into place whole, so a folder at that name is
    a complete install, also when two sessions install at once."""
    site = cache / source_digest(source)
    if site.is_dir():
        return site
    cache.mkdir(parents=True, exist_ok=True)
    with tempfile.TemporaryDirectory(prefix=".installing-", dir=cache) as tmp:
        pip_install_to(source, Path(tmp) / "site")
        with contextlib.suppress(OSError):  # another session was first: keep its folder
            (Path(tmp) / "site").rename(site)
    if not site.is_dir():
        raise RuntimeError(f"installing {source.name} into {site} failed")
    return site


@contextlib.contextmanager
def installed_test_plugin() -> Iterator[Path]:
    """The tests' out-of-tree plugin package (a 50 ms judge, failing ones), installed with
    pip as a user installs a third-party plugin, but into a folder of the user's cache (once
    per version of the plugin's source, see ``cached_pip_install``) that is on ``sys.path``
    here and on ``PYTHONPATH`` for every child process until the block ends: the environment
    itself (the user's .venv) never holds it. The benchmarks use it too. Yields the folder."""
    saved_path, saved_env = list(sys.path), os.environ.get("PYTHONPATH")
    site = cached_pip_install(TEST_PLUGIN, plugin_cache())
    sys.path.append(str(site))
    os.environ["PYTHONPATH"] = os.pathsep.join(filter(None, [str(site), saved_env]))
    importlib.invalidate_caches()
    try:
        yield site
    finally:
        sys.path[:] = saved_path
        if saved_env is None:
            os.environ.pop("PYTHONPATH", None)
        else:
            os.environ["PYTHONPATH"] = saved_env
        for name in [m for m in sys.modules if m.split(".")[0] == "js_test_plugin"]:
            del sys.modules[name]
        importlib.invalidate_caches()


def wait_until(predicate: Callable[[], T], timeout: float = 30, interval: float = 0.05) -> T:
    """Poll ``predicate`` every ``interval`` s until it returns something true, and return
    that; its last (false) answer once ``timeout`` s have passed. For a test that waits for
    something to happen, instead of sleeping for as long as it usually takes."""
    deadline = time.monotonic() + timeout
    while not (answer := predicate()) and time.monotonic() < deadline:
        time.sleep(interval)
    return answer


async def wait_until_async(
    predicate: Callable[[], T], timeout: float = 30, interval: float = 0.005
) -> T:
    """``wait_until`` inside an event loop: the loop runs other tasks between polls."""
    deadline = time.monotonic() + timeout
    while not (answer := predicate()) and time.monotonic() < deadline:
        await asyncio.sleep(interval)
    return answer


@contextlib.contextmanager
def postgres_database(admin_url: str, prefix: str, template: str | None = None) -> Iterator[str]:
    """A new PostgreSQL database (a copy of ``template`` when given), dropped afterwards."""
    import psycopg

    from judge_service.core.storage.db import dispose_engines

    name = f"{prefix}{uuid.uuid4().hex[:12]}"
    copy = f' TEMPLATE "{template}"' if template else ""
    with psycopg.connect(admin_url, autocommit=True) as connection:
        connection.execute(f'CREATE DATABASE "{name}"{copy}')
    try:
        yield f"{admin_url.rsplit('/', 1)[0]}/{name}"
    finally:
        dispose_engines()
        with psycopg.connect(admin_url, autocommit=True) as connection:
            connection.execute(f'DROP DATABASE IF EXISTS "{name}" WITH (FORCE)')


def database_at(request: Any, revision: str) -> str:
    """A new database of the fixture's parameter's kind (``"sqlite"`` or ``"postgresql"``),
    its schema at ``revision``: where a migration's test starts."""
    from judge_service.core.settings import get_settings
    from judge_service.core.storage.db import upgrade

    name = "sqlite_url" if request.param == "sqlite" else "postgres_url"
    url = get_settings(database_url=request.getfixturevalue(name)).database_url
    upgrade(url, revision)
    return url


def free_port() -> int:
    with socket.socket() as sock:
        sock.bind(("127.0.0.1", 0))
        return sock.getsockname()[1]


def service_env(**values: str) -> dict[str, str]:
    """The environment for a child process: this one, minus JS_*, plus ``values``."""
    env = {k: v for k, v in os.environ.items() if not k.startswith("JS_")}
    env.update(values)
    return env


def run_cli(*args: str, env: dict[str, str], cwd: Path, timeout: float = 120) -> str:
    """Run ``judge-service ARGS`` and return stdout; fail the test on a non-zero exit."""
    done = subprocess.run(
        [JUDGE_SERVICE, *args],
        env=env,
        cwd=cwd,
        capture_output=True,
        text=True,
        timeout=timeout,
        check=False,
    )
    assert done.returncode == 0, f"judge-service {' '.join(args)} failed:\n{done.stderr}"
    return done.stdout


def create_key(role: str, *, env: dict[str, str], cwd: Path) -> str:
    """A new key, read the way a user would: the last line of `keys create`."""
    return run_cli("keys", "create", "--role", role, env=env, cwd=cwd).strip().splitlines()[-1]


class Process:
    """A child process in its own process group, killed with the group at the end."""

    def __init__(self, args: list[str], *, env: dict[str, str], cwd: Path, log: Path) -> None:
        self.log_path = log
        self.handle = log.open("ab")
        self.proc = subprocess.Popen(
            args,
            env=env,
            cwd=cwd,
            stdout=self.handle,
            stderr=subprocess.STDOUT,
            start_new_session=True,
        )

    def log(self) -> str:
        return self.log_path.read_text(errors="replace")[-4000:]

    def kill(self, sig: int = signal.SIGKILL) -> None:
        if self.proc.poll() is None:
            with contextlib.suppress(ProcessLookupError):
                os.killpg(self.proc.pid, sig)
            try:
                self.proc.wait(timeout=15)
            except subprocess.TimeoutExpired:
                os.killpg(self.proc.pid, signal.SIGKILL)
                self.proc.wait(timeout=15)
        self.handle.close()


#: Ports tried when the one picked was taken before the server bound it.
BIND_TRIES = 3


class Server(Process):
    """``judge-service serve`` on a free port, ready when /healthz answers."""

    def __init__(
        self,
        *,
        env: dict[str, str],
        cwd: Path,
        log: Path,
        timeout: float = 180,  # start-up imports sklearn; slow on a loaded 2-core machine
        workers: int = 1,
        extra_args: list[str] | None = None,
    ) -> None:
        deadline = time.monotonic() + timeout
        for attempt in range(BIND_TRIES):
            self.port = free_port()
            self.url = f"http://127.0.0.1:{self.port}"
            super().__init__(
                [JUDGE_SERVICE, "serve", "--host", "127.0.0.1", "--port", str(self.port)]
                + (["--workers", str(workers)] if workers > 1 else [])
                + (extra_args or []),
                env=env,
                cwd=cwd,
                log=log,
            )
            outcome = self._started(deadline, last=attempt == BIND_TRIES - 1)
            if outcome == "ready":
                return
            if outcome == "timeout":
                break
        self.kill()
        raise AssertionError(f"server did not start:\n{self.log()}")

    def _started(self, deadline: float, *, last: bool) -> str:
        """``ready`` when /healthz answers before ``deadline``, else ``timeout``; ``taken``
        at once when the port was taken between :func:`free_port` and the bind (another
        test's process won the race), unless this was the ``last`` try."""
        while time.monotonic() < deadline:
            if self.proc.poll() is not None:
                if not last and "address already in use" in self.log()[-600:]:
                    self.handle.close()
                    return "taken"
                raise AssertionError(f"server exited:\n{self.log()}")
            try:
                if httpx.get(f"{self.url}/healthz", timeout=1).status_code == 200:
                    return "ready"
            except httpx.HTTPError:
                pass
            time.sleep(0.1)
        return "timeout"


class Worker(Process):
    """``judge-service worker`` (a real Celery worker process on Redis)."""

    def __init__(
        self,
        *,
        env: dict[str, str],
        cwd: Path,
        log: Path,
        concurrency: int = 2,
        pool: str | None = None,
        metrics_port: int = 0,
        start_s: float = 180,  # importing litellm takes 30-45 s under load
    ) -> None:
        super().__init__(
            [JUDGE_SERVICE, "worker", "--concurrency", str(concurrency)]
            + (["--pool", pool] if pool else [])
            + (["--metrics-port", str(metrics_port)] if metrics_port else []),
            env=env,
            cwd=cwd,
            log=log,
        )
        self.database_url = env.get("JS_DATABASE_URL", "")
        deadline = time.monotonic() + start_s
        while time.monotonic() < deadline:
            assert self.proc.poll() is None, f"worker exited:\n{self.log()}"
            if "ready." in self.log() and self._beating():
                return
            time.sleep(0.1)
        self.kill()
        raise AssertionError(f"worker did not become ready:\n{self.log()}")

    def _beating(self) -> bool:
        """A pool process has written its heartbeat: the API takes work only then (else
        503 ``no_worker``), and under load the first beat can come after "ready."."""
        if not self.database_url:
            return True
        from judge_service.core.storage.db import session_scope
        from judge_service.core.storage.workers import live

        children = Path(f"/proc/{self.proc.pid}/task/{self.proc.pid}/children")
        with contextlib.suppress(Exception):  # not forked yet, or no schema yet: not beating
            pool = {self.proc.pid, *(int(pid) for pid in children.read_text().split())}
            with session_scope(self.database_url) as session:
                return any(seen.pid in pool for seen in live(session=session, within_s=60))
        return False
