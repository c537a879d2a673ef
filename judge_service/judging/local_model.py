"""The no-set-up judge: SmolLM2-135M-Instruct (a GGUF) behind llama.cpp's llama-server.

:class:`LocalModelServer` starts llama.cpp's own ``llama-server`` (built once per machine by
:mod:`judge_service.judging.local_build`, in the background of the first ``serve``) with parallel
slots and continuous batching, so several judge calls decode together. Until the build is
done the local judge is unavailable, and says why (the build's stage). It starts the server
on demand on a free port, waits until it answers, restarts it when it dies, and makes sure
it dies with the process that started it, even on SIGKILL: the child asks the kernel for a
parent-death signal (Linux ``PR_SET_PDEATHSIG``), and ``atexit`` stops it on a normal exit.
The death signal follows the *thread* that spawned the child, so one long-lived watchdog
thread does all the spawning.
"""

from __future__ import annotations

import atexit
import ctypes
import logging
import os
import signal
import socket
import subprocess
import sys
import tempfile
import threading
import time
from pathlib import Path
from typing import Any

import httpx

from judge_service.judging.local_build import machine_build
from judge_service.judging.names import LOCAL_JUDGE_NAME, LOCAL_LITELLM_MODEL

log = logging.getLogger(__name__)

#: Slots of llama-server: requests decoded together (continuous batching).
LOCAL_PARALLEL = 4
_PR_SET_PDEATHSIG = 1


class LocalModelUnavailable(RuntimeError):
    """The local judge cannot run: package missing, bad model file, or the server won't start."""


def default_model_path() -> Path:
    """SmolLM2-135M-Instruct's GGUF, fetched once per machine with llama-server
    (:mod:`judge_service.judging.local_build`); it may not be there yet."""
    return machine_build().model_path


def free_port(host: str = "127.0.0.1") -> int:
    with socket.socket() as sock:
        sock.bind((host, 0))
        return int(sock.getsockname()[1])


def _die_with_parent(parent_pid: int) -> Any:
    """A ``preexec_fn``: SIGKILL the child when the spawning thread's process goes away."""
    libc = ctypes.CDLL(None, use_errno=True) if sys.platform.startswith("linux") else None

    def preexec() -> None:
        if libc is not None:
            libc.prctl(_PR_SET_PDEATHSIG, signal.SIGKILL, 0, 0, 0)
        if os.getppid() != parent_pid:  # the parent died before prctl took effect
            os._exit(1)

    return preexec


def local_judge_options(api_base: str, *, parallel: int = LOCAL_PARALLEL) -> dict[str, Any]:
    """Options of the ``llm`` judge plugin for the local model served at ``api_base`` with
    ``parallel`` slots."""
    return {
        "model": LOCAL_LITELLM_MODEL,
        "name": LOCAL_JUDGE_NAME,
        "api_base": api_base,
        "api_key": "sk-local",  # llama.cpp ignores it; litellm's openai client wants one
        "response_format_kind": "json_object",  # llama.cpp answers HTTP 500 to json_schema
        "free": True,
        "max_chars": 4000,  # a small context: keep each fenced text short
        "rationale_max_chars": 200,  # the grammar bounds it; a 135M model rambles otherwise
        "score_levels": 11,  # 0, 0.1, ..., 1 as an enum: the grammar ignores minimum/maximum
        # One request per slot, and one more queued so a slot never idles between requests.
        "concurrency": parallel + 1,
        "timeout_s": 120.0,
    }


