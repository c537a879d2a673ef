"""The rules inside a feature package (DESIGN.md, "Layout"), read from the source with ast.

A feature package holds its pure modules, its storage (``store*.py``, ``tables.py``), its jobs
(``job*.py``), its HTTP routes (``routes*.py``, pages and cookies in ``web*.py``) and models
(``wire.py``), and its commands (``cli*.py``). The pure part imports no database, HTTP or
queue; only the jobs join the pure part, storage and models; routes never call a model.
Features move into packages one at a time: ``FEATURES`` lists those that have.
"""

from __future__ import annotations

from pathlib import Path

import pytest

from tests.test_meta import (
    IMPORT_NAMES,
    PACKAGE,
    imported_modules,
    module_name,
    of_package,
    python_files,
)

FEATURES = ["forge", "access", "runs", "judging", "rubrics", "audit", "scoring", "world", "traces"]

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

#: The core's modules that wire the features in: the app mounts their routes, the CLI their
#: commands, the queue their jobs.
WIRING = {"core/api/app.py", "cli.py", "core/worker/celery_app.py", "core/worker/inprocess.py"}


def feature_of(module: str) -> str | None:
    parts = module.split(".")
    if len(parts) > 1 and parts[0] == "judge_service" and parts[1] in FEATURES:
        return parts[1]
    return None


def crossings(package: Path = PACKAGE, names: dict[Path, str] = IMPORT_NAMES) -> list[str]:
    """Imports that break the rules between packages: a feature reaching into another
    feature's routes, pages, commands or jobs, and the core reaching
    into a feature's routes, pages, commands or jobs outside ``WIRING``."""
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
            elif home is None and part in ("routes", "cli", "job") and where not in WIRING:
                bad.append(f"{where} (core) imports {target} ({part})")
    return sorted(set(bad))


def test_features_reach_into_each_other_and_the_core_into_them_only_as_allowed() -> None:
    assert crossings() == []


@pytest.mark.parametrize(
    ("where", "source", "caught"),
    [
        ("forge/job.py", "from judge_service.rubrics.routes import router\n", True),
        ("forge/job.py", "from judge_service.rubrics.job_mining import mine_rubric\n", True),
        ("forge/job.py", "from judge_service.rubrics import mining, store\n", False),
        ("runs/routes.py", "from judge_service.forge.cli import forge_app\n", True),
        ("core/storage/db.py", "from judge_service.scoring.job import score_batch\n", True),
        ("core/storage/db.py", "from judge_service.scoring import store_batches\n", False),
        ("core/api/health.py", "from judge_service.runs import web_pages\n", True),
        ("core/api/app.py", "from judge_service.runs import web_pages\n", False),
        ("cli.py", "from judge_service.forge.cli import forge_app\n", False),
    ],
)
def test_the_crossing_checker_flags_planted_imports(
    tmp_path: Path, where: str, source: str, caught: bool
) -> None:
    package = plant(tmp_path, where, source)
    found = crossings(package, {package: "judge_service"})
    assert bool(found) is caught, found


# --- the core's shape -----------------------------------------------------------------------

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
