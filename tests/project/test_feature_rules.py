"""The rules of docs/architecture.md ("Layers", "The packages"), read from the source with ast.

A feature package holds its pure modules, its storage (``store*.py``, ``tables.py``), its jobs
(``job*.py``), its HTTP routes (``routes*.py``, pages and cookies in ``web*.py``) and models
(``wire.py``), and its commands (``cli*.py``). The pure part imports no database, HTTP or
queue; only the jobs join the pure part, storage and models; routes never call a model.
Features move into packages one at a time: ``FEATURES`` lists those that have.
"""

from __future__ import annotations

from pathlib import Path

import pytest

from tests.project.test_meta import (
    IMPORT_NAMES,
    PACKAGE,
    imported_modules,
    module_name,
    of_package,
    python_files,
)

FEATURES = [
    "forge", "access", "runs", "judging", "rubrics", "review", "audit", "scoring", "world",
    "episodes", "traces",
]  # fmt: skip

#: What no pure module of a feature may import: the database, HTTP, the queue, models.
IO = (
    "sqlalchemy", "fastapi", "starlette", "celery", "httpx", "aiohttp", "litellm",
    "judge_service.core.storage", "judge_service.core.api", "judge_service.core.worker",
    "judge_service.judging.client", "judge_service.judging.local_model",
)  # fmt: skip
#: What routes may not import: a model client, or a job (routes store and dispatch).
MODELS = (
    "judge_service.judging.client", "judge_service.judging.local_model", "litellm",
)  # fmt: skip


def role(path: Path) -> str:
    """The part of its feature a module is, by its name."""
    name = path.stem

    def named(*parts: str) -> bool:  # "job" and "job_asks" are jobs; "jobless" is not
        return any(name == part or name.startswith(f"{part}_") for part in parts)

    if named("store", "tables"):
        return "store"
    for part in ("job", "routes", "cli", "wire"):
        if named(part):
            return part
    if named("web"):  # pages and cookies: HTTP, under the routes' rules
        return "routes"
    if named("client", "local"):  # a model's transport or its local server
        return "client"
    return "pure"


def forbidden(feature: str, part: str) -> tuple[str, ...]:
    """Imports a module of this part of ``feature`` must not make."""
    own = f"judge_service.{feature}"
    jobs_routes_cli = (f"{own}.job", f"{own}.routes", f"{own}.cli")
    if part == "pure":
        return (*IO, f"{own}.store", f"{own}.tables", *jobs_routes_cli)
    if part in ("store", "wire"):
        return (
            *jobs_routes_cli,
            "judge_service.core.api",
            "judge_service.judging.client",
            "litellm",
        )
    if part == "routes":
        return (*MODELS, f"{own}.job", f"{own}.cli")
    if part == "job":
        return (f"{own}.routes", f"{own}.cli", "judge_service.core.api")
    if part == "client":
        return (
            *jobs_routes_cli,
            "judge_service.core.api",
            "judge_service.core.storage",
            "judge_service.core.worker",
        )
    return ()


def breaches(folder: Path, feature: str, names: dict[Path, str] = IMPORT_NAMES) -> list[str]:
    """Each import of a module of ``folder`` that its part may not make."""
    found = []
    for path in python_files(folder):
        rules = forbidden(feature, role(path))
        for module in imported_modules(path, names):
            # job_x.py starts with "job": match whole names, not prefixes of names
            if any(of_package(module, f) or module.startswith(f"{f}_") for f in rules):
                found.append(f"{path.name} ({role(path)}) imports {module}")
    return sorted(set(found))


@pytest.mark.parametrize("feature", FEATURES)
def test_a_feature_keeps_its_pure_part_storage_jobs_and_routes_apart(feature: str) -> None:
    assert breaches(PACKAGE / feature, feature) == []


