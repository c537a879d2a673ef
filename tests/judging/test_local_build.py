"""The once-per-machine build of the local judge's ``llama-server`` (``local_build``).

The real llama.cpp build takes ~17 minutes on 2 cores (``scripts/setup.sh all`` runs it
through the same class); here the builder compiles a small CMake project of this test's,
whose one target carries the name the builder installs, with real CMake and a real
compiler: the stages, the progress lines, the lock between processes, a failure's message,
a stop and the resume are the builder's own.
"""

from __future__ import annotations

import subprocess
import sys
import textwrap
import threading
from pathlib import Path

import pytest

from judge_service.judging.local_build import BuildFailed, LlamaServerBuild
from tests.helpers import wait_until

#: Translation units of the project: enough for a build that lasts a few seconds.
N_UNITS = 4
UNIT = """
#include <map>
#include <regex>
#include <string>
#include <vector>
int unit_{n}(const std::string &text) {{
    std::map<std::string, std::vector<std::regex>> rules;
    rules["a"].emplace_back("[a-z]+{n}");
    return (int)std::regex_search(text, rules["a"][0]);
}}
"""


def _project(root: Path, *, broken: bool = False) -> Path:
    """A CMake project whose target ``llama-server`` prints "built" when run."""
    root.mkdir(parents=True, exist_ok=True)
    units = [f"u{n}.cpp" for n in range(N_UNITS)]
    for n, name in enumerate(units):
        (root / name).write_text(UNIT.format(n=n))
    calls = " + ".join(f'unit_{n}("x")' for n in range(N_UNITS))
    declarations = "\n".join(f"int unit_{n}(const std::string &);" for n in range(N_UNITS))
    main = f"""
        #include <cstdio>
        #include <string>
        {declarations}
        int main() {{ std::printf("built %d\\n", {calls}); return 0; }}
    """
    (root / "main.cpp").write_text(textwrap.dedent(main) + ("this is not C++;" if broken else ""))
    (root / "CMakeLists.txt").write_text(
        "cmake_minimum_required(VERSION 3.16)\nproject(probe CXX)\n"
        f"add_executable(llama-server main.cpp {' '.join(units)})\n"
        "set_target_properties(llama-server PROPERTIES\n"
        "  RUNTIME_OUTPUT_DIRECTORY ${CMAKE_BINARY_DIR}/bin)\n"
    )
    return root


def _build(tmp_path: Path, source: Path) -> LlamaServerBuild:
    return LlamaServerBuild(
        cache=tmp_path / "cache", version="probe", source=source, jobs=2, model=None
    )


def test_a_build_reports_its_stages_then_installs_a_working_binary(tmp_path: Path):
    build = _build(tmp_path, _project(tmp_path / "src"))
    assert build.state().status == "missing" and not build.ready()
    lines: list[str] = []
    seen: list[str] = []
    build.start_in_background(log_every_s=0.1, report=lines.append)
    wait_until(lambda: seen.append(build.state().describe()) or build.ready(), 240, 0.05)
    assert build.ready(), build.state()
    assert subprocess.run([build.binary], capture_output=True, text=True).stdout == "built 0\n"
    # while it ran, every process saw it building, stage and elapsed time included
    building = [line for line in seen if line.startswith("building (")]
    assert building and all(" elapsed)" in line for line in building), seen
    assert any("configuring" in line or "compiling" in line for line in building), seen
    assert lines and all(line.startswith("local judge: llama-server building (") for line in lines)
    assert build.state().status == "ready" and build.state().describe() == "ready"
    assert not build.work.exists()  # the build folder goes once the binary is installed


def test_a_failed_build_says_why_and_the_next_one_resumes(tmp_path: Path):
    source = _project(tmp_path / "src", broken=True)
    build = _build(tmp_path, source)
    with pytest.raises(BuildFailed, match="this is not C"):
        build.run()
    state = build.state()
    assert state.status == "failed" and "this is not C" in state.error
    assert state.describe().startswith("build failed: ")
    assert state.as_json()["status"] == "failed"
    _project(source)  # fixed: the configured folder is reused, the binary installed
    assert build.run() == build.binary and build.state().status == "ready"


def test_a_stopped_build_is_not_a_failure_and_resumes(tmp_path: Path):
    build = _build(tmp_path, _project(tmp_path / "src"))
    build.start_in_background(log_every_s=0.1, report=lambda _: None)
    assert wait_until(lambda: build.state().stage.startswith("compiling"), 120, 0.02)
    build.stop()
    state = build.state()
    assert state.status == "missing" and not state.error, state
    assert (build.work / "build" / "CMakeCache.txt").is_file()  # kept for the resume
    assert build.run() == build.binary


CHILD = """
import sys
from pathlib import Path
from judge_service.judging.local_build import LlamaServerBuild
build = LlamaServerBuild(
    cache=Path(sys.argv[1]), version="probe", source=Path(sys.argv[2]), jobs=1, model=None
)
build.run()
"""


def test_one_process_builds_and_the_others_wait_for_it(tmp_path: Path):
    """Two processes: the second sees the first's stage, waits, and builds nothing (its own
    source does not compile: had it built, it would have failed)."""
    source = _project(tmp_path / "src")
    cache = tmp_path / "cache"
    waiter = _build(tmp_path, _project(tmp_path / "broken", broken=True))
    builder = subprocess.Popen([sys.executable, "-c", CHILD, str(cache), str(source)])
    try:
        assert wait_until(lambda: waiter.state().status == "building", 60, 0.02), waiter.state()
        assert waiter.state().stage  # the builder's stage, read from its status file
        outcome: list[object] = []
        other = threading.Thread(target=lambda: outcome.append(waiter.run()))
        other.start()
        other.join(timeout=240)
        assert not other.is_alive()
        assert builder.wait(timeout=60) == 0
    finally:
        builder.kill()
    assert outcome == [waiter.binary] and waiter.state().status == "ready"
    assert subprocess.run([waiter.binary], capture_output=True, text=True).stdout == "built 0\n"
