"""The wheel as a user gets it: built from the checkout, installed with its dependencies into a
fresh virtual environment outside the checkout, and run from a folder outside it.

End to end and slow (~3 minutes on a loaded 2-core machine: ~15 s to build the wheel, ~45 s
for pip to install it with its dependencies, ~2 minutes for the commands, each of which imports
litellm and scikit-learn first), yet in the default run: a package or data file the wheel
forgets breaks only an installed service, never the editable install the other tests use. One
wheel and one environment serve the module.
"""

from __future__ import annotations

import contextlib
import json
import os
import signal
import subprocess
import sys
import time
import tomllib
import zipfile
from pathlib import Path

import httpx
import pytest

from tests.helpers import Process, free_port, service_env
from tests.project.test_packaging import build_wheel

pytestmark = pytest.mark.e2e

ROOT = Path(__file__).resolve().parents[2]
SETUPTOOLS = tomllib.loads((ROOT / "pyproject.toml").read_text(encoding="utf-8"))["tool"][
    "setuptools"
]
#: Source folder -> the name it is installed under (pyproject.toml's package-dir renames some).
INSTALLED_AS = {
    "judge_service": "judge_service",
    "trainer_bridge": "trainer_bridge",
    **{folder: name for name, folder in SETUPTOOLS["package-dir"].items()},
}
#: Prints where each package named in argv is imported from.
WHERE = "import importlib, sys; [print(*importlib.import_module(n).__path__) for n in sys.argv[1:]]"
INSTALL_S = 1200  # a cold pip cache on a loaded 2-core machine


@pytest.fixture(scope="module")
def wheel(tmp_path_factory: pytest.TempPathFactory) -> Path:
    """The wheel, built from a copy of the checkout (no build/ or egg-info left in it)."""
    tmp = tmp_path_factory.mktemp("wheel")
    done = build_wheel(tmp, "-q")
    assert done.returncode == 0, done.stderr[-3000:]
    (built,) = (tmp / "dist").glob("judge_service-*.whl")
    return built


@pytest.fixture(scope="module")
def venv(wheel: Path, tmp_path_factory: pytest.TempPathFactory) -> Path:
    """A fresh virtual environment (not this one's packages) with the wheel installed, with
    its dependencies at constraints.txt's versions and without the optional extras."""
    home = tmp_path_factory.mktemp("venv") / "venv"
    assert not home.resolve().is_relative_to(ROOT)
    env = clean_env()
    # No pip inside: this pip installs into it (--python), which saves seeding one.
    subprocess.run(
        [sys.executable, "-m", "venv", "--without-pip", str(home)], env=env, check=True, timeout=120
    )
    done = subprocess.run(
        [sys.executable, "-m", "pip", "--python", str(home / "bin" / "python"), "install", "-q",
         "--no-compile", "-c", str(ROOT / "constraints.txt"), str(wheel)],
        env=env, capture_output=True, text=True, timeout=INSTALL_S, check=False,
    )  # fmt: skip
    assert done.returncode == 0, done.stderr[-3000:]
    return home


def clean_env(**values: str) -> dict[str, str]:
    """The environment of a user's shell: no JS_* settings, and nothing of this session on
    the import path (the test plugin's folder is on PYTHONPATH)."""
    env = service_env(**values)
    for name in ("PYTHONPATH", "VIRTUAL_ENV", "PYTHONHOME"):
        env.pop(name, None)
    return env


def source_files() -> dict[str, Path]:
    """Every file of the source folders by the path it has in the wheel (byte code aside)."""
    files = {}
    for folder, name in INSTALLED_AS.items():
        for path in (ROOT / folder).rglob("*"):
            if path.is_file() and "__pycache__" not in path.parts and path.suffix != ".pyc":
                files[f"{name}/{path.relative_to(ROOT / folder).as_posix()}"] = path
    return files


def test_every_module_and_data_file_of_the_source_tree_is_in_the_wheel(wheel: Path) -> None:
    names = set(zipfile.ZipFile(wheel).namelist())
    expected = source_files()
    assert len([n for n in expected if n.endswith(".py")]) > 100, "the source walk found too few"
    missing = sorted(set(expected) - names)
    assert missing == [], f"missing from the wheel: {missing}"


