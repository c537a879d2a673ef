"""Meta-tests that keep the surface honest: import rules, documented settings, tested plugins."""

from __future__ import annotations

import ast
import graphlib
import importlib.util
import re
import tomllib
from collections.abc import Iterator
from pathlib import Path

import pytest

from judge_service.core.settings import Settings

ROOT = Path(__file__).resolve().parents[2]
PACKAGE = ROOT / "judge_service"
PLUGINS = ROOT / "plugins"
BRIDGE = ROOT / "trainer_bridge"
TESTS = ROOT / "tests"

# Source folder -> import name (plugins/ is installed as judge_service_plugins).
IMPORT_NAMES = {
    PACKAGE: "judge_service",
    PLUGINS: "judge_service_plugins",
    BRIDGE: "trainer_bridge",
}


def python_files(folder: Path) -> list[Path]:
    return sorted(p for p in folder.rglob("*.py") if "__pycache__" not in p.parts)


def module_name(path: Path, names: dict[Path, str] = IMPORT_NAMES) -> tuple[str, bool]:
    """The dotted import name of a source file, and whether it is a package ``__init__``."""
    for folder, name in names.items():
        if path.is_relative_to(folder):
            parts = [name, *path.relative_to(folder).with_suffix("").parts]
            is_package = parts[-1] == "__init__"
            if is_package:
                parts.pop()
            return ".".join(parts), is_package
    raise AssertionError(f"{path} is outside the known source folders")


def imported_modules(path: Path, names: dict[Path, str] = IMPORT_NAMES) -> Iterator[str]:
    """Every module ``path`` imports, anywhere in the file, relative imports resolved.

    ``from a.b import c`` yields both ``a.b`` and ``a.b.c`` (c may be a module).
    """
    tree = ast.parse(path.read_text(encoding="utf-8"), filename=str(path))
    name, is_package = module_name(path, names)
    package = name if is_package else name.rpartition(".")[0]
    for node in ast.walk(tree):
        if isinstance(node, ast.Import):
            for alias in node.names:
                yield alias.name
        elif isinstance(node, ast.ImportFrom):
            if node.level:
                base = package.split(".")
                if node.level > 1:
                    base = base[: len(base) - (node.level - 1)]
                origin = ".".join([*base, node.module] if node.module else base)
            else:
                origin = node.module or ""
            yield origin
            for alias in node.names:
                if alias.name != "*":
                    yield f"{origin}.{alias.name}"


def of_package(module: str, package: str) -> bool:
    return module == package or module.startswith(package + ".")


def violations(
    folder: Path,
    allowed: set[str],
    *,
    forbidden: tuple[str, ...] = (),
    names: dict[Path, str] = IMPORT_NAMES,
) -> list[str]:
    """Imports of ``judge_service`` outside ``allowed`` (which covers submodules and names)."""
    bad = []
    for path in python_files(folder):
        for module in imported_modules(path, names):
            outside = of_package(module, "judge_service") and not (
                module == "judge_service" or any(of_package(module, a) for a in allowed)
            )
            if outside or any(of_package(module, f) for f in forbidden):
                bad.append(f"{path.relative_to(folder.parent)} imports {module}")
    return bad


def test_import_resolution_sees_the_real_imports() -> None:
    """The checker itself: it sees what a real module imports."""
    probe = PACKAGE / "scoring" / "evaluate.py"
    found = set(imported_modules(probe))
    assert "judge_service.judging.consensus" in found
    assert "judge_service.domain" in found


@pytest.mark.parametrize(
    ("module", "allowed"),
    [
        ("domain", ["judge_service.wire"]),
        ("wire", []),
        ("core/errors", []),
        ("core/settings", []),
    ],
)
def test_leaf_modules_import_nothing_of_the_package(module: str, allowed: list[str]) -> None:
    """The leaves import nothing of the package; the domain only the wire contract (an
    ``Outcome`` is a ``SampleResult`` with full records)."""
    path = PACKAGE / f"{module}.py"
    assert path.exists()
    imports = [m for m in imported_modules(path) if of_package(m, "judge_service")]
    unexpected = [m for m in imports if not any(m == a or m.startswith(f"{a}.") for a in allowed)]
    assert unexpected == [], f"judge_service/{module}.py imports {unexpected}"
    assert not [m for m in imported_modules(path) if of_package(m, "judge_service_plugins")]