def test_the_features_hold_every_part_a_name_can_say() -> None:
    """The names sort the modules into parts: a checker that saw every module as pure would
    pass the test above for nothing."""
    parts = {role(path) for feature in FEATURES for path in python_files(PACKAGE / feature)}
    assert parts == {"pure", "store", "job", "routes", "cli", "wire", "client"}


@pytest.mark.parametrize(
    ("name", "source", "caught"),
    [
        ("goals.py", "from judge_service.core.storage import db\n", True),
        ("goals.py", "import sqlalchemy\n", True),
        ("goals.py", "from judge_service.forge import store\n", True),
        ("goals.py", "from judge_service.forge.job_asks import ask\n", True),
        ("goals.py", "from judge_service.forge.text import normalise\n", False),
        ("routes.py", "from judge_service.judging.client import ModelClient\n", True),
        ("routes.py", "def f():\n    from judge_service.forge.job import run_forge\n", True),
        ("routes.py", "from judge_service.forge import store\n", False),
        ("store.py", "from judge_service.forge.job import run_forge\n", True),
        ("job.py", "from judge_service.forge import store, traces\n", False),
        ("job.py", "from judge_service.core.api.deps import AnyKey\n", True),
    ],
)
def test_the_rule_checker_flags_planted_imports(
    tmp_path: Path, name: str, source: str, caught: bool
) -> None:
    """The checker itself, on a planted module in a copy of the package's layout."""
    package = plant(tmp_path, f"forge/{name}", source)
    found = breaches(package / "forge", "forge", names={package: "judge_service"})
    assert bool(found) is caught, found


def plant(root: Path, where: str, source: str) -> Path:
    """A ``judge_service`` package under ``root`` holding one module, ``where``, of
    ``source``; returns the package's folder."""
    package = root / "judge_service"
    module = package / where
    module.parent.mkdir(parents=True, exist_ok=True)
    (package / "__init__.py").write_text("")
    (module.parent / "__init__.py").write_text("")
    module.write_text(source)
    return package


# --- between features, and between the core and the features ------------------------------


def feature_of(module: str) -> str | None:
    parts = module.split(".")
    if len(parts) > 1 and parts[0] == "judge_service" and parts[1] in FEATURES:
        return parts[1]
    return None


def crossings(package: Path = PACKAGE, names: dict[Path, str] = IMPORT_NAMES) -> list[str]:
    """Imports that break the rules between features: a feature reaching into another
    feature's routes, pages, commands or jobs (the core reaches into none:
    :func:`core_reaches`)."""
    bad = []
    for path in python_files(package):
        where = path.relative_to(package).as_posix()
        home = feature_of(module_name(path, names)[0])
        for module in imported_modules(path, names):
            other = feature_of(module)
            parts = module.split(".")
            if other is None or other == home or len(parts) < 3:
                continue
            part = role(Path(f"{parts[2]}.py"))
            target = ".".join(parts[:3])
            if home is not None and part in ("routes", "cli", "job"):
                bad.append(f"{where} (feature {home}) imports {target} ({part})")
    return sorted(set(bad))


def test_features_reach_into_each_other_and_the_core_into_them_only_as_allowed() -> None:
    assert crossings() == []


@pytest.mark.parametrize(
    ("where", "source", "caught"),
    [
        ("forge/job.py", "from judge_service.rubrics.routes import router\n", True),
        ("forge/job.py", "from judge_service.review.job_mining import mine_rubric\n", True),
        ("forge/job.py", "from judge_service.review import mining, store\n", False),
        ("runs/routes.py", "from judge_service.forge.cli import forge_app\n", True),
        ("cli.py", "from judge_service.forge.cli import forge_app\n", False),
    ],
)
def test_the_crossing_checker_flags_planted_imports(
    tmp_path: Path, where: str, source: str, caught: bool
) -> None:
    package = plant(tmp_path, where, source)
    found = crossings(package, {package: "judge_service"})
    assert bool(found) is caught, found