class LocalModelServer:
    """One llama.cpp server process, owned and watched by a daemon thread of this process."""

    def __init__(
        self,
        *,
        model_path: str | Path | None = None,
        port: int = 0,
        host: str = "127.0.0.1",
        n_ctx: int = 8192,
        parallel: int = LOCAL_PARALLEL,
        startup_timeout_s: float = 60.0,
        watch_interval_s: float = 0.5,
    ) -> None:
        self.model_path = Path(model_path) if model_path else default_model_path()
        if model_path and not self.model_path.is_file():  # the default comes with the build
            raise LocalModelUnavailable(f"no model file at {self.model_path}")
        self.host, self.port = host, port or free_port(host)
        self.n_ctx, self.startup_timeout_s = n_ctx, startup_timeout_s
        self.parallel = parallel
        self.watch_interval_s = watch_interval_s
        self.restarts = 0
        self._spawned_at = 0.0
        self.binary: Path | None = None
        self._proc: subprocess.Popen[bytes] | None = None
        self._stopping = threading.Event()
        self._lock = threading.Lock()
        self._thread: threading.Thread | None = None
        # The server's output, kept for error messages; open as long as this object lives. A
        # file with no name (O_TMPFILE on Linux, else unlinked at once): nothing is left in the
        # temp folder, even when this process is killed.
        self._log = tempfile.TemporaryFile(prefix="js-local-model-", suffix=".log")  # noqa: SIM115
        #: The output of the last server that died, read before its respawn empties the log.
        self._last_words = ""

    @classmethod
    def from_settings(cls, settings: Any) -> LocalModelServer:
        return cls(model_path=settings.local_model_path, port=settings.local_model_port)

    @property
    def url(self) -> str:
        """Base URL for ``api_base``."""
        return f"http://{self.host}:{self.port}/v1"

    @property
    def pid(self) -> int | None:
        proc = self._proc
        return proc.pid if proc is not None and proc.poll() is None else None

    def healthy(self, timeout: float = 2.0) -> bool:
        """True when the server lists its model (``GET /v1/models``)."""
        try:
            return httpx.get(f"{self.url}/models", timeout=timeout).status_code == 200
        except httpx.HTTPError:
            return False

    def start(self) -> str:
        """Start the server if needed and wait until it answers; returns its base URL.

        Without a built ``llama-server`` this starts the build in the background and raises
        LocalModelUnavailable naming its stage."""
        build = machine_build()
        if not build.ready():
            build.start_in_background()
            raise LocalModelUnavailable(
                f"the local judge is not ready: llama-server {build.state().describe()}; "
                "it is built once per machine"
            )
        self.binary = build.binary
        with self._lock:
            if self._thread is None or not self._thread.is_alive():
                self._stopping.clear()
                self._thread = threading.Thread(
                    target=self._watch, name="local-model-watchdog", daemon=True
                )
                self._thread.start()
                atexit.unregister(self.stop)
                atexit.register(self.stop)
        deadline, restarts = time.monotonic() + self.startup_timeout_s, self.restarts
        self._last_words = ""
        while time.monotonic() < deadline and self.restarts - restarts < 2:
            if self.pid is not None and self.healthy():
                return self.url
            time.sleep(0.1)
        tail = self._last_words or self._log_tail()
        self.stop()  # a server that cannot start is not retried forever in the background
        raise LocalModelUnavailable(f"local judge server at {self.url} did not come up: {tail}")

    def ensure_running(self) -> str:
        """The base URL of a healthy server, (re)starting it when it is not."""
        if self.pid is not None and self.healthy():
            return self.url
        return self.start()

    def judge_options(self) -> dict[str, Any]:
        """Options for the ``llm`` judge plugin, the server started and healthy."""
        return local_judge_options(self.ensure_running(), parallel=self.parallel)

    def stop(self) -> None:
        """Stop watching and end the server (SIGTERM, then SIGKILL after 5 s)."""
        self._stopping.set()
        if self._thread is not None and self._thread is not threading.current_thread():
            self._thread.join(timeout=10)
        self._terminate()

    def _watch(self) -> None:
        """Owner thread: spawn the server, and respawn it (with backoff) whenever it dies."""
        backoff = self.watch_interval_s
        while not self._stopping.is_set():
            proc = self._proc
            if proc is None or proc.poll() is not None:
                if proc is not None:
                    self._last_words = self._log_tail()  # before `restarts` tells start()
                    self.restarts += 1
                    log.warning("local judge server exited (%s); restarting", proc.returncode)
                    lived = time.monotonic() - self._spawned_at
                    backoff = min(backoff * 2, 30.0) if lived < 5 else self.watch_interval_s
                self._spawn()
            self._stopping.wait(backoff)
        self._terminate()

    def _command(self) -> list[str]:
        return [
            str(self.binary), "--model", str(self.model_path), "--alias", "smollm2",
            "--host", self.host, "--port", str(self.port),
            # n_ctx tokens for each slot; the slots decode together (continuous batching)
            "--ctx-size", str(self.n_ctx * self.parallel), "--parallel", str(self.parallel),
            "--cont-batching", "--no-webui",
            # Half the cores. All of them (llama.cpp's default)
            # spin in OpenMP barriers against each other on a busy small machine: ~1 token/s.
            "--threads", str(max(1, (os.cpu_count() or 2) // 2)),
            "--cache-ram", "512",  # MiB of prompt cache in RAM (default 8 GiB)
            "--log-verbosity", "2",  # errors and warnings, no line per call
        ]  # fmt: skip

    def _spawn(self) -> None:
        command = self._command()
        self._log.seek(0)
        self._log.truncate(0)
        self._proc = subprocess.Popen(
            command,
            stdin=subprocess.DEVNULL,
            stdout=self._log,
            stderr=subprocess.STDOUT,
            preexec_fn=_die_with_parent(os.getpid()),
        )
        self._spawned_at = time.monotonic()
        log.info("local judge server pid %s on %s", self._proc.pid, self.url)

    def _terminate(self) -> None:
        proc, self._proc = self._proc, None
        if proc is None or proc.poll() is not None:
            return
        proc.terminate()
        try:
            proc.wait(timeout=5)
        except subprocess.TimeoutExpired:
            proc.kill()
            proc.wait(timeout=5)

    def _log_tail(self, chars: int = 2000) -> str:
        """The last ``chars`` characters of the server's output (read by offset: the server
        shares the file's position)."""
        try:
            fd = self._log.fileno()
            start = max(0, os.fstat(fd).st_size - 4 * chars)  # a character is at most 4 bytes
            text = os.pread(fd, 4 * chars, start).decode(errors="replace")
        except (OSError, ValueError):  # ValueError: closed
            return "(no log)"
        return text[-chars:] or "(no output)"


_SERVERS: dict[tuple[Any, ...], LocalModelServer] = {}
_SERVERS_LOCK = threading.Lock()


def stop_local_servers() -> None:
    """Stop every server :func:`local_judge` started (also done at exit)."""
    with _SERVERS_LOCK:
        servers = list(_SERVERS.values())
        _SERVERS.clear()
    for server in servers:
        server.stop()


def local_judge(settings: Any) -> dict[str, Any]:
    """The local judge's plugin options for these settings, its server started when needed.

    With ``settings.local_model_url`` set, that server is used and nothing is started.
    """
    if settings.local_model_url:  # e.g. `judge-service local-model`: llama-server's slots
        return local_judge_options(settings.local_model_url.rstrip("/"))
    key = (settings.local_model_path, settings.local_model_port)
    with _SERVERS_LOCK:
        if key not in _SERVERS:
            _SERVERS[key] = LocalModelServer.from_settings(settings)
        server = _SERVERS[key]
    return server.judge_options()