def test_plugins_import_only_contracts_domain_llm() -> None:
    files = python_files(PLUGINS)
    assert files, "plugins/ has no modules"
    bad = violations(PLUGINS, PLUGIN_RULE)
    assert bad == [], "plugins reach into the service:\n" + "\n".join(bad)


def test_plugin_imports_of_the_package_itself_are_fine() -> None:
    # numeric_match shares helpers with reference_match through judge_service_plugins.
    found = set(imported_modules(PLUGINS / "judges" / "numeric_match.py"))
    assert any(of_package(m, "judge_service_plugins") for m in found)


def test_service_never_imports_plugins() -> None:
    bad = []
    for path in python_files(PACKAGE):
        for module in imported_modules(path):
            if of_package(module, "judge_service_plugins") or of_package(module, "plugins"):
                bad.append(f"{path.relative_to(ROOT)} imports {module}")
        text = path.read_text(encoding="utf-8")
        if re.search(r"""import_module\(\s*['"]judge_service_plugins""", text):
            bad.append(f"{path.relative_to(ROOT)} imports judge_service_plugins dynamically")
    assert bad == [], "\n".join(bad)


def test_trainer_bridge_imports_only_wire() -> None:
    assert BRIDGE.is_dir(), "trainer_bridge/ is missing"
    bad = violations(BRIDGE, {"judge_service.wire"}, forbidden=("judge_service_plugins",))
    assert bad == [], "trainer_bridge reaches into the server:\n" + "\n".join(bad)


#: What the API must not import: it stores, dispatches and reads; the worker scores
#: (the pipeline) and writes results (the task and writer modules).
API_FORBIDDEN = (
    "judge_service.scoring.evaluate",
    "judge_service.audit.host",
    "judge_service.scoring.job",
    "judge_service.review.job_mining",
    "judge_service.scoring.job_result_writer",
    "judge_service.review.job_review_enqueue",
    "judge_service.core.worker.inprocess",
    "judge_service.scoring.job_offline",
)


def test_the_api_imports_neither_the_pipeline_nor_the_worker_tasks_and_writers() -> None:
    """Every module of ``judge_service.core.api`` and every feature's routes and pages, read with
    ast (imports inside functions too)."""
    http = python_files(PACKAGE / "core" / "api")
    http += [p for p in PACKAGE.glob("*/*.py") if p.stem.startswith(("routes", "web"))]
    bad = [
        f"{path.relative_to(ROOT)} imports {module}"
        for path in http
        for module in imported_modules(path)
        if any(of_package(module, f) for f in API_FORBIDDEN)
    ]
    assert bad == [], "the API reaches into the worker:\n" + "\n".join(bad)


def test_importing_the_api_loads_no_scoring_or_writing_module() -> None:
    """The same rule at run time, through every indirection: a fresh interpreter imports
    every module of ``judge_service.core.api`` and the dispatcher, then lists what got loaded.
    (The shared panel builder brings the pipeline's panel and consensus types, not the
    code that scores a batch.)"""
    import subprocess
    import sys

    http = python_files(PACKAGE / "core" / "api")
    http += [p for p in PACKAGE.glob("*/*.py") if p.stem.startswith(("routes", "web"))]
    modules = [module_name(path)[0] for path in http]
    modules.append("judge_service.core.worker.dispatch")
    code = (
        "import importlib, sys\n"
        f"for name in {modules!r}:\n"
        "    importlib.import_module(name)\n"
        "print('\\n'.join(sorted(sys.modules)))\n"
    )
    loaded = subprocess.run(
        [sys.executable, "-c", code], capture_output=True, text=True, check=True, cwd=ROOT
    ).stdout.split()
    forbidden = [*API_FORBIDDEN[1:], "judge_service.scoring.evaluate"]
    bad = [m for m in loaded if any(of_package(m, f) for f in forbidden)]
    assert "judge_service.scoring.web_submission" in loaded
    assert bad == [], f"importing the API loads {bad}"