# --- no circles: between packages, and between modules ---------------------------------------


def package_of(module: str, package: Path = PACKAGE) -> str | None:
    """The node of the package graph ``module`` is in: the core, a feature, or a module at the
    package root (``wire``, ``domain``, ``contracts``, ``cli``), each its own node."""
    parts = module.split(".")
    if len(parts) < 2 or parts[0] != "judge_service":
        return None
    name = parts[1]
    return name if (package / name).is_dir() or (package / f"{name}.py").is_file() else None


def both_ways(package: Path = PACKAGE, names: dict[Path, str] = IMPORT_NAMES) -> list[str]:
    """Pairs of packages that import each other (any import, in functions too), each with one
    import of either way. Of two packages one sits below the other: core <- judging, traces,
    audit, rubrics <- scoring <- review <- forge, runs, world <- episodes."""
    edges: dict[tuple[str, str], str] = {}
    for path in python_files(package):
        home = package_of(module_name(path, names)[0], package)
        for module in imported_modules(path, names):
            other = package_of(module, package)
            if home is not None and other not in (None, home):
                edges.setdefault((home, other), f"{path.relative_to(package).as_posix()}: {module}")
    return sorted(
        f"{a} <-> {b} ({edges[a, b]}; {edges[b, a]})" for a, b in edges if a < b and (b, a) in edges
    )


def test_no_two_packages_import_each_other_both_ways() -> None:
    assert both_ways() == []


def strongly_connected(graph: dict[str, set[str]]) -> list[list[str]]:
    """The components of ``graph`` (node -> nodes it reaches) holding more than one node:
    Kosaraju's two passes, without recursion."""
    order: list[str] = []
    seen: set[str] = set()
    for start in sorted(graph):
        if start in seen:
            continue
        seen.add(start)
        stack = [(start, iter(sorted(graph[start])))]
        while stack:
            node, children = stack[-1]
            for child in children:
                if child not in seen:
                    seen.add(child)
                    stack.append((child, iter(sorted(graph[child]))))
                    break
            else:
                stack.pop()
                order.append(node)
    reverse: dict[str, set[str]] = {node: set() for node in graph}
    for node, targets in graph.items():
        for target in targets:
            reverse[target].add(node)
    found, assigned = [], set()
    for start in reversed(order):
        if start in assigned:
            continue
        component, todo = [], [start]
        assigned.add(start)
        while todo:
            node = todo.pop()
            component.append(node)
            for source in reverse[node] - assigned:
                assigned.add(source)
                todo.append(source)
        if len(component) > 1:
            found.append(sorted(component))
    return sorted(found)


def module_circles(
    package: Path = PACKAGE, names: dict[Path, str] = IMPORT_NAMES
) -> list[list[str]]:
    """The modules of the package that import each other in a circle, every import counted:
    at the top, in functions, under ``TYPE_CHECKING``."""
    modules = {module_name(path, names)[0]: path for path in python_files(package)}

    def resolved(imported: str) -> str | None:  # ``from a.b import c``: c may be a name
        while imported and imported not in modules:
            imported = imported.rpartition(".")[0]
        return imported or None

    graph = {
        name: {t for i in imported_modules(path, names) if (t := resolved(i)) not in (None, name)}
        for name, path in modules.items()
    }
    return strongly_connected(graph)  # type: ignore[arg-type]


def test_no_module_import_circle() -> None:
    assert module_circles() == []


def plant_all(root: Path, sources: dict[str, str]) -> Path:
    """:func:`plant` for each of several modules; returns the package's folder."""
    for where, source in sources.items():
        package = plant(root, where, source)
    return package


