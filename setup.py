"""The packages to build, found in the tree rather than listed; the rest is in pyproject.toml.

pyproject.toml's ``packages.find`` cannot install a folder under another import name, and
plugins/, migrations/ and rubrics/ are installed as ``judge_service_plugins`` and so on (its
``package-dir``). So this finds them here: every folder under a source root is a package, data
folders (templates, the detector model) included, so that a new one cannot be forgotten.
"""

from __future__ import annotations

import tomllib
from pathlib import Path

from setuptools import find_namespace_packages, setup

ROOT = Path(__file__).resolve().parent
#: Source roots installed under their own name; pyproject.toml's package-dir names the others.
SAME_NAME = ("judge_service", "trainer_bridge")


def folders(where: Path, include: tuple[str, ...] = ("*",)) -> list[str]:
    """The dotted names of the folders under ``where`` (byte-code caches aside)."""
    found = find_namespace_packages(str(where), include=include)
    return [name for name in found if "__pycache__" not in name.split(".")]


def packages() -> list[str]:
    """Every package of the distribution, by its installed (dotted) name."""
    config = tomllib.loads((ROOT / "pyproject.toml").read_text(encoding="utf-8"))
    renamed: dict[str, str] = config["tool"]["setuptools"]["package-dir"]
    found = folders(ROOT, include=(*SAME_NAME, *(f"{name}.*" for name in SAME_NAME)))
    for name, folder in renamed.items():
        found += [name, *(f"{name}.{package}" for package in folders(ROOT / folder))]
    return sorted(found)


setup(packages=packages())