PLUGIN_RULE = {"judge_service.contracts", "judge_service.domain", "judge_service.judging.client"}


@pytest.mark.parametrize(
    ("source", "caught"),
    [
        ("from judge_service.core.storage import db\n", True),
        ("import judge_service.scoring.evaluate\n", True),
        ("from judge_service import registry\n", True),
        ("def f():\n    from judge_service.core.api import app\n", True),
        ("from judge_service import domain, contracts\n", False),
        ("from judge_service.judging.client import ModelClient\n", False),
        ("from . import answers\nfrom ..aggregators import weighted\n", False),
        ("import judge_service_plugins.judges.answers\n", False),
    ],
)
def test_import_rule_checker_flags_planted_imports(
    tmp_path: Path, source: str, caught: bool
) -> None:
    """The checker itself, on a planted plugin module: bad imports are caught, good ones not."""
    folder = tmp_path / "plugins"
    (folder / "judges").mkdir(parents=True)
    (folder / "__init__.py").write_text("")
    (folder / "judges" / "__init__.py").write_text("")
    (folder / "judges" / "planted.py").write_text(source)
    bad = violations(folder, PLUGIN_RULE, names={folder: "judge_service_plugins"})
    assert bool(bad) is caught, bad


# --- settings documented -----------------------------------------------------------------


def test_every_setting_is_documented_in_the_configuration_page() -> None:
    """The README links to docs/configuration.md, which lists every setting."""
    page = ROOT / "docs" / "configuration.md"
    assert page.exists(), "docs/configuration.md is missing"
    text = page.read_text(encoding="utf-8")
    fields = list(Settings.model_fields)
    assert fields
    missing = [f"JS_{name.upper()}" for name in fields if f"JS_{name.upper()}" not in text]
    assert missing == [], f"settings not documented in docs/configuration.md: {missing}"


# --- every plugin has a test -------------------------------------------------------------


def declared_entry_points() -> list[tuple[str, str]]:
    project = tomllib.loads((ROOT / "pyproject.toml").read_text(encoding="utf-8"))["project"]
    groups = project.get("entry-points", {})
    found = [
        (group, name)
        for group, entries in groups.items()
        if group.startswith("judge_service.")
        for name in entries
    ]
    return sorted(found)


# Every package and data file of the source tree is in the wheel:
# tests/project/test_wheel_install.py
# (setup.py finds the packages; there is no list in pyproject.toml to check).


def test_pyproject_declares_the_plugin_groups() -> None:
    project = tomllib.loads((ROOT / "pyproject.toml").read_text(encoding="utf-8"))["project"]
    groups = project.get("entry-points", {})
    for group in ("judge_service.judges", "judge_service.detectors", "judge_service.aggregators"):
        assert group in groups, f"pyproject.toml lacks the entry-point group {group}"
    assert len(declared_entry_points()) >= 8


def test_every_entry_point_is_mentioned_in_a_test() -> None:
    tests = [p for p in TESTS.rglob("test_*.py") if p.name != "test_meta.py"]
    assert tests
    sources = "\n".join(p.read_text(encoding="utf-8") for p in tests)
    untested = [
        f"{group}:{name}"
        for group, name in declared_entry_points()
        if not re.search(rf"""["']{re.escape(name)}["']""", sources)
    ]
    assert untested == [], f"entry points no test names: {untested}"


# --- no import cycle ---------------------------------------------------------------------


def module_level_imports(path: Path) -> Iterator[str]:
    """The modules ``path`` imports when it is loaded: its top-level statements (inside
    ``if``/``try`` too, not ``if TYPE_CHECKING``), not imports deferred into functions.
    ``from a import b`` yields ``a.b``; whether that is a module is the caller's to say."""
    name, is_package = module_name(path)
    package = name if is_package else name.rpartition(".")[0]
    todo = list(ast.parse(path.read_text(encoding="utf-8"), filename=str(path)).body)
    while todo:
        node = todo.pop()
        if isinstance(node, ast.Import):
            yield from (alias.name for alias in node.names)
        elif isinstance(node, ast.ImportFrom):
            origin = importlib.util.resolve_name("." * node.level + (node.module or ""), package)
            yield origin
            yield from (f"{origin}.{alias.name}" for alias in node.names)
        elif isinstance(node, ast.If) and "TYPE_CHECKING" not in ast.unparse(node.test):
            todo += [*node.body, *node.orelse]
        elif isinstance(node, ast.Try):
            todo += [*node.body, *node.orelse, *node.finalbody]
            todo += [stmt for handler in node.handlers for stmt in handler.body]