@pytest.mark.parametrize(
    ("sources", "caught"),
    [
        (
            {
                "rubrics/store.py": "from judge_service.review import store_review\n",
                "review/store_review.py": "from judge_service.rubrics import store\n",
            },
            True,
        ),
        (
            {
                "scoring/job.py": "def f():\n    from judge_service.review import mining\n",
                "review/mining.py": "from judge_service.scoring.store_plan import resolve\n",
            },
            True,
        ),
        (
            {
                "wire.py": "from judge_service.scoring import job\n",
                "scoring/job.py": "from judge_service import wire\n",
            },
            True,
        ),
        (
            {
                "review/mining.py": "from judge_service.rubrics import store\n",
                "rubrics/store.py": "from judge_service.core.storage import db\n",
            },
            False,
        ),
        (
            {
                "review/mining.py": "from judge_service.review import evidence\n",
                "review/evidence.py": "from judge_service.review import mining\n",
            },
            False,
        ),
    ],
)
def test_the_package_checker_flags_planted_imports(
    tmp_path: Path, sources: dict[str, str], caught: bool
) -> None:
    package = plant_all(tmp_path, sources)
    found = both_ways(package, {package: "judge_service"})
    assert bool(found) is caught, found


@pytest.mark.parametrize(
    ("sources", "caught"),
    [
        (
            {
                "episodes/script.py": "from judge_service.episodes.user import closest\n",
                "episodes/user.py": (
                    "from typing import TYPE_CHECKING\n"
                    "if TYPE_CHECKING:\n    from judge_service.episodes.script import Script\n"
                ),
            },
            True,
        ),
        (
            {
                "review/mining.py": "from . import evidence\n",
                "review/evidence.py": "def f():\n    import judge_service.review.decisions\n",
                "review/decisions.py": "from judge_service.review.mining import refs\n",
            },
            True,
        ),
        (
            {
                "episodes/script.py": "from judge_service.episodes.user_turns import closest\n",
                "episodes/user.py": "from judge_service.episodes import script, user_turns\n",
                "episodes/user_turns.py": "import re\n",
            },
            False,
        ),
    ],
)
def test_the_circle_checker_flags_planted_imports(
    tmp_path: Path, sources: dict[str, str], caught: bool
) -> None:
    package = plant_all(tmp_path, sources)
    found = module_circles(package, {package: "judge_service"})
    assert bool(found) is caught, found


# --- the core's shape -----------------------------------------------------------------------

#: What the core may import of the package besides itself: the modules under it (the wire,
#: the domain models, the plugin contracts) and the package's own ``__init__``.
BASE = {"judge_service", "judge_service.wire", "judge_service.domain", "judge_service.contracts"}
CORE = "judge_service.core"


def core_reaches(package: Path = PACKAGE, names: dict[Path, str] = IMPORT_NAMES) -> list[str]:
    """Each import of a core module of anything of the package outside the core and
    ``BASE``: the core knows no feature (the features declare themselves,
    ``core.features``), so the app, the worker and the CLI compose what is installed."""
    found = []
    for path in python_files(package / "core"):
        where = path.relative_to(package).as_posix()
        for module in imported_modules(path, names):
            inside = module == "judge_service" or any(
                of_package(module, base) for base in [*BASE - {"judge_service"}, CORE]
            )
            if of_package(module, "judge_service") and not inside:
                found.append(f"{where} imports {module}")
    return sorted(set(found))


def test_the_core_imports_no_feature() -> None:
    assert core_reaches() == []


@pytest.mark.parametrize(
    ("where", "source", "caught"),
    [
        ("core/storage/db.py", "from judge_service.scoring import store_batches\n", True),
        ("core/api/app.py", "def f():\n    from judge_service.runs import web_pages\n", True),
        ("core/api/app.py", "import judge_service.forge.routes\n", True),
        ("core/worker/x.py", "from judge_service import wire, domain\n", False),
        ("core/worker/x.py", "from judge_service.core.features import load\n", False),
        ("core/worker/x.py", "from judge_service import batching\n", True),
    ],
)
def test_the_core_checker_flags_planted_imports(
    tmp_path: Path, where: str, source: str, caught: bool
) -> None:
    package = plant(tmp_path, where, source)
    found = core_reaches(package, {package: "judge_service"})
    assert bool(found) is caught, found


