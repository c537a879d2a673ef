"""The distribution as pip builds it: every file the service reads at run time is inside the
wheel (found relative to the installed package, never the working directory), and setuptools
has nothing to warn about."""

from __future__ import annotations

import shutil
import subprocess
import sys
import zipfile
from pathlib import Path

ROOT = Path(__file__).resolve().parents[2]
#: What pyproject.toml builds the distribution from.
SOURCES = [
    "pyproject.toml", "setup.py", "README.md",
    "judge_service", "plugins", "migrations", "rubrics", "trainer_bridge",
]  # fmt: skip


def build_wheel(tmp: Path, *flags: str) -> subprocess.CompletedProcess[str]:
    """``pip wheel`` of a copy of the checkout's sources (no build/ or egg-info in it) into
    ``tmp/dist``: what a fresh clone builds."""
    tree = tmp / "tree"
    tree.mkdir()
    for name in SOURCES:
        source = ROOT / name
        if source.is_dir():
            shutil.copytree(source, tree / name, ignore=shutil.ignore_patterns("__pycache__"))
        else:
            shutil.copy2(source, tree / name)
    return subprocess.run(
        [sys.executable, "-m", "pip", "wheel", *flags, "--no-deps", "--no-build-isolation",
         "--no-index", "-w", str(tmp / "dist"), str(tree)],
        capture_output=True, text=True, timeout=300, check=False,
    )  # fmt: skip


def test_the_wheel_holds_the_data_files_and_builds_without_warnings(tmp_path: Path) -> None:
    done = build_wheel(tmp_path, "-v")
    assert done.returncode == 0, done.stderr[-3000:]
    build_output = done.stdout + done.stderr
    assert "BuildBackendWarning" not in build_output, build_output[-6000:]
    assert "absent from the `packages` configuration" not in build_output

    (wheel,) = (tmp_path / "dist").glob("judge_service-*.whl")
    names = set(zipfile.ZipFile(wheel).namelist())
    shipped = {
        "judge_service_rubrics/customer-refund.yaml",
        "judge_service_rubrics/research-report.yaml",
        "judge_service_rubrics/travel-booking.yaml",
        "judge_service_migrations/script.py.mako",
        "judge_service_plugins/detectors/models/learned_default.json",
    }
    shipped |= {
        f"judge_service/{p.relative_to(ROOT / 'judge_service')}"
        for folder in ("templates", "core/api/web/templates")
        for p in (ROOT / "judge_service" / folder).iterdir()
        if p.is_file()
    }
    assert shipped - names == set(), f"missing from the wheel: {sorted(shipped - names)}"
    migrations = {p.name for p in (ROOT / "migrations" / "versions").glob("*.py")}
    assert {n.rsplit("/", 1)[-1] for n in names if "migrations/versions/" in n} >= migrations