def import_graph() -> dict[str, set[str]]:
    """Each module of ``judge_service`` -> the modules of it that it imports at load time."""
    paths = {module_name(path)[0]: path for path in python_files(PACKAGE)}
    return {
        name: {m for m in module_level_imports(path) if m in paths and m != name}
        for name, path in paths.items()
    }


def test_judge_service_has_no_import_cycle() -> None:
    """A module that imports itself back works or fails by import order; none does."""
    graph = import_graph()
    assert "judge_service.core.worker.batch_status" in graph["judge_service.core.worker.dispatch"]
    # the dispatcher chooser's deferred import of the embedded executor is not a load edge
    assert "judge_service.core.worker.inprocess" not in graph["judge_service.core.worker.dispatch"]
    cycles = []
    while True:
        try:
            graphlib.TopologicalSorter(graph).prepare()
            break
        except graphlib.CycleError as error:
            cycle = error.args[1]  # [a, b, ..., a]: each is imported by the next one
            cycles.append(" -> ".join(reversed(cycle)))
            graph[cycle[1]].discard(cycle[0])  # break it to look for the next one
    assert cycles == [], "import cycles in judge_service:\n" + "\n".join(cycles)


def test_an_outcome_is_the_wire_result_with_full_records() -> None:
    """One outcome model: every field of the wire's result is an outcome's, and an outcome's
    dump reads back as the wire's result with the same values."""
    from judge_service.domain import Finding, Outcome, Verdict
    from judge_service.wire import SampleResult

    assert issubclass(Outcome, SampleResult)
    assert set(SampleResult.model_fields) < set(Outcome.model_fields)
    outcome = Outcome(
        id="s1",
        reward=0.25,
        valid=True,
        judges=[Verdict(judge="j", weight=2.0, score=0.25)],
        findings=[Finding(detector="d", kind="k", severity="low", confidence=0.5, evidence="e")],
    )
    answer = SampleResult.model_validate(outcome.model_dump())
    assert answer.reward == 0.25 and answer.judges[0].score == 0.25
    assert answer.findings[0].kind == "k"
    assert "usage" not in answer.model_dump()


#: A dotted name inside the package, in code, a docstring, a comment or a page:
#: ``judge_service.<package>.<module or name>...`` (two-part names are entry-point groups,
#: task names and file names, not modules).
DOTTED = re.compile(r"\bjudge_service(?:\.[A-Za-z_]\w*){2,}")


def _names_something(dotted: str) -> bool:
    """True when ``dotted`` is a module, or a name reachable from its longest module."""
    import importlib

    parts = dotted.split(".")
    for end in range(len(parts), 0, -1):
        module = ".".join(parts[:end])
        try:
            found = importlib.util.find_spec(module) is not None
        except ModuleNotFoundError:
            found = False
        if found:
            target = importlib.import_module(module)
            for attribute in parts[end:]:
                if not hasattr(target, attribute):
                    return False
                target = getattr(target, attribute)
            return True
    return False


def stale_references(paths: list[Path]) -> list[str]:
    """Each dotted name of the package in ``paths`` that names nothing (a module renamed or
    moved, as ``world.episode_reward`` became ``world.web_episode_reward``)."""
    found = set()
    for path in paths:
        for match in DOTTED.finditer(path.read_text(encoding="utf-8")):
            if not _names_something(match.group(0)):
                where = path.relative_to(ROOT) if path.is_relative_to(ROOT) else path.name
                found.add(f"{where}: {match.group(0)}")
    return sorted(found)


def test_every_dotted_name_of_the_package_names_a_module_or_a_name() -> None:
    sources = [p for folder in (PACKAGE, PLUGINS, BRIDGE, TESTS) for p in python_files(folder)]
    pages = [ROOT / "README.md", *sorted((ROOT / "docs").glob("*.md"))]
    assert stale_references(sources + pages) == []