def test_every_feature_declares_itself_and_the_app_the_worker_and_the_cli_find_it() -> None:
    """Each feature package has its declaration in the entry points, so the app, the worker
    and the CLI compose it; a feature left out would lose its routes, jobs and commands."""
    from judge_service.core.features import installed, job_kinds

    declared = {feature.name for feature in installed()}
    assert declared == set(FEATURES) - {"traces"}, declared
    assert set(job_kinds()) == {"forge", "mining", "world"}


#: The package root holds only the entry point and what code outside the service imports: the
#: wire (trainers), the plugin contracts and the domain models (plugins).
ROOT_MODULES = {"__init__.py", "cli.py", "wire.py", "contracts.py", "domain.py"}


def stray_modules(package: Path = PACKAGE) -> list[str]:
    """Modules at the package root that belong in the core or a feature, and folders that are
    neither the core nor a feature (``templates`` holds no code)."""
    found = [p.name for p in package.glob("*.py") if p.name not in ROOT_MODULES]
    for folder in package.iterdir():
        if folder.is_dir() and folder.name not in {"core", "templates", "__pycache__", *FEATURES}:
            found.append(f"{folder.name}/")
    return sorted(found)


def test_the_package_root_holds_only_the_core_the_features_and_the_public_modules() -> None:
    assert stray_modules() == []
    assert (PACKAGE / "core").is_dir()


@pytest.mark.parametrize(
    ("where", "source", "caught"),
    [
        ("metrics.py", "x = 1\n", True),
        ("cli.py", "x = 1\n", False),
        ("core/metrics.py", "x = 1\n", False),
        ("storage/db.py", "x = 1\n", True),
    ],
)
def test_the_root_checker_flags_planted_modules(
    tmp_path: Path, where: str, source: str, caught: bool
) -> None:
    package = plant(tmp_path, where, source)
    found = stray_modules(package)
    assert bool(found) is caught, found


# --- the tests mirror the packages ----------------------------------------------------------

#: Test folders that are not a package of judge_service: the project's rules and packaging,
#: the whole service end to end, the trainer bridge, the built-in plugins.
OTHER_TEST_FOLDERS = {"project", "service", "bridge", "plugins"}


def misplaced_tests(tests: Path, package: Path = PACKAGE) -> list[str]:
    """Test modules outside a folder named after the package they test (or one of
    ``OTHER_TEST_FOLDERS``)."""
    packages = {p.name for p in package.iterdir() if (p / "__init__.py").is_file()}
    found = []
    for path in tests.rglob("test_*.py"):
        where = path.relative_to(tests)
        if where.parts[0] == "data":  # fixtures: code under test in the detector corpora
            continue
        if len(where.parts) != 2 or where.parts[0] not in packages | OTHER_TEST_FOLDERS:
            found.append(where.as_posix())
    return sorted(found)


def test_the_tests_live_in_the_folder_of_what_they_test() -> None:
    assert misplaced_tests(PACKAGE.parent / "tests") == []


@pytest.mark.parametrize(
    ("where", "caught"),
    [("test_x.py", True), ("forge/test_x.py", False), ("nowhere/test_x.py", True),
     ("project/test_x.py", False), ("forge/deep/test_x.py", True)],
)  # fmt: skip
def test_the_test_layout_checker_flags_planted_files(
    tmp_path: Path, where: str, caught: bool
) -> None:
    package = plant(tmp_path, "forge/store.py", "x = 1\n")
    tests = tmp_path / "tests"
    (tests / where).parent.mkdir(parents=True, exist_ok=True)
    (tests / where).write_text("def test_x():\n    assert True\n")
    found = misplaced_tests(tests, package)
    assert bool(found) is caught, found
