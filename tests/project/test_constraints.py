"""constraints.txt, the versions scripts/setup.sh installs, agrees with pyproject.toml and with
this venv: a dependency added or moved without ``scripts/lock.sh`` fails here, not on the next
fresh clone."""

from __future__ import annotations

import importlib.metadata
import re
import tomllib
from pathlib import Path

from packaging.requirements import Requirement
from packaging.utils import canonicalize_name
from packaging.version import Version

ROOT = Path(__file__).resolve().parents[2]
#: The extras `bash scripts/setup.sh all` installs (not ``gpu``: vLLM is not on this machine).
INSTALLED_EXTRAS = ("local", "train", "dev")


def pins() -> dict[str, Version]:
    pinned = {}
    for line in (ROOT / "constraints.txt").read_text().splitlines():
        line = line.strip()
        if not line or line.startswith("#"):
            continue
        name, sep, version = line.partition("==")
        assert sep and " " not in version, f"constraints.txt: not name==version: {line!r}"
        pinned[canonicalize_name(name)] = Version(version)
    return pinned


def requirements() -> list[Requirement]:
    project = tomllib.loads((ROOT / "pyproject.toml").read_text())["project"]
    lines = list(project["dependencies"])
    for extra in INSTALLED_EXTRAS:
        lines += project["optional-dependencies"][extra]
    return [Requirement(line) for line in lines]


def test_every_direct_dependency_is_pinned_within_its_range() -> None:
    pinned = pins()
    assert len(pinned) > 50, "constraints.txt holds too few packages to be a lock"
    problems = []
    for requirement in requirements():
        name = canonicalize_name(requirement.name)
        if name not in pinned:
            problems.append(f"{requirement.name} is not pinned")
        elif not requirement.specifier.contains(pinned[name], prereleases=True):
            problems.append(f"{requirement.name}=={pinned[name]} is outside {requirement}")
    assert problems == [], "; ".join(problems) + " (run scripts/lock.sh, see README)"


def test_the_venv_has_the_pinned_versions_of_the_direct_dependencies() -> None:
    pinned = pins()
    differ = []
    for requirement in requirements():
        name = canonicalize_name(requirement.name)
        installed = Version(importlib.metadata.version(requirement.name))
        # a local label (torch's +cpu) is the build, not the version
        if name in pinned and Version(installed.public) != pinned[name]:
            differ.append(f"{requirement.name}: {installed} installed, {pinned[name]} pinned")
    assert differ == [], "; ".join(differ)


def test_a_package_the_docs_install_alone_is_one_the_first_command_lacks_and_is_pinned() -> None:
    """Issue 37: ``datasets`` (to load a forge export) is not in what ``bash scripts/setup.sh``
    installs (extra ``local``), so the README and docs/forge.md say how to add it, at its pin."""
    project = tomllib.loads((ROOT / "pyproject.toml").read_text())["project"]
    first = {
        canonicalize_name(Requirement(line).name)
        for line in project["dependencies"] + project["optional-dependencies"]["local"]
    }
    pinned = pins()
    for doc in ("README.md", "docs/forge.md"):
        said = re.findall(
            r"pip install -c constraints\.txt ([A-Za-z0-9_.-]+)", (ROOT / doc).read_text()
        )
        assert "datasets" in said, f"{doc} does not say how to install datasets"
        for name in said:
            assert canonicalize_name(name) in pinned, f"{doc}: {name} is not in constraints.txt"
            assert canonicalize_name(name) not in first, f"{doc}: the first command has {name}"