def test_the_stale_reference_checker_flags_a_planted_name(tmp_path: Path) -> None:
    page = ROOT / "docs" / "world.md"  # a real page, and a copy of it with one more line
    planted = tmp_path / "planted.md"
    gone = ".".join(["judge_service", "world", "episode_reward"])
    planted.write_text(page.read_text(encoding="utf-8") + f"\nsee :mod:`{gone}`\n")
    assert stale_references([page]) == []
    assert stale_references([planted]) == [f"planted.md: {gone}"]


#: Names that had several definitions, each to be defined once and imported elsewhere.
SHARED_NAMES = ("WORLD_VERDICT", "SEVERITY_WEIGHT", "PenaltyName")


def module_level_definitions(paths: list[Path], names: tuple[str, ...]) -> set[tuple[str, str]]:
    """(file, name) for each module-level assignment of one of ``names`` in ``paths``."""
    found = set()
    for path in paths:
        for node in ast.parse(path.read_text(encoding="utf-8")).body:
            if isinstance(node, ast.Assign):
                targets = node.targets
            elif isinstance(node, ast.AnnAssign):
                targets = [node.target]
            else:
                continue
            for target in targets:
                if isinstance(target, ast.Name) and target.id in names:
                    found.add((path.relative_to(ROOT).as_posix(), target.id))
    return found


def test_each_shared_name_is_defined_once() -> None:
    paths = [p for folder in (PACKAGE, PLUGINS, BRIDGE) for p in python_files(folder)]
    found = module_level_definitions(paths, SHARED_NAMES)
    where = {name: sorted(f for f, n in found if n == name) for name in SHARED_NAMES}
    assert where == {
        "WORLD_VERDICT": ["judge_service/domain.py"],
        "SEVERITY_WEIGHT": ["judge_service/domain.py"],
        "PenaltyName": ["judge_service/wire.py"],
    }


#: Where the package's own code, and what runs it, may call a function: not the tests.
CALLERS = ("judge_service", "plugins", "trainer_bridge", "bench", "scripts", "migrations")
#: Resets of a module's process-wide cache, which tests call between cases: the module owns the
#: cache, so it owns its reset too.
RESETS = {"dispose_engines", "forget_clients", "stop_local_servers"}


def uncalled(sources: list[Path], callers: list[Path]) -> list[str]:
    """``file: name`` for each undecorated public function or class at module level in
    ``sources`` whose name appears nowhere in ``callers`` but in its own definition."""
    words: dict[str, int] = {}
    for path in callers:
        for word in re.findall(r"[A-Za-z_]\w*", path.read_text(encoding="utf-8")):
            words[word] = words.get(word, 0) + 1
    found = []
    kinds = (ast.FunctionDef, ast.AsyncFunctionDef, ast.ClassDef)
    for path in sources:
        for node in ast.parse(path.read_text(encoding="utf-8")).body:
            if not isinstance(node, kinds) or node.decorator_list or node.name.startswith("_"):
                continue
            if words.get(node.name, 0) <= 1 and node.name not in RESETS:
                found.append(f"{path.name}: {node.name}")
    return found


def test_no_function_of_the_package_is_called_by_tests_alone() -> None:
    """Production code that only tests use is dead weight that looks alive: each public
    function and class of the package has a caller in the package, the plugins, the bridge,
    the benchmarks, the scripts or ``pyproject.toml`` (routes and commands are registered by
    their decorators)."""
    callers = [p for folder in CALLERS for p in python_files(ROOT / folder)]
    assert uncalled(python_files(PACKAGE), [*callers, ROOT / "pyproject.toml"]) == []


def test_the_uncalled_checker_flags_a_planted_function(tmp_path: Path) -> None:
    source = tmp_path / "source.py"
    source.write_text(
        "def called():\n    pass\n\n\ndef only_tested():\n    pass\n\n\n"
        "def _private():\n    pass\n\n\n@decorated\ndef route():\n    pass\n"
    )
    caller = tmp_path / "caller.py"
    caller.write_text("from source import called\n")
    assert uncalled([source], [source, caller]) == ["source.py: only_tested"]