@pytest.fixture
def elsewhere(tmp_path: Path) -> Path:
    work = tmp_path / "elsewhere"
    work.mkdir()
    assert not work.resolve().is_relative_to(ROOT)
    return work


class Commands:
    """``judge-service`` of the fresh environment, run from ``cwd``. Commands that do not
    depend on each other run side by side: each process starts by importing litellm and
    scikit-learn, the bulk of this test's time after the install."""

    def __init__(self, venv: Path, cwd: Path, env: dict[str, str]) -> None:
        self.program, self.cwd, self.env = str(venv / "bin" / "judge-service"), cwd, env

    def start(self, *args: str) -> subprocess.Popen[str]:
        return subprocess.Popen(
            [self.program, *args], env=self.env, cwd=self.cwd, text=True,
            stdout=subprocess.PIPE, stderr=subprocess.PIPE,
        )  # fmt: skip

    def output(self, process: subprocess.Popen[str]) -> str:
        """What ``process`` printed, once it exited with 0."""
        try:
            out, err = process.communicate(timeout=300)
        finally:
            process.kill()
        assert process.returncode == 0, f"{process.args}:\n{err[-3000:]}"
        return out

    def serving(self, port: int) -> Process:
        """``serve`` until /healthz answers 200; the caller stops it."""
        args = [self.program, "serve", "--host", "127.0.0.1", "--port", str(port)]
        server = Process(args, env=self.env, cwd=self.cwd, log=self.cwd / "serve.log")
        deadline = time.monotonic() + 180  # start-up imports sklearn and litellm
        while time.monotonic() < deadline:
            assert server.proc.poll() is None, f"serve exited:\n{server.log()}"
            with contextlib.suppress(httpx.HTTPError):
                if httpx.get(f"http://127.0.0.1:{port}/healthz", timeout=1).status_code == 200:
                    return server
            time.sleep(0.2)
        server.kill()
        raise AssertionError(f"no 200 from /healthz in 180 s:\n{server.log()}")


@pytest.mark.timeout(INSTALL_S + 600)
def test_the_installed_wheel_migrates_lists_plugins_scores_and_serves(
    venv: Path, elsewhere: Path
) -> None:
    env = clean_env(JS_DATABASE_URL=f"sqlite:///{elsewhere / 'js.db'}")
    env["PATH"] = os.pathsep.join([str(venv / "bin"), env.get("PATH", "")])
    where = subprocess.run(
        [str(venv / "bin" / "python"), "-c", WHERE, *INSTALLED_AS.values()],
        env=env, cwd=elsewhere, capture_output=True, text=True, timeout=120, check=True,
    ).stdout.split()  # fmt: skip
    assert all(Path(f).resolve().is_relative_to(venv.resolve()) for f in where), where
    commands = Commands(venv, elsewhere, env)

    plugins = commands.start("plugins")  # needs no database
    assert "database at head" in commands.output(commands.start("db", "upgrade"))
    listed = commands.output(plugins)
    for plugin in ("reference_match", "llm", "mean", "test_tampering", "learned"):
        assert plugin in listed, listed
    assert "failed" not in listed, listed  # every entry point loads
    assert "js_test_plugin" not in listed  # this session's test plugin did not leak in

    infile, outfile = elsewhere / "in.jsonl", elsewhere / "out.jsonl"
    sample = {"id": "s1", "prompt": "6 x 7?", "completion": "#### 42", "reference": "42"}
    infile.write_text(json.dumps(sample) + "\n", encoding="utf-8")
    score = commands.start(
        "score", str(infile), "--out", str(outfile), "--judge", "reference_match"
    )
    commands.serving(free_port()).kill(signal.SIGTERM)  # as a user stops it
    commands.output(score)
    (result,) = [json.loads(line) for line in outfile.read_text(encoding="utf-8").splitlines()]
    assert result["id"] == "s1" and result["valid"] is True and result["reward"] == 1.0, result
